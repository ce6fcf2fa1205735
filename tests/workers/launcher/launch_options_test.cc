#include "workers/launcher/launch_options.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/child_commands.h"

namespace entrograd::launcher {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;

TEST(LaunchOptionsTest, DefaultsAreValid) {
  ENTROGRAD_EXPECT_OK(ValidateLaunchOptions(LaunchOptions()));
}

struct BadOption {
  const char* flag;
  void (*apply)(LaunchOptions&);
};

TEST(LaunchOptionsTest, ErrorsNameTheFlag) {
  const std::vector<BadOption> cases = {
      {"--workers", [](LaunchOptions& o) { o.workers = 0; }},
      {"--workers", [](LaunchOptions& o) { o.workers = 1000; }},
      {"--shards", [](LaunchOptions& o) { o.shards = 0; }},
      {"--shards", [](LaunchOptions& o) { o.shards = 65; }},
      {"--validation", [](LaunchOptions& o) { o.validation = -1; }},
      {"--validation", [](LaunchOptions& o) { o.validation = 60000; }},
      {"--warmup_steps", [](LaunchOptions& o) { o.warmup_steps = -1; }},
      {"--value_type", [](LaunchOptions& o) { o.value_type = "fp8"; }},
      {"--value_type", [](LaunchOptions& o) { o.value_type = "E5M2"; }},
      {"--dense_below", [](LaunchOptions& o) { o.dense_below = -1; }},
      {"--merged_keep_factor",
       [](LaunchOptions& o) { o.merged_keep_factor = 0.5; }},
      {"--merged_keep_factor",
       [](LaunchOptions& o) { o.merged_keep_factor = std::nan(""); }},
      {"--policy", [](LaunchOptions& o) { o.policy = "random"; }},
      {"--rho", [](LaunchOptions& o) { o.rho = 0; }},
      {"--rho", [](LaunchOptions& o) { o.rho = 1.5; }},
      {"--rho", [](LaunchOptions& o) { o.rho = std::nan(""); }},
      {"--threshold", [](LaunchOptions& o) { o.threshold = -0.5; }},
      {"--threshold", [](LaunchOptions& o) { o.threshold = std::nan(""); }},
      {"--threshold", [](LaunchOptions& o) { o.threshold = INFINITY; }},
      {"--epochs", [](LaunchOptions& o) { o.epochs = 0; }},
      {"--max_steps", [](LaunchOptions& o) { o.max_steps = -1; }},
      {"--batch_size", [](LaunchOptions& o) { o.batch_size = 0; }},
      {"--lr", [](LaunchOptions& o) { o.lr = -0.1; }},
      {"--lr_schedule", [](LaunchOptions& o) { o.lr_schedule = "step"; }},
      {"--momentum", [](LaunchOptions& o) { o.momentum = 1; }},
      {"--out", [](LaunchOptions& o) { o.out_dir = ""; }},
      {"--model", [](LaunchOptions& o) { o.model = "resnet50"; }},
      {"--eval_every", [](LaunchOptions& o) { o.eval_every = -1; }},
      {"--eval_samples", [](LaunchOptions& o) { o.eval_samples = -1; }},
      {"--link", [](LaunchOptions& o) { o.link = "fast"; }},
      {"--link", [](LaunchOptions& o) { o.link = "-1gbit"; }},
      {"--timeout", [](LaunchOptions& o) { o.timeout = absl::Seconds(-1); }},
      {"--round_timeout",
       [](LaunchOptions& o) { o.round_timeout = absl::ZeroDuration(); }},
      {"--checkpoint_interval",
       [](LaunchOptions& o) { o.checkpoint_interval = -5; }},
      {"--data_dir", [](LaunchOptions& o) { o.data_dir = ""; }},
      {"--job_id", [](LaunchOptions& o) { o.job_id = "bad id/with slash"; }},
      {"--aggregator_start_timeout",
       [](LaunchOptions& o) {
         o.aggregator_start_timeout = absl::Seconds(-1);
       }},
  };
  for (const BadOption& bad : cases) {
    LaunchOptions options;
    bad.apply(options);
    EXPECT_THAT(ValidateLaunchOptions(options),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(bad.flag, " must be")))
        << bad.flag;
  }
}

