// RunCli in-process: dispatch, exit statuses and where messages go.
#include "entrograd_cli/cli.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_files.h"

namespace entrograd::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result RunTool(std::vector<std::string> args) {
  std::ostringstream out, err;
  Result result;
  result.status = RunCli(args, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uniform_ = testing::WriteFile(
        dir_.path(), "uniform.npy",
        testing::NpyFloat32(std::vector<float>(4096, 0.25f), "(64, 64)"));
    bias_ = testing::WriteFile(dir_.path(), "bias.f32",
                               testing::Float32Bytes({1, -2, 3, -4}));
  }

  testing::ScopedTempDir dir_;
  std::string uniform_;
  std::string bias_;
};

TEST_F(CliTest, HelpExitsZero) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--help"}, {"-h"}, {"help"}}) {
    const Result result = RunTool(args);
    EXPECT_EQ(result.status, kExitSuccess);
    EXPECT_THAT(result.out, StartsWith("usage: entrograd-cli <command>"));
    EXPECT_THAT(result.err, IsEmpty());
  }
  const Result inspect_help = RunTool({"inspect", "--help"});
  EXPECT_EQ(inspect_help.status, kExitSuccess);
  EXPECT_THAT(inspect_help.out, StartsWith("usage: entrograd-cli inspect"));
  EXPECT_THAT(inspect_help.out, HasSubstr("--dense_below N"));
}

TEST_F(CliTest, BadUsageExitsTwoWithTheProblemOnStderr) {
  const Result none = RunTool({});
  EXPECT_EQ(none.status, kExitUsage);
  EXPECT_THAT(none.err, HasSubstr("no command given"));
  const Result unknown = RunTool({"compress", uniform_});
  EXPECT_EQ(unknown.status, kExitUsage);
  EXPECT_THAT(unknown.err, HasSubstr("unknown command 'compress'"));
  const Result flag = RunTool({"inspect", "--rho", "abc", uniform_});
  EXPECT_EQ(flag.status, kExitUsage);
  EXPECT_THAT(flag.err, HasSubstr("--rho: expected a number, got 'abc'"));
  EXPECT_THAT(flag.out, IsEmpty());
  const Result no_files = RunTool({"inspect", "--json"});
  EXPECT_EQ(no_files.status, kExitUsage);
  EXPECT_THAT(no_files.err, HasSubstr("no FILE given"));
  const Result policy = RunTool({"inspect", "--policy", "best", uniform_});
  EXPECT_EQ(policy.status, kExitUsage);
  EXPECT_THAT(policy.err, HasSubstr("unknown keep policy \"best\""));
}

TEST_F(CliTest, BadFileExitsOneNamingTheFile) {
  const std::string missing = dir_.path() + "/nope.npy";
  const Result result = RunTool({"inspect", uniform_, missing});
  EXPECT_EQ(result.status, kExitFileError);
  EXPECT_THAT(result.err, HasSubstr(missing + ": no such file"));
  EXPECT_THAT(result.out, IsEmpty());  // nothing half-printed
}

TEST_F(CliTest, PrintsATableByDefault) {
  const Result result = RunTool({"inspect", uniform_, bias_});
  EXPECT_EQ(result.status, kExitSuccess) << result.err;
  EXPECT_THAT(result.err, IsEmpty());
  EXPECT_THAT(result.out, StartsWith("policy entropy, rho 0.01"));
  EXPECT_THAT(result.out, HasSubstr("\nuniform.npy "));
  EXPECT_THAT(result.out, HasSubstr("\nbias.f32 "));
  EXPECT_THAT(result.out, HasSubstr("total: 2 layers"));
}

TEST_F(CliTest, PrintsJsonWithTheLibrarysNumbers) {
  const Result result = RunTool({"inspect", "--json", uniform_});
  ASSERT_EQ(result.status, kExitSuccess) << result.err;
  const nlohmann::json root =
      nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(root.is_object()) << result.out;
  const nlohmann::json& layer = root.at("layers").at(0);
  EXPECT_EQ(layer.at("name"), "uniform.npy");
  EXPECT_EQ(layer.at("numel"), 4096);
  EXPECT_EQ(layer.at("k"), 41);
  EXPECT_NEAR(layer.at("normalized_entropy").get<double>(), 1.0, 1e-12);
  EXPECT_EQ(layer.at("auto_encoding"), "gap_range");
}

TEST_F(CliTest, FlagsReachTheCompressor) {
  const Result topk =
      RunTool({"inspect", "--json", "--policy=topk", "--rho", "0.5", uniform_});
  ASSERT_EQ(topk.status, kExitSuccess) << topk.err;
  EXPECT_THAT(topk.out, HasSubstr("\"k\": 2048,"));
  const Result dense_below =
      RunTool({"inspect", "--json", "--dense_below", "5000", uniform_});
  ASSERT_EQ(dense_below.status, kExitSuccess) << dense_below.err;
  EXPECT_THAT(dense_below.out, HasSubstr("\"k\": 4096,"));
  EXPECT_THAT(dense_below.out, HasSubstr("\"auto_encoding\": \"dense\""));
}

}  // namespace
}  // namespace entrograd::cli
