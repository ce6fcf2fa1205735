// Runs the built entrograd-cli binary (ENTROGRAD_CLI_PATH) as a process, as a
// user would: exit statuses 0, 1 and 2, stdout and stderr kept apart.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_files.h"

#ifndef ENTROGRAD_CLI_PATH
#error "ENTROGRAD_CLI_PATH must name the entrograd-cli binary"
#endif

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

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

class CliProcessTest : public ::testing::Test {
 protected:
  Result RunTool(const std::vector<std::string>& args) {
    std::vector<std::string> words = {ShellQuote(ENTROGRAD_CLI_PATH)};
    for (const std::string& arg : args) words.push_back(ShellQuote(arg));
    const std::string out_path = dir_.path() + "/stdout";
    const std::string err_path = dir_.path() + "/stderr";
    const std::string command =
        absl::StrCat(absl::StrJoin(words, " "), " >", ShellQuote(out_path),
                     " 2>", ShellQuote(err_path));
    const int raw = std::system(command.c_str());
    Result result;
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1000 - raw;
    result.out = ReadAll(out_path);
    result.err = ReadAll(err_path);
    return result;
  }

  std::string Write(absl::string_view name, absl::string_view bytes) {
    return testing::WriteFile(dir_.path(), name, bytes);
  }

  testing::ScopedTempDir dir_;
};

TEST_F(CliProcessTest, GoodFilesExitZero) {
  std::vector<float> skewed(2048);
  for (size_t i = 0; i < skewed.size(); ++i) {
    skewed[i] = (i % 7 == 0 ? 3.0f : 0.01f) * (i % 2 ? 1.0f : -1.0f);
  }
  const std::string npy = Write(
      "fc1.weight.npy",
      testing::NpyFloat32(std::vector<float>(4096, 1.0f), "(32, 128)", 2));
  const std::string raw = Write("fc1.bias.f32", testing::Float32Bytes(skewed));

  const Result table = RunTool({"inspect", npy, raw});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_THAT(table.err, IsEmpty());
  EXPECT_THAT(table.out, HasSubstr("\nfc1.weight.npy "));
  EXPECT_THAT(table.out, HasSubstr("\nfc1.bias.f32 "));

  const Result json = RunTool({"inspect", "--json", npy, raw});
  ASSERT_EQ(json.status, 0) << json.err;
  const nlohmann::json root =
      nlohmann::json::parse(json.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(root.is_object()) << json.out;
  const nlohmann::json& layers = root.at("layers");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].at("k"), 41);
  EXPECT_EQ(layers[1].at("numel"), 2048);

  const Result help = RunTool({"inspect", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, StartsWith("usage: entrograd-cli inspect"));
}

TEST_F(CliProcessTest, BadFilesExitOneNamingFileAndProblem) {
  const std::string good = Write("good.f32", testing::Float32Bytes({1, 2}));
  struct Case {
    std::string name;
    std::string bytes;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"f64.npy",
       testing::NpyBytes(testing::Float32Dict("(2,)", "<f8"),
                         std::string(16, '\0')),
       "unsupported dtype '<f8' (little-endian float64)"},
      {"short.npy",
       testing::NpyBytes(testing::Float32Dict("(4,)"),
                         testing::Float32Bytes({1, 2})),
       "truncated data"},
      {"garbage.npy", "\x93NUMPY\x01\x00\xff\xff garbage", "bad npy header"},
      {"empty.f32", "", "empty file"},
      {"nan.f32", testing::Float32Bytes({1.0f, NAN}),
       "holds a non-finite value (nan) at element 1"},
      {"notes.txt", "hello", "unsupported file extension '.txt'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Write(c.name, c.bytes);
    const Result result = RunTool({"inspect", good, path});
    EXPECT_EQ(result.status, 1);
    EXPECT_THAT(result.err, HasSubstr(absl::StrCat(path, ": ", c.problem)));
    EXPECT_THAT(result.out, IsEmpty());
  }
  const Result missing = RunTool({"inspect", dir_.path() + "/absent.npy"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr("absent.npy: no such file"));
}

TEST_F(CliProcessTest, BadUsageExitsTwo) {
  const std::string good = Write("good.f32", testing::Float32Bytes({1, 2}));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "no command given"},
      {{"inspect"}, "no FILE given"},
      {{"inspect", "--frobnicate", good}, "unknown flag '--frobnicate'"},
      {{"inspect", "--rho", "lots", good}, "--rho: expected a number"},
      {{"inspect", "--intervals", "-3", good}, "intervals = -3"},
      {{"inspect", "--policy", "magic", good}, "unknown keep policy"},
  };
  for (const auto& [args, problem] : cases) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    const Result result = RunTool(args);
    EXPECT_EQ(result.status, 2);
    EXPECT_THAT(result.err, HasSubstr(problem));
    EXPECT_THAT(result.out, IsEmpty());
  }
}

}  // namespace
}  // namespace entrograd::cli
