// Splits a byte stream that arrives in arbitrary chunks (pipe reads) into
// lines. Not thread-safe; one buffer per stream.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_LINE_BUFFER_H_
#define ENTROGRAD_WORKERS_LAUNCHER_LINE_BUFFER_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace entrograd::launcher {

class LineBuffer {
 public:
  // A line longer than `max_line_bytes` is delivered in pieces of that size,
  // so a child that prints without newlines cannot grow memory unbounded.
  explicit LineBuffer(size_t max_line_bytes = size_t{1} << 20);

  void Append(absl::string_view bytes);

  // Moves the next complete line, without its "\n" (or "\r\n"), into *line.
  // False when no complete line is buffered.
  bool NextLine(std::string* line);

  // At end of stream: the unterminated rest as a last line. False when
  // nothing is left.
  bool TakeRest(std::string* line);

 private:
  const size_t max_line_bytes_;
  std::string buffer_;
  size_t start_ = 0;  // bytes of buffer_ before this were delivered
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_LINE_BUFFER_H_
