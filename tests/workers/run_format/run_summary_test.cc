#include "workers/run_format/run_summary.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/run_format/json_double.h"

namespace entrograd::run_format {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// Every field set to something other than its default.
RunSummary AFullSummary() {
  RunSummary s;
  s.job_id = "job-1";
  s.policy = "threshold";
  s.workers = 2;
  s.shards = 3;
  s.rho = 0.01;
  s.threshold = 0.005;
  s.epochs = 2;
  s.max_steps = 40;
  s.batch_size = 64;
  s.lr = 0.1;
  s.lr_schedule = "cosine";
  s.momentum = 0.9;
  s.seed = 7;
  s.model = "wide";
  s.eval_every = 20;
  s.validation = 5000;
  s.warmup_steps = 4;
  s.dense_below = 0;
  s.merged_keep_factor = 1.5;
  s.value_type = "bf16";
  s.extra_worker_args = "--share_hold_steps 20";
  s.epochs_completed = 2;
  s.steps = 40;
  s.parameters = 25832330;
  s.layers = 8;
  s.test_accuracy = 0.8125;
  s.test_loss = 0.5;
  s.validation_accuracy = 0.75;
  s.bytes = {800, 2400, 320000};
  s.compression_ratio = 100;
  s.seconds = 4.5;
  s.seconds_per_step = 0.1125;
  s.wall_seconds = 9.25;
  s.compress_seconds = 4;
  s.wait_seconds = 2;
  s.replicas_identical = true;
  s.params_hash = "0123456789abcdef";
  s.train_seconds = 4.25;
  s.breakdown.samples = 80;
  s.breakdown.forward_backward = {0.01, 0.02};
  s.breakdown.compress = {0.003, 0.004};
  s.breakdown.wait = {0.05, 0.06};
  s.breakdown.apply = {0.001, 0.002};
  s.breakdown.step = {0.07, 0.09};
  s.link = LinkTraffic{"1gbit", 5000, 7000};
  EvalEvent eval;
  eval.rank = 0;
  eval.step = 20;
  eval.seconds = 2.5;
  eval.train_seconds = 2.0;
  eval.test_accuracy = 0.7;
  eval.test_loss = 0.9;
  eval.validation_accuracy = 0.65;
  eval.validation_loss = 1.0;
  s.evals = {eval, eval};
  s.evals[1].step = 40;
  s.layer_shares = {{"conv1.weight", 800, 0.00125, 0.004},
                    {"fc2.bias", 10, 1.0, 1.0}};
  return s;
}

TEST(RunSummaryJsonTest, EveryFieldRoundTrips) {
  const std::string json = FormatRunSummaryJson(AFullSummary());
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary back, ParseRunSummaryJson(json));
  // Writing what was read gives the same file: no field is lost or changed.
  EXPECT_EQ(FormatRunSummaryJson(back), json);
  EXPECT_EQ(back.threshold, 0.005);
  EXPECT_EQ(back.merged_keep_factor, 1.5);
  EXPECT_EQ(back.lr_schedule, "cosine");
  ASSERT_TRUE(back.link.has_value());
  EXPECT_EQ(back.link->total(), 12000);
  ASSERT_EQ(back.evals.size(), 2u);
  EXPECT_EQ(back.evals[1].step, 40);
  EXPECT_EQ(back.evals[1].validation_loss, 1.0);
  ASSERT_EQ(back.layer_shares.size(), 2u);
  EXPECT_EQ(back.layer_shares[0].name, "conv1.weight");
  EXPECT_EQ(back.layer_shares[0].numel, 800);
  EXPECT_EQ(back.layer_shares[0].sent_share, 0.00125);
  EXPECT_EQ(back.layer_shares[0].merged_share, 0.004);
}

TEST(RunSummaryJsonTest, SummariesWithoutLayerSharesStillRead) {
  // Written before the workers reported them: no per-layer table.
  Json json = Json::parse(FormatRunSummaryJson(AFullSummary()));
  json.erase("layer_shares");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary back,
                                 ParseRunSummaryJson(json.dump()));
  EXPECT_TRUE(back.layer_shares.empty());
}

