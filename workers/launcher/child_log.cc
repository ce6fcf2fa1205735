#include "workers/launcher/child_log.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace entrograd::launcher {

ChildLog::~ChildLog() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status ChildLog::Open(const std::string& path) {
  if (file_ != nullptr) std::fclose(file_);
  path_ = path;
  // "e": O_CLOEXEC, so the children started later do not inherit it.
  file_ = std::fopen(path.c_str(), "we");
  if (file_ == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void ChildLog::AddLine(absl::string_view line) {
  if (file_ != nullptr) {
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fputc('\n', file_);
  }
  if (tail_lines_ == 0) return;
  if (tail_.size() == tail_lines_) tail_.pop_front();
  tail_.emplace_back(line);
}

void ChildLog::Flush() {
  if (file_ != nullptr) std::fflush(file_);
}

std::vector<std::string> ChildLog::Tail() const {
  return std::vector<std::string>(tail_.begin(), tail_.end());
}

}  // namespace entrograd::launcher
