// Reads one layer's gradient from a file: a NumPy .npy float32 array or a
// raw little-endian float32 (.f32) file.
//
// Files are untrusted input: any content gives either the values or an
// error, never a crash, and nothing larger than the file is allocated.
//
// Thread safety: thread-compatible (reads the file system only).
#ifndef ENTROGRAD_TOOLS_ENTROGRAD_CLI_ARRAY_FILE_READER_H_
#define ENTROGRAD_TOOLS_ENTROGRAD_CLI_ARRAY_FILE_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "entrograd/codec.h"

namespace entrograd::cli {

// The most elements a layer may have: indices travel as uint32.
inline constexpr uint64_t kMaxArrayElements = kMaxPayloadNumel;

// Reads the file at `path` and returns its elements flattened in C (row-major)
// order, all finite.
//
// By extension (case-insensitive):
//   .npy  NumPy format 1.0, 2.0 or 3.0, dtype '<f4' (little-endian float32),
//         fortran_order False, any shape (a 0-d array is one element).
//   .f32  raw little-endian float32, no header.
//
// Errors; every message starts with `path` and names the problem:
//   NOT_FOUND          the file does not exist;
//   FAILED_PRECONDITION not a regular file (e.g. a directory);
//   errno's code       it cannot be opened or read;
//   INVALID_ARGUMENT   other extension, bad npy magic/version/header, a dtype
//                      other than '<f4' (named), fortran_order True, no
//                      elements, more than kMaxArrayElements, a .f32 size not
//                      a multiple of 4, bytes after the data, a NaN or Inf
//                      (with its flat index);
//   DATA_LOSS          fewer data bytes than the header's shape needs.
absl::StatusOr<std::vector<float>> ReadArrayFile(const std::string& path);

// The file name without its directories: what the inspect report calls the
// layer.
std::string BaseName(absl::string_view path);

}  // namespace entrograd::cli

#endif  // ENTROGRAD_TOOLS_ENTROGRAD_CLI_ARRAY_FILE_READER_H_
