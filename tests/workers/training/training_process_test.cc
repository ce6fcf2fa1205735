// The training job end to end, as processes: the real aggregator binary and
// real entrograd-worker ranks training the Fashion-MNIST CNN over gRPC on
// the loopback. Replicas stay bitwise identical after every step; an
// aggregator killed with SIGKILL and restarted changes not one bit of the
// final weights; a killed worker makes the others fail with a clear error
// within the round timeout; a run resumed from a checkpoint ends where an
// uninterrupted run ends.
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/process/aggregator_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/worker_output.h"

#ifndef ENTROGRAD_WORKER_PATH
#error "ENTROGRAD_WORKER_PATH must name the entrograd-worker binary"
#endif

namespace entrograd::testing {
namespace {

constexpr char kDataDir[] = "/usr/share/datasets/fashion-mnist";

// Every "step" event's params_hash of one rank's stdout, by step.
std::map<int64_t, std::string> StepHashes(const std::string& output) {
  std::map<int64_t, std::string> hashes;
  for (const run_format::StepEvent& step :
       WorkerEventsOf<run_format::StepEvent>(output)) {
    hashes[step.step] = step.params_hash;
  }
  return hashes;
}

std::string DoneHash(const std::string& output) { return DoneHashOf(output); }

class TrainingProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kDataDir) + "/train-images-idx3-ubyte.gz")) {
      GTEST_SKIP() << "Fashion-MNIST is not installed in " << kDataDir
                   << " (apt-get install dataset-fashion-mnist)";
    }
  }

  // Starts `world` ranks against `address` with common flags plus `extra`.
  std::vector<std::unique_ptr<ChildProcess>> StartWorkers(
      const std::string& address, int world, int max_steps,
      const std::string& out_dir, const std::vector<std::string>& extra = {}) {
    std::vector<std::unique_ptr<ChildProcess>> workers;
    for (int rank = 0; rank < world; ++rank) {
      std::vector<std::string> args = {
          "--shards=" + address,
          absl::StrCat("--world_size=", world),
          absl::StrCat("--rank=", rank),
          "--job_id=test-job",
          "--policy=entropy",
          "--rho=0.01",
          "--batch_size=32",
          "--lr=0.05",
          absl::StrCat("--max_steps=", max_steps),
          absl::StrCat("--out=", out_dir, "/rank", rank),
          "--merge_timeout=60s",
          // Rank 0's evaluation is not under test here: a slice is enough.
          "--eval_samples=500",
      };
      args.insert(args.end(), extra.begin(), extra.end());
      auto worker = ChildProcess::Spawn(ENTROGRAD_WORKER_PATH, args);
      EXPECT_TRUE(worker.ok()) << worker.status();
      if (worker.ok()) workers.push_back(std::move(*worker));
    }
    return workers;
  }

  // Waits for every worker to exit 0 and returns their stdout.
  std::vector<std::string> WaitAll(std::vector<std::unique_ptr<ChildProcess>>& workers) {
    std::vector<std::string> outputs;
    for (size_t rank = 0; rank < workers.size(); ++rank) {
      auto status = workers[rank]->Wait(absl::Seconds(300));
      EXPECT_TRUE(status.ok()) << "rank " << rank << ": " << status.status();
      if (status.ok()) {
        EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
            << "rank " << rank << " " << DescribeWaitStatus(*status) << "\n"
            << workers[rank]->Stderr();
      }
      outputs.push_back(workers[rank]->Stdout());
    }
    return outputs;
  }

  // An uninterrupted run's final parameter hash.
  std::string UninterruptedHash(int world, int max_steps) {
    ScopedTempDir out;
    auto aggregator = AggregatorProcess::Start({"--round_timeout=60s"});
    EXPECT_TRUE(aggregator.ok()) << aggregator.status();
    if (!aggregator.ok()) return "";
    auto workers = StartWorkers((*aggregator)->address(), world, max_steps, out.path());
    std::vector<std::string> outputs = WaitAll(workers);
    const std::string hash = DoneHash(outputs[0]);
    for (const std::string& output : outputs) EXPECT_EQ(DoneHash(output), hash);
    return hash;
  }
};

