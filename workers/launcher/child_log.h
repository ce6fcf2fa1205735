// The log file of one child (<out>/rank<r>.log, <out>/aggregator.log) and
// its last lines, kept in memory to say why the child failed.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_CHILD_LOG_H_
#define ENTROGRAD_WORKERS_LAUNCHER_CHILD_LOG_H_

#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace entrograd::launcher {

class ChildLog {
 public:
  // Keeps the last `tail_lines` lines for Tail().
  explicit ChildLog(size_t tail_lines = 20) : tail_lines_(tail_lines) {}
  ~ChildLog();

  ChildLog(const ChildLog&) = delete;
  ChildLog& operator=(const ChildLog&) = delete;

  // Creates (truncates) the file. INTERNAL when it cannot be opened.
  absl::Status Open(const std::string& path);

  // Appends one line (a newline is added). Lines go to the tail even when
  // the file is not open. Write errors are ignored: losing a log line must
  // not stop training.
  void AddLine(absl::string_view line);

  // Flushes to the file, so `tail -f` sees whole lines promptly.
  void Flush();

  // The last lines, oldest first.
  std::vector<std::string> Tail() const;

  const std::string& path() const { return path_; }

 private:
  const size_t tail_lines_;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::deque<std::string> tail_;
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_CHILD_LOG_H_
