// An in-process aggregator on 127.0.0.1:0 and helpers to drive rounds with
// TestWorkers: the real gRPC server and real sockets, in one process.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_SERVICE_SERVICE_FIXTURE_H_
#define ENTROGRAD_TESTS_AGGREGATOR_SERVICE_SERVICE_FIXTURE_H_

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/server/aggregator_server.h"
#include "aggregator/support/test_worker.h"
#include "entrograd/codec.h"
#include "gtest/gtest.h"

namespace entrograd::testing {

inline aggregator::AggregatorConfig TestConfig() {
  aggregator::AggregatorConfig config;
  config.listen = "127.0.0.1:0";
  config.metrics_listen = "";
  config.registry.round_timeout = absl::Seconds(20);
  return config;
}

// A sparse contribution: distinct ascending indices, heavy-tailed values.
struct SparseUpdate {
  uint64_t numel = 0;
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

inline SparseUpdate RandomSparse(uint64_t numel, size_t count,
                                 std::mt19937& rng) {
  SparseUpdate update;
  update.numel = numel;
  std::vector<uint32_t> all(numel);
  for (uint32_t i = 0; i < numel; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min<size_t>(count, numel));
  std::sort(all.begin(), all.end());
  update.indices = all;
  std::student_t_distribution<float> t(2.0f);
  for (size_t j = 0; j < all.size(); ++j) update.values.push_back(1e-3f * t(rng));
  return update;
}

inline EncodedPayload Encode(const SparseUpdate& update) {
  auto payload = EncodeSparse(update.numel, update.indices, update.values);
  EXPECT_TRUE(payload.ok()) << payload.status();
  return *payload;
}

// ALGORITHM.md step 6 written out plainly: dense float32 sums in rank order
// over the ranks that carry each index, divided by W.
inline std::vector<float> ReferenceMerge(const std::vector<SparseUpdate>& ranks) {
  const uint64_t numel = ranks[0].numel;
  std::vector<float> sum(numel, 0.0f);
  std::vector<bool> touched(numel, false);
  for (const SparseUpdate& rank : ranks) {
    for (size_t j = 0; j < rank.indices.size(); ++j) {
      const uint32_t i = rank.indices[j];
      sum[i] = touched[i] ? sum[i] + rank.values[j] : rank.values[j];
      touched[i] = true;
    }
  }
  const float world = static_cast<float>(ranks.size());
  for (uint64_t i = 0; i < numel; ++i) {
    if (touched[i]) sum[i] = sum[i] / world;
  }
  return sum;
}

class AggregatorServiceTest : public ::testing::Test {
 protected:
  // Streams are independent, so the order in which the server handles two
  // workers' messages is not the order the test sent them. Tests that need
  // an order wait for the server's state to show the first message.
  static bool WaitFor(const std::function<bool()>& condition) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!condition()) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return true;
  }

  void StartServer(const aggregator::AggregatorConfig& config = TestConfig()) {
    auto server = aggregator::AggregatorServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                               grpc::InsecureChannelCredentials());
  }
  // Opens a stream and joins; fails the test on error.
  std::unique_ptr<TestWorker> Joined(const JoinSpec& spec) {
    auto worker = std::make_unique<TestWorker>(Channel());
    auto ack = worker->Join(MakeJoin(spec));
    EXPECT_TRUE(ack.ok()) << ack.status();
    return worker;
  }

  std::unique_ptr<aggregator::AggregatorServer> server_;
};

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_SERVICE_SERVICE_FIXTURE_H_
