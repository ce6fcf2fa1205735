#include "workers/launcher/line_buffer.h"

#include <algorithm>

namespace entrograd::launcher {

LineBuffer::LineBuffer(size_t max_line_bytes)
    : max_line_bytes_(std::max<size_t>(max_line_bytes, 1)) {}

void LineBuffer::Append(absl::string_view bytes) {
  // Drop delivered bytes once they dominate, keeping appends amortised O(1).
  if (start_ > 0 && start_ >= buffer_.size() / 2) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
}

bool LineBuffer::NextLine(std::string* line) {
  const size_t newline = buffer_.find('\n', start_);
  size_t length;
  size_t consumed;
  if (newline != std::string::npos && newline - start_ <= max_line_bytes_) {
    length = newline - start_;
    consumed = length + 1;
    if (length > 0 && buffer_[start_ + length - 1] == '\r') --length;
  } else if (buffer_.size() - start_ >= max_line_bytes_) {
    length = max_line_bytes_;
    consumed = length;
  } else {
    return false;
  }
  line->assign(buffer_, start_, length);
  start_ += consumed;
  return true;
}

bool LineBuffer::TakeRest(std::string* line) {
  if (NextLine(line)) return true;
  if (start_ >= buffer_.size()) return false;
  line->assign(buffer_, start_, std::string::npos);
  if (!line->empty() && line->back() == '\r') line->pop_back();
  buffer_.clear();
  start_ = 0;
  return true;
}

}  // namespace entrograd::launcher
