// Runs `promtool check metrics` (the Prometheus exposition linter) on a text,
// for tests. Debian's `prometheus` package ships /usr/bin/promtool.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_METRICS_PROMTOOL_CHECK_H_
#define ENTROGRAD_TESTS_AGGREGATOR_METRICS_PROMTOOL_CHECK_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace entrograd::aggregator::testing {

inline constexpr char kPromtoolPath[] = "/usr/bin/promtool";

inline bool PromtoolAvailable() { return ::access(kPromtoolPath, X_OK) == 0; }

struct PromtoolResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together: lint problems, errors
};

// Writes `exposition` to a temporary file and feeds it to
// `promtool check metrics` on stdin. Returns INTERNAL when promtool cannot be
// run at all; a lint failure is a nonzero exit_code, not an error status.
inline absl::StatusOr<PromtoolResult> RunPromtoolCheckMetrics(
    const std::string& exposition) {
  std::string path = ::testing::TempDir() + "entrograd_metrics_XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return absl::InternalError("mkstemp failed");
  FILE* file = ::fdopen(fd, "w");
  if (file == nullptr) {
    ::close(fd);
    ::unlink(path.c_str());
    return absl::InternalError("fdopen failed");
  }
  const bool written = std::fwrite(exposition.data(), 1, exposition.size(),
                                   file) == exposition.size();
  std::fclose(file);
  if (!written) {
    ::unlink(path.c_str());
    return absl::InternalError("cannot write " + path);
  }

  const std::string command =
      absl::StrCat(kPromtoolPath, " check metrics < '", path, "' 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ::unlink(path.c_str());
    return absl::InternalError("popen failed: " + command);
  }
  PromtoolResult result;
  char buffer[1024];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.output.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  ::unlink(path.c_str());
  if (status == -1 || !WIFEXITED(status)) {
    return absl::InternalError("promtool did not exit normally: " + command);
  }
  result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace entrograd::aggregator::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_METRICS_PROMTOOL_CHECK_H_
