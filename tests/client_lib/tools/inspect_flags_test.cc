#include "entrograd_cli/inspect_flags.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::cli {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<InspectFlags> Parse(std::vector<std::string> args) {
  return ParseInspectFlags(args);
}

TEST(ParseInspectFlagsTest, DefaultsMatchTheLibraryExceptDenseBelow) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(InspectFlags flags, Parse({"a.npy"}));
  const CompressionOptions library_defaults;
  EXPECT_EQ(flags.options.policy, KeepPolicy::kEntropy);
  EXPECT_EQ(flags.options.rho, 0.01);
  EXPECT_EQ(flags.options.intervals, 256);
  EXPECT_EQ(flags.options.threshold, library_defaults.threshold);
  EXPECT_EQ(flags.options.dense_below, 0);
  EXPECT_EQ(flags.options.warmup_steps, 0);
  EXPECT_FALSE(flags.options.momentum_correction);
  EXPECT_FALSE(flags.json);
  EXPECT_FALSE(flags.help);
  EXPECT_THAT(flags.files, ElementsAre("a.npy"));
}

TEST(ParseInspectFlagsTest, ReadsEveryFlagInBothSpellings) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      InspectFlags flags,
      Parse({"--policy", "topk", "a.npy", "--rho=0.25", "--intervals", "16",
             "--dense_below=100", "--threshold", "0.5", "--json", "b.f32"}));
  EXPECT_EQ(flags.options.policy, KeepPolicy::kTopK);
  EXPECT_EQ(flags.options.rho, 0.25);
  EXPECT_EQ(flags.options.intervals, 16);
  EXPECT_EQ(flags.options.dense_below, 100);
  EXPECT_EQ(flags.options.threshold, 0.5);
  EXPECT_TRUE(flags.json);
  EXPECT_THAT(flags.files, ElementsAre("a.npy", "b.f32"));
}

TEST(ParseInspectFlagsTest, EveryPolicyName) {
  for (KeepPolicy policy :
       {KeepPolicy::kEntropy, KeepPolicy::kEntropyBudget, KeepPolicy::kTopK,
        KeepPolicy::kThreshold, KeepPolicy::kDense}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        InspectFlags flags,
        Parse({"--policy", std::string(KeepPolicyName(policy)), "a.npy"}));
    EXPECT_EQ(flags.options.policy, policy);
  }
}

TEST(ParseInspectFlagsTest, BudgetDensityIsRho) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      InspectFlags flags,
      Parse({"--policy=entropy_budget", "--rho", "0.003", "a.npy"}));
  EXPECT_EQ(flags.options.budget_density, 0.003);
}

TEST(ParseInspectFlagsTest, LastValueWinsAndDoubleDashEndsFlags) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      InspectFlags flags,
      Parse({"--rho", "0.5", "--rho", "0.125", "--", "--json", "-x.npy"}));
  EXPECT_EQ(flags.options.rho, 0.125);
  EXPECT_FALSE(flags.json);
  EXPECT_THAT(flags.files, ElementsAre("--json", "-x.npy"));
}

TEST(ParseInspectFlagsTest, HelpWinsOverEverythingElse) {
  for (const char* help : {"--help", "-h"}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(InspectFlags flags,
                                   Parse({"--bogus", help}));
    EXPECT_TRUE(flags.help);
  }
  EXPECT_TRUE(Parse({"--help"})->help);
}

TEST(ParseInspectFlagsTest, UsageErrorsNameTheProblem) {
  struct Case {
    std::vector<std::string> args;
    const char* problem;
  };
  const Case cases[] = {
      {{}, "no FILE given"},
      {{"--json"}, "no FILE given"},
      {{"--bogus", "a.npy"}, "unknown flag '--bogus'"},
      {{"-v", "a.npy"}, "unknown flag '-v'"},
      {{"--json=1", "a.npy"}, "--json takes no value"},
      {{"a.npy", "--rho"}, "--rho needs a value"},
      {{"--rho", "abc", "a.npy"}, "--rho: expected a number, got 'abc'"},
      {{"--rho=", "a.npy"}, "--rho: expected a number, got ''"},
      {{"--intervals", "2.5", "a.npy"},
       "--intervals: expected an integer, got '2.5'"},
      {{"--dense_below", "x", "a.npy"}, "--dense_below: expected an integer"},
      {{"--threshold", "1e", "a.npy"}, "--threshold: expected a number"},
      {{"--policy", "fancy", "a.npy"}, "unknown keep policy \"fancy\""},
      {{"--rho", "0", "a.npy"}, "rho = 0 is out of range"},
      {{"--rho", "1.5", "a.npy"}, "rho = 1.5 is out of range"},
      {{"--rho", "nan", "a.npy"}, "rho = nan is out of range"},
      {{"--intervals", "0", "a.npy"}, "intervals = 0 is out of range"},
      {{"--dense_below", "-1", "a.npy"}, "dense_below = -1 is out of range"},
      {{"--threshold", "-1", "a.npy"}, "threshold = -1 is out of range"},
      {{"--threshold", "inf", "a.npy"}, "threshold = inf is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    EXPECT_THAT(Parse(c.args),
                StatusIs(absl::StatusCode::kInvalidArgument, c.problem));
  }
}

TEST(InspectUsageTest, DocumentsEveryFlag) {
  const std::string usage = kInspectUsage;
  for (const char* flag : {"--policy", "--rho", "--threshold", "--intervals",
                           "--dense_below", "--json", "--help"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_THAT(usage, HasSubstr("Default here 0"));
}

}  // namespace
}  // namespace entrograd::cli
