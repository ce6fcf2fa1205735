// Shared pieces of the aggregator process tests: channels, health checks,
// /metrics scraping and parsing, and the bitwise comparison of the binary's
// merged updates with the reference merge. The random contributions and the
// reference merge itself are aggregator/support's, included here for every
// process test.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_PROCESS_PROCESS_TEST_UTIL_H_
#define ENTROGRAD_TESTS_AGGREGATOR_PROCESS_PROCESS_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/reference_merge.h"
#include "aggregator/support/sparse_vector.h"
#include "entrograd/v1/aggregator.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/grpcpp.h"

namespace entrograd::testing {

// An insecure channel to "127.0.0.1:<port>".
std::shared_ptr<grpc::Channel> LoopbackChannel(int port);

// grpc.health.v1.Health/Check of `service` ("" for the server), bounded by
// `timeout`.
absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
            const std::string& service,
            absl::Duration timeout = absl::Seconds(5));

// GET http://127.0.0.1:<port>/metrics; non-200 is an error.
absl::StatusOr<std::string> ScrapeMetrics(int port);

// The value of the sample whose name-and-labels part is exactly `series`
// (e.g. `entrograd_rounds_total{outcome="completed"}`), if present.
std::optional<double> SampleValue(const std::string& exposition,
                                  const std::string& series);

// Compares a received MergedLayer with `expected` bit for bit (indices and
// the float bits of every value; a dense payload is compared element-wise
// against `expected` scattered into +0.0). Returns a failure message, or ""
// when equal.
std::string CompareMerged(const v1::MergedLayer& merged,
                          const SparseVector& expected);

// "MergedLayer{...}" / "RoundError{...}" / status, for failure messages.
std::string Describe(const absl::StatusOr<v1::AggregatorMessage>& message);

// Polls /metrics on `metrics_port` until `series` has value `value`, up to
// `timeout`. Returns the last exposition scraped, or an error naming the
// last value seen.
absl::StatusOr<std::string> AwaitSample(int metrics_port,
                                        const std::string& series, double value,
                                        absl::Duration timeout = absl::Seconds(5));

// One round through a running aggregator: ranks 0..W-1 of `job_id` (W =
// ranks.size()) each open a stream on `channel` with `token`, Join with one
// layer of ranks[0].numel elements, send ranks[r] for step 0, and must each
// receive the MergedLayer, equal bitwise to ReferenceMerge(ranks) and the
// same bytes for every rank. Failures are reported with ADD_FAILURE.
void ExpectRoundCompletes(const std::shared_ptr<grpc::Channel>& channel,
                          const std::optional<std::string>& token,
                          const std::string& job_id,
                          const std::vector<SparseVector>& ranks);

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_PROCESS_PROCESS_TEST_UTIL_H_