TEST(LaunchOptionsTest, CompressionDefaultsAreTheLibrarys) {
  // The worker takes its defaults from CompressionOptions too: a run with
  // default flags compresses as the library documents.
  const LaunchOptions options;
  const CompressionOptions library;
  EXPECT_EQ(options.policy, KeepPolicyName(library.policy));
  EXPECT_EQ(options.rho, library.rho);
  EXPECT_EQ(options.threshold, library.threshold);
  EXPECT_EQ(options.warmup_steps, library.warmup_steps);
  EXPECT_EQ(options.dense_below, library.dense_below);
}

TEST(LaunchOptionsTest, RhoIsAFractionUnderEveryPolicy) {
  // --rho was once documented as the threshold of --policy=threshold; the
  // worker refuses rho > 1 under every policy, so the launcher does too.
  LaunchOptions options;
  options.policy = "threshold";
  options.rho = 2.5;
  EXPECT_THAT(ValidateLaunchOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument, "--rho must be"));
  options.rho = 0.01;
  options.threshold = 2.5;  // a magnitude: any finite value >= 0
  ENTROGRAD_EXPECT_OK(ValidateLaunchOptions(options));
}

TEST(LaunchOptionsTest, EveryValueTypeOfTheCodecIsAccepted) {
  LaunchOptions options;
  for (const char* type : {"f32", "f16", "bf16", "e5m2"}) {
    options.value_type = type;
    ENTROGRAD_EXPECT_OK(ValidateLaunchOptions(options)) << type;
  }
}

TEST(ChildCommandsTest, ThresholdReachesTheWorker) {
  LaunchOptions options;
  options.policy = "threshold";
  options.threshold = 2.5;
  EXPECT_THAT(WorkerArgs(options, 0, {"127.0.0.1:5000"}, "j"),
              ::testing::IsSupersetOf(
                  {"--policy=threshold", "--threshold=2.5", "--rho=0.01"}));
}

TEST(LaunchOptionsTest, MissingBinariesAreNamed) {
  LaunchOptions options;
  options.aggregator_bin = "/nonexistent/entrograd-aggregator";
  options.worker_bin = "/bin/sh";
  EXPECT_THAT(ResolveBinaries(options),
              StatusIs(absl::StatusCode::kNotFound, "--aggregator_bin"));
  options.aggregator_bin = "/bin/sh";
  options.worker_bin = "/etc/passwd";  // not executable
  EXPECT_THAT(ResolveBinaries(options),
              StatusIs(absl::StatusCode::kNotFound, "--worker_bin"));
}