TEST(RunSummaryJsonTest, HasTheKeysBenchScriptsRead) {
  const std::string json = FormatRunSummaryJson(AFullSummary());
  const Json parsed = Json::parse(json);
  // bench/link_comparison.py and bench/training_comparison.sh.
  for (const char* key :
       {"steps", "shards", "step_seconds_median", "step_seconds_p90",
        "forward_backward_seconds_median", "compress_seconds_median",
        "wait_seconds_median", "apply_seconds_median", "wire_bytes",
        "uplink_wire_bytes", "link", "link_bytes", "compression_ratio",
        "test_accuracy", "train_seconds", "evals", "replicas_identical",
        "parameters"}) {
    EXPECT_TRUE(parsed.contains(key)) << key;
  }
  EXPECT_EQ(parsed["wire_bytes"], 3200);
  EXPECT_EQ(parsed["link_bytes"], 12000);
  EXPECT_EQ(parsed["evals"][0]["step"], 20);
  EXPECT_EQ(json.back(), '\n');
  EXPECT_THAT(json, HasSubstr("\n  \"job_id\": \"job-1\",\n"));
}

TEST(RunSummaryJsonTest, AbsentValuesAreNullAndNonFiniteOnesStrings) {
  RunSummary summary = AFullSummary();
  summary.test_accuracy.reset();
  summary.train_seconds.reset();
  summary.link.reset();
  summary.test_loss = std::numeric_limits<double>::quiet_NaN();
  summary.evals.clear();
  const std::string json = FormatRunSummaryJson(summary);
  EXPECT_THAT(json, HasSubstr("\"test_accuracy\": null,"));
  EXPECT_THAT(json, HasSubstr("\"train_seconds\": null,"));
  EXPECT_THAT(json, HasSubstr("\"link\": null,"));
  EXPECT_THAT(json, HasSubstr("\"test_loss\": \"NaN\","));
  EXPECT_THAT(json, Not(HasSubstr("link_bytes")));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary back, ParseRunSummaryJson(json));
  EXPECT_FALSE(back.test_accuracy.has_value());
  EXPECT_FALSE(back.train_seconds.has_value());
  EXPECT_FALSE(back.link.has_value());
  ASSERT_TRUE(back.test_loss.has_value());
  EXPECT_TRUE(std::isnan(*back.test_loss));
  EXPECT_TRUE(back.evals.empty());
}

TEST(RunSummaryJsonTest, BadFilesNameTheMember) {
  EXPECT_THAT(ParseRunSummaryJson("{\"job_id\": "),
              StatusIs(absl::StatusCode::kInvalidArgument, "not JSON"));
  EXPECT_THAT(
      ParseRunSummaryJson("[]"),
      StatusIs(absl::StatusCode::kInvalidArgument, "not a JSON object"));
  Json json = Json::parse(FormatRunSummaryJson(AFullSummary()));
  json["steps"] = "many";
  EXPECT_THAT(ParseRunSummaryJson(json.dump()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"steps\" is not a number"));
  json = Json::parse(FormatRunSummaryJson(AFullSummary()));
  json.erase("replicas_identical");
  EXPECT_THAT(ParseRunSummaryJson(json.dump()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"replicas_identical\" is missing"));
  json = Json::parse(FormatRunSummaryJson(AFullSummary()));
  json["evals"][1].erase("test_accuracy");
  EXPECT_THAT(ParseRunSummaryJson(json.dump()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "evals[1]: \"test_accuracy\" is missing"));
  json = Json::parse(FormatRunSummaryJson(AFullSummary()));
  json["layer_shares"][1]["sent_share"] = 1.5;
  EXPECT_THAT(ParseRunSummaryJson(json.dump()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "layer_shares[1]: \"sent_share\" must be in [0, 1]"));
  json["layer_shares"] = "all";
  EXPECT_THAT(ParseRunSummaryJson(json.dump()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"layer_shares\" is not an array"));
}

}  // namespace
}  // namespace entrograd::run_format
