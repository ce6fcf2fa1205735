// Reads a shard's Prometheus text exposition over HTTP, as Prometheus
// would: a blocking HTTP/1.0 GET of /metrics on 127.0.0.1, and the value of
// one series in it.
//
// Thread safety: thread-safe.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_METRICS_SCRAPE_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_METRICS_SCRAPE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace entrograd::bench {

// The body of GET http://127.0.0.1:<port>/metrics. UNAVAILABLE when the
// connection fails or `timeout` passes; INTERNAL for a non-200 answer.
absl::StatusOr<std::string> ScrapeMetrics(int port,
                                          absl::Duration timeout = absl::Seconds(5));

// The value of the sample whose name and labels are exactly `series`, e.g.
// `entrograd_rounds_total{outcome="completed"}`; nullopt when absent.
std::optional<double> SampleValue(const std::string& exposition,
                                  const std::string& series);

// The sum of every sample of `metric` whatever its labels (e.g. all
// reasons of entrograd_rejects_total); 0 when there is none.
double SumSamples(const std::string& exposition, const std::string& metric);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_METRICS_SCRAPE_H_
