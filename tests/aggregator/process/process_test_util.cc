#include "aggregator/process/process_test_util.h"

#include <cstdlib>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "aggregator/metrics/http_get.h"
#include "aggregator/support/test_worker.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "entrograd/wire/grpc_status.h"

namespace entrograd::testing {

std::shared_ptr<grpc::Channel> LoopbackChannel(int port) {
  return grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                             grpc::InsecureChannelCredentials());
}

absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
            const std::string& service, absl::Duration timeout) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.status();
}

absl::StatusOr<std::string> ScrapeMetrics(int port) {
  absl::StatusOr<aggregator::testing::HttpResponse> response =
      aggregator::testing::HttpGet("127.0.0.1", port, "/metrics",
                                   std::chrono::seconds(5));
  if (!response.ok()) return response.status();
  if (response->status_code != 200) {
    return absl::InternalError(
        absl::StrCat("GET /metrics: HTTP ", response->status_code, "\n",
                     response->headers, "\n", response->body));
  }
  return response->body;
}

std::optional<double> SampleValue(const std::string& exposition,
                                  const std::string& series) {
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    // A sample may carry a timestamp after the value; ours do not, but be
    // lenient: the series is everything before the first space outside {}.
    const size_t brace_end = line.find('}');
    const size_t series_end =
        line.find(' ', brace_end == absl::string_view::npos ? 0 : brace_end);
    if (line.substr(0, series_end) != series) continue;
    std::vector<absl::string_view> rest = absl::StrSplit(
        line.substr(series_end + 1), ' ', absl::SkipEmpty());
    if (rest.empty()) continue;
    char* end = nullptr;
    const std::string value(rest[0]);
    const double parsed = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    return parsed;
  }
  return std::nullopt;
}

std::string CompareMerged(const v1::MergedLayer& merged,
                          const SparseVector& expected) {
  absl::StatusOr<DecodedPayload> decoded = DecodeMerged(merged);
  if (!decoded.ok()) {
    return absl::StrCat("the merged payload does not decode: ",
                        decoded.status().ToString());
  }
  if (decoded->numel != expected.numel) {
    return absl::StrCat("numel ", decoded->numel, ", expected ",
                        expected.numel);
  }
  if (decoded->dense) {
    std::vector<float> want(expected.numel, 0.0f);
    for (size_t j = 0; j < expected.indices.size(); ++j) {
      want[expected.indices[j]] = expected.values[j];
    }
    for (size_t i = 0; i < want.size(); ++i) {
      if (absl::bit_cast<uint32_t>(decoded->values[i]) !=
          absl::bit_cast<uint32_t>(want[i])) {
        return absl::StrCat(
            "dense element ", i, " is ", decoded->values[i], " (bits ",
            absl::Hex(absl::bit_cast<uint32_t>(decoded->values[i])),
            "), expected ", want[i], " (bits ",
            absl::Hex(absl::bit_cast<uint32_t>(want[i])), ")");
      }
    }
    return "";
  }
  if (decoded->indices != expected.indices) {
    return absl::StrCat("merged carries ", decoded->indices.size(),
                        " indices, expected ", expected.indices.size(),
                        " (the index sets differ)");
  }
  for (size_t j = 0; j < expected.values.size(); ++j) {
    if (absl::bit_cast<uint32_t>(decoded->values[j]) !=
        absl::bit_cast<uint32_t>(expected.values[j])) {
      return absl::StrCat(
          "value at index ", expected.indices[j], " is ", decoded->values[j],
          " (bits ", absl::Hex(absl::bit_cast<uint32_t>(decoded->values[j])),
          "), expected ", expected.values[j], " (bits ",
          absl::Hex(absl::bit_cast<uint32_t>(expected.values[j])), ")");
    }
  }
  return "";
}

std::string Describe(const absl::StatusOr<v1::AggregatorMessage>& message) {
  if (!message.ok()) return absl::StrCat("stream ended: ", message.status().ToString());
  if (message->has_merged_layer()) {
    const v1::MergedLayer& merged = message->merged_layer();
    return absl::StrCat("MergedLayer{step ", merged.step(), ", layer ",
                        merged.layer_index(), ", contributors ",
                        merged.contributors(), ", count ",
                        merged.payload().count(), "}");
  }
  if (message->has_round_error()) {
    const v1::RoundError& error = message->round_error();
    return absl::StrCat("RoundError{step ", error.step(), ", layer ",
                        error.layer_index(), ", code ", error.code(), ", \"",
                        error.message(), "\"}");
  }
  return message->ShortDebugString();
}

absl::StatusOr<std::string> AwaitSample(int metrics_port,
                                        const std::string& series, double value,
                                        absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string last_seen = "no scrape";
  while (true) {
    absl::StatusOr<std::string> text = ScrapeMetrics(metrics_port);
    if (text.ok()) {
      std::optional<double> got = SampleValue(*text, series);
      if (got.has_value() && *got == value) return text;
      last_seen = got.has_value() ? absl::StrCat(*got) : "absent";
    } else {
      last_seen = text.status().ToString();
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(series, " did not reach ", value, " within ",
                       absl::FormatDuration(timeout), "; last: ", last_seen));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void ExpectRoundCompletes(const std::shared_ptr<grpc::Channel>& channel,
                          const std::optional<std::string>& token,
                          const std::string& job_id,
                          const std::vector<SparseVector>& ranks) {
  const uint32_t world_size = static_cast<uint32_t>(ranks.size());
  std::vector<std::unique_ptr<TestWorker>> workers;
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    workers.push_back(
        std::make_unique<TestWorker>(channel, token, absl::Seconds(20)));
    JoinSpec spec;
    spec.job_id = job_id;
    spec.rank = rank;
    spec.world_size = world_size;
    spec.layers = {{"layer0", ranks[rank].numel}};
    absl::StatusOr<v1::JoinAck> ack = workers[rank]->Join(MakeJoin(spec));
    if (!ack.ok()) {
      ADD_FAILURE() << "rank " << rank << " of " << job_id
                    << " could not join: " << ack.status();
      return;
    }
  }
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    if (!workers[rank]->SendUpdate(MakeUpdate(0, 0, EncodeOrDie(ranks[rank])))) {
      ADD_FAILURE() << "rank " << rank << ": the stream broke on send";
    }
  }
  const SparseVector expected = ReferenceMerge(ranks);
  std::string first_payload;
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    absl::StatusOr<v1::AggregatorMessage> message = workers[rank]->Read();
    if (!message.ok() || !message->has_merged_layer()) {
      ADD_FAILURE() << "rank " << rank << " expected a MergedLayer, got "
                    << Describe(message);
      continue;
    }
    const v1::MergedLayer& merged = message->merged_layer();
    EXPECT_EQ(merged.step(), 0) << "rank " << rank;
    EXPECT_EQ(merged.layer_index(), 0u) << "rank " << rank;
    EXPECT_EQ(merged.contributors(), world_size) << "rank " << rank;
    const std::string mismatch = CompareMerged(merged, expected);
    EXPECT_EQ(mismatch, "") << "rank " << rank << " of " << job_id;
    const std::string bytes = merged.payload().SerializeAsString();
    if (rank == 0) {
      first_payload = bytes;
    } else {
      EXPECT_EQ(bytes, first_payload)
          << "rank " << rank << " got other merged bytes than rank 0";
    }
  }
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    absl::Status finished = workers[rank]->Finish();
    EXPECT_TRUE(finished.ok()) << "rank " << rank << " Finish: " << finished;
  }
}

}  // namespace entrograd::testing