TEST(ChildCommandsTest, AggregatorListensOnFreeLoopbackPorts) {
  LaunchOptions options;
  options.round_timeout = absl::Seconds(90);
  EXPECT_THAT(
      AggregatorArgs(options),
      ElementsAre("--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                  "--round_timeout=1m30s"));
}

TEST(ChildCommandsTest, UnderLinkEmulationProcessesUseNamespaceAddresses) {
  LaunchOptions options;
  options.model = "wide";
  options.eval_every = 25;
  options.eval_each_epoch = false;
  EXPECT_THAT(AggregatorArgs(options, "10.213.0.1"),
              ::testing::IsSupersetOf(
                  {"--listen=10.213.0.1:0", "--metrics_listen=10.213.0.1:0"}));
  EXPECT_THAT(WorkerArgs(options, 0, {"10.213.0.1:4000", "10.213.0.2:4001"}, "j"),
              ::testing::IsSupersetOf({"--shards=10.213.0.1:4000,10.213.0.2:4001",
                                       "--model=wide", "--eval_every=25",
                                       "--eval_each_epoch=false"}));
}

TEST(ChildCommandsTest, ParsesThePortLine) {
  AggregatorPorts ports;
  ASSERT_TRUE(ParseAggregatorPortLine(
      "entrograd-aggregator: serving on port 41234, metrics on port 9464",
      &ports));
  EXPECT_EQ(ports.port, 41234);
  EXPECT_EQ(ports.metrics_port, 9464);
  EXPECT_FALSE(
      ParseAggregatorPortLine("entrograd-aggregator: stopped", &ports));
  EXPECT_FALSE(ParseAggregatorPortLine(
      "entrograd-aggregator: serving on port x, metrics on port 1", &ports));
}

TEST(ChildCommandsTest, WorkerGetsEveryFlag) {
  LaunchOptions options;
  options.workers = 2;
  options.policy = "topk";
  options.rho = 0.001;
  options.max_steps = 20;
  options.out_dir = "/tmp/run";
  options.checkpoint_interval = 10;
  options.extra_worker_args = "  --log_level=debug\t--threads=1 ";
  EXPECT_THAT(
      WorkerArgs(options, 1, {"127.0.0.1:5000"}, "job-7"),
      ElementsAre("--shards=127.0.0.1:5000", "--world_size=2", "--rank=1",
                  "--job_id=job-7", "--policy=topk", "--rho=0.001",
                  "--threshold=0.001", "--epochs=1", "--max_steps=20",
                  "--batch_size=64", "--lr=0.1", "--lr_schedule=constant",
                  "--momentum=0.9", "--seed=1",
                  "--model=cnn", "--eval_every=0",
                  "--eval_each_epoch=true", "--eval_samples=0",
                  "--validation=0", "--warmup_steps=0", "--dense_below=1024",
                  "--merged_keep_factor=0", "--value_type=f32",
                  "--out=/tmp/run/rank1", "--checkpoint_interval=10",
                  "--merge_timeout=6m",
                  "--data_dir=/usr/share/datasets/fashion-mnist",
                  "--log_level=debug", "--threads=1"));
}

// A flag the launcher already passes, set again through --extra_worker_args,
// would reach the worker last and win while summary.json recorded the
// launcher's value: refused, in every spelling, naming the flag.
TEST(ChildCommandsTest, ExtraWorkerArgsMayNotOverrideTheLaunchersFlags) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--dense_below=0", "--dense_below"},
      {"--share_hold_steps=3 --merged_keep_factor 1", "--merged_keep_factor"},
      {"-rho=0.5", "--rho"},
      {"--noeval_each_epoch", "--eval_each_epoch"},
      {"--seed=2", "--seed"},
      {"--rank=3", "--rank"},
  };
  for (const auto& [extra, flag] : cases) {
    LaunchOptions options;
    options.extra_worker_args = extra;
    EXPECT_THAT(ValidateLaunchOptions(options),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("--extra_worker_args must not set ",
                                      flag, ":")))
        << extra;
  }
  // Worker flags the launcher does not set pass, values included.
  LaunchOptions options;
  options.extra_worker_args =
      "--share_hold_steps 3 --min_keep_ratio=0.001 --entropy_of accumulated";
  ENTROGRAD_EXPECT_OK(ValidateLaunchOptions(options));
}

// The workers wait for a merged layer longer than the aggregator waits for
// a round, so a missing rank is reported by the aggregator's abort (which
// names it), never by a worker's bare timeout.
TEST(ChildCommandsTest, WorkersWaitLongerThanTheRoundTimeout) {
  LaunchOptions options;
  options.round_timeout = absl::Seconds(3);
  EXPECT_THAT(WorkerArgs(options, 0, {"127.0.0.1:5000"}, "job"),
              Contains("--merge_timeout=1m3s"));
  EXPECT_THAT(AggregatorArgs(options), Contains("--round_timeout=3s"));
}

TEST(ChildCommandsTest, JobIdsAreValidAndLocal) {
  LaunchOptions options;
  options.job_id = GenerateJobId();
  EXPECT_THAT(options.job_id, ::testing::StartsWith("local-"));
  ENTROGRAD_EXPECT_OK(ValidateLaunchOptions(options));
}

}  // namespace
}  // namespace entrograd::launcher