TEST_F(TrainingProcessTest, ReplicasAreBitwiseIdenticalAfterEveryStep) {
  ScopedTempDir out;
  auto aggregator = AggregatorProcess::Start({"--round_timeout=60s"});
  ASSERT_TRUE(aggregator.ok()) << aggregator.status();
  constexpr int kWorld = 3;
  constexpr int kSteps = 12;
  auto workers = StartWorkers((*aggregator)->address(), kWorld, kSteps, out.path());
  std::vector<std::string> outputs = WaitAll(workers);
  std::vector<std::map<int64_t, std::string>> hashes;
  for (const std::string& output : outputs) hashes.push_back(StepHashes(output));
  ASSERT_EQ(hashes[0].size(), static_cast<size_t>(kSteps)) << outputs[0];
  for (int rank = 1; rank < kWorld; ++rank) {
    EXPECT_EQ(hashes[rank], hashes[0]) << "rank " << rank << " diverged";
  }
  // And training moves the weights every step.
  EXPECT_NE(hashes[0].at(0), hashes[0].at(kSteps - 1));
}

TEST_F(TrainingProcessTest, AggregatorKilledAndRestartedChangesNoBit) {
  constexpr int kWorld = 2;
  constexpr int kSteps = 24;
  const std::string expected = UninterruptedHash(kWorld, kSteps);
  ASSERT_FALSE(expected.empty());

  ScopedTempDir out;
  auto first = AggregatorProcess::Start({"--round_timeout=60s"});
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->port();
  auto workers = StartWorkers((*first)->address(), kWorld, kSteps, out.path());
  // Kill the shard in the middle of the run, while rounds are in flight.
  ASSERT_TRUE(workers[0]->WaitForStdoutLine("\"step\":8,", absl::Seconds(120)).ok())
      << workers[0]->Stdout() << workers[0]->Stderr();
  (*first)->process().Kill();
  first->reset();
  absl::SleepFor(absl::Milliseconds(300));
  auto second = AggregatorProcess::Start(
      {absl::StrCat("--listen=127.0.0.1:", port), "--round_timeout=60s"});
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<std::string> outputs = WaitAll(workers);
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_EQ(DoneHash(outputs[rank]), expected) << "rank " << rank;
    const std::optional<run_format::DoneEvent> done =
        DoneEventOf(outputs[rank]);
    ASSERT_TRUE(done.has_value()) << "rank " << rank << " did not finish";
    EXPECT_GT(done->reconnects, 0)
        << "rank " << rank << " never reconnected: the kill missed the run";
  }
}

TEST_F(TrainingProcessTest, KilledWorkerFailsTheOthersWithinTheRoundTimeout) {
  ScopedTempDir out;
  auto aggregator = AggregatorProcess::Start({"--round_timeout=2s"});
  ASSERT_TRUE(aggregator.ok()) << aggregator.status();
  auto workers = StartWorkers((*aggregator)->address(), 3, 1000, out.path());
  ASSERT_TRUE(workers[2]->WaitForStdoutLine("\"step\":3,", absl::Seconds(120)).ok());
  workers[2]->Kill();
  const absl::Time killed = absl::Now();
  for (int rank = 0; rank < 2; ++rank) {
    auto status = workers[rank]->Wait(absl::Seconds(60));
    ASSERT_TRUE(status.ok()) << "rank " << rank << " hangs: " << status.status();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
        << DescribeWaitStatus(*status);
    EXPECT_THAT(workers[rank]->Stdout(), ::testing::HasSubstr("\"event\":\"error\""));
    EXPECT_THAT(workers[rank]->Stdout(), ::testing::HasSubstr("rank(s) 2"));
  }
  EXPECT_LT(absl::Now() - killed, absl::Seconds(30));
}

TEST_F(TrainingProcessTest, ResumedRunEndsWhereAnUninterruptedRunEnds) {
  constexpr int kWorld = 2;
  const std::string expected = UninterruptedHash(kWorld, 20);
  ASSERT_FALSE(expected.empty());
  ScopedTempDir out;
  {
    auto aggregator = AggregatorProcess::Start({"--round_timeout=60s"});
    ASSERT_TRUE(aggregator.ok());
    auto workers = StartWorkers((*aggregator)->address(), kWorld, 10, out.path(),
                                {"--checkpoint_interval=5"});
    WaitAll(workers);
  }
  // A new aggregator, the same output directories: the ranks resume at 10.
  auto aggregator = AggregatorProcess::Start({"--round_timeout=60s"});
  ASSERT_TRUE(aggregator.ok());
  auto workers = StartWorkers((*aggregator)->address(), kWorld, 20, out.path(),
                              {"--checkpoint_interval=5"});
  std::vector<std::string> outputs = WaitAll(workers);
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_THAT(outputs[rank], ::testing::HasSubstr("\"first_step\":10"));
    EXPECT_EQ(DoneHash(outputs[rank]), expected) << "rank " << rank;
  }
}

}  // namespace
}  // namespace entrograd::testing
