// entrograd-worker's flags: every default is WorkerConfig's, whose
// compression and client defaults are the library's own (the worker once
// defaulted --dense_below to 1000 while the library documents 1024), and
// every flag reaches the config.
#include "workers/fashion_mnist/worker_flags.h"

#include <string>
#include <vector>

#include "entrograd/client.h"
#include "entrograd/compression_options.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::workers {
namespace {

absl::StatusOr<WorkerConfig> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "entrograd-worker");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return WorkerConfigFromFlags(static_cast<int>(argv.size()), argv.data());
}

// ctest runs every test in a process of its own, so each parses the flags
// from their defaults.
TEST(WorkerFlagsTest, DefaultsAreTheOptionsStructs) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config, Parse({}));
  const CompressionOptions compression;
  EXPECT_EQ(config.policy, compression.policy);
  EXPECT_EQ(config.rho, compression.rho);
  EXPECT_EQ(config.threshold, compression.threshold);
  EXPECT_EQ(config.min_keep_ratio, compression.min_keep_ratio);
  EXPECT_EQ(config.entropy_of, compression.entropy_of);
  EXPECT_EQ(config.share_hold_steps, compression.share_hold_steps);
  EXPECT_EQ(config.merged_keep_factor, 0.0);  // the union, as specified
  EXPECT_FALSE(config.accumulate_in_update_space);  // as specified
  EXPECT_EQ(config.intervals, compression.intervals);
  EXPECT_EQ(config.dense_below, compression.dense_below);
  EXPECT_EQ(config.dense_below, 1024);
  EXPECT_EQ(config.warmup_steps, compression.warmup_steps);
  EXPECT_EQ(config.lr_schedule, LrSchedule::kConstant);
  const ClientOptions client;
  EXPECT_EQ(config.merge_timeout, client.merge_timeout);
  EXPECT_EQ(config.partition_bytes, client.partition_bytes);
  EXPECT_EQ(config.value_type, client.value_type);
  EXPECT_EQ(config.gap_range_indices, client.gap_range_indices);
  EXPECT_TRUE(config.gap_range_indices);

  const WorkerConfig defaults;
  EXPECT_EQ(config.shards, defaults.shards);
  EXPECT_EQ(config.job_id, defaults.job_id);
  EXPECT_EQ(config.world_size, defaults.world_size);
  EXPECT_EQ(config.rank, defaults.rank);
  EXPECT_EQ(config.token, defaults.token);
  EXPECT_EQ(config.tls_ca_file, defaults.tls_ca_file);
  EXPECT_EQ(config.tls_cert_file, defaults.tls_cert_file);
  EXPECT_EQ(config.tls_key_file, defaults.tls_key_file);
  EXPECT_EQ(config.epochs, defaults.epochs);
  EXPECT_EQ(config.max_steps, defaults.max_steps);
  EXPECT_EQ(config.batch_size, defaults.batch_size);
  EXPECT_EQ(config.learning_rate, defaults.learning_rate);
  EXPECT_EQ(config.momentum, defaults.momentum);
  EXPECT_EQ(config.seed, defaults.seed);
  EXPECT_EQ(config.model, defaults.model);
  EXPECT_EQ(config.eval_every, defaults.eval_every);
  EXPECT_EQ(config.eval_each_epoch, defaults.eval_each_epoch);
  EXPECT_TRUE(config.eval_each_epoch);
  EXPECT_EQ(config.eval_samples, defaults.eval_samples);
  EXPECT_EQ(config.data_dir, defaults.data_dir);
  EXPECT_EQ(config.out_dir, defaults.out_dir);
  EXPECT_EQ(config.checkpoint_interval, defaults.checkpoint_interval);
  EXPECT_EQ(config.resume, defaults.resume);
  EXPECT_EQ(config.validation, defaults.validation);
  EXPECT_EQ(config.threads, defaults.threads);
  EXPECT_EQ(config.metrics_listen, defaults.metrics_listen);
  EXPECT_EQ(config.per_layer_metrics, defaults.per_layer_metrics);
}

