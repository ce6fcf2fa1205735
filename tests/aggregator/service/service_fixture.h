// An in-process aggregator on 127.0.0.1:0 and helpers to drive rounds with
// TestWorkers: the real gRPC server and real sockets, in one process. Random
// contributions and the reference merge come from aggregator/support.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_SERVICE_SERVICE_FIXTURE_H_
#define ENTROGRAD_TESTS_AGGREGATOR_SERVICE_SERVICE_FIXTURE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "aggregator/server/aggregator_server.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/reference_merge.h"
#include "aggregator/support/sparse_vector.h"
#include "aggregator/support/test_worker.h"
#include "gtest/gtest.h"

namespace entrograd::testing {

inline aggregator::AggregatorConfig TestConfig() {
  aggregator::AggregatorConfig config;
  config.listen = "127.0.0.1:0";
  config.metrics_listen = "";
  config.registry.round_timeout = absl::Seconds(20);
  return config;
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