TEST(WorkerFlagsTest, ThresholdReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      const WorkerConfig config,
      Parse({"--policy=threshold", "--threshold=2.5", "--dense_below=10"}));
  EXPECT_EQ(config.policy, KeepPolicy::kThreshold);
  EXPECT_EQ(config.threshold, 2.5);  // a magnitude: may exceed 1
  EXPECT_EQ(config.dense_below, 10);
}

TEST(WorkerFlagsTest, EvalEachEpochCanBeTurnedOff) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--eval_each_epoch=false"}));
  EXPECT_FALSE(config.eval_each_epoch);
}

TEST(WorkerFlagsTest, MinKeepRatioReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--min_keep_ratio=0.0005"}));
  EXPECT_EQ(config.min_keep_ratio, 0.0005);
}

TEST(WorkerFlagsTest, EntropyOfAccumulatedReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--entropy_of=accumulated"}));
  EXPECT_EQ(config.entropy_of, EntropySource::kAccumulated);
}

TEST(WorkerFlagsTest, UnknownEntropySourceIsNamed) {
  EXPECT_THAT(
      Parse({"--entropy_of=weights"}),
      testing::StatusIs(absl::StatusCode::kInvalidArgument,
                        "--entropy_of: unknown entropy source \"weights\""));
}

TEST(WorkerFlagsTest, LrScheduleReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--lr_schedule=cosine"}));
  EXPECT_EQ(config.lr_schedule, LrSchedule::kCosine);
}

TEST(WorkerFlagsTest, UnknownLrScheduleIsNamed) {
  EXPECT_THAT(Parse({"--lr_schedule=linear"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "--lr_schedule: unknown learning-rate "
                                "schedule \"linear\"; expected constant or "
                                "cosine"));
}

TEST(WorkerFlagsTest, ShareHoldStepsReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--share_hold_steps=20"}));
  EXPECT_EQ(config.share_hold_steps, 20);
}

TEST(WorkerFlagsTest, ShareHoldStepsBelowOneIsNamed) {
  EXPECT_THAT(Parse({"--share_hold_steps=0"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "--share_hold_steps: expected >= 1"));
}

TEST(WorkerFlagsTest, ShareHoldStepsUnderTopKIsNamed) {
  EXPECT_THAT(Parse({"--policy=topk", "--share_hold_steps=5"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "--policy=topk takes only 1"));
}

TEST(WorkerFlagsTest, MergedKeepFactorReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--merged_keep_factor=1.5"}));
  EXPECT_EQ(config.merged_keep_factor, 1.5);
}

TEST(WorkerFlagsTest, MergedKeepFactorBelowOneIsNamed) {
  EXPECT_THAT(Parse({"--merged_keep_factor=0.5"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "--merged_keep_factor: 0.5 is neither 0"));
}

TEST(WorkerFlagsTest, AccumulateInUpdateSpaceReachesTheConfig) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      const WorkerConfig config,
      Parse({"--accumulate_in_update_space", "--lr_schedule=cosine"}));
  EXPECT_TRUE(config.accumulate_in_update_space);
}

TEST(WorkerFlagsTest, GapRangeIndicesCanBeTurnedOff) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const WorkerConfig config,
                                 Parse({"--gap_range_indices=false"}));
  EXPECT_FALSE(config.gap_range_indices);
}

// At momentum 0 the torch optimizer applies the merged gradient; there is
// no momentum-corrected state to keep in update units.
TEST(WorkerFlagsTest, AccumulateInUpdateSpaceWithoutMomentumIsNamed) {
  EXPECT_THAT(Parse({"--accumulate_in_update_space", "--momentum=0"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "--accumulate_in_update_space: needs "
                                "--momentum > 0"));
}

TEST(WorkerFlagsTest, MinKeepRatioAboveOneIsNamed) {
  EXPECT_THAT(Parse({"--min_keep_ratio=1.5"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "--min_keep_ratio"));
}

TEST(WorkerFlagsTest, RhoAboveOneIsNamedUnderThresholdToo) {
  EXPECT_THAT(Parse({"--policy=threshold", "--rho=2.5"}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, "--rho"));
}

TEST(WorkerFlagsTest, NegativeThresholdIsNamed) {
  EXPECT_THAT(
      Parse({"--threshold=-1"}),
      testing::StatusIs(absl::StatusCode::kInvalidArgument, "--threshold"));
}

}  // namespace
}  // namespace entrograd::workers
