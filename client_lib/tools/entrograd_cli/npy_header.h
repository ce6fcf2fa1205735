// Parsing of the NumPy .npy header (format versions 1.0, 2.0 and 3.0), as
// specified in numpy/lib/format.py. Only the header: deciding which dtypes
// are acceptable and reading the data is array_file_reader's job.
//
// The header is untrusted input: every function here validates what it reads
// and never reads outside the bytes it is given.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_TOOLS_ENTROGRAD_CLI_NPY_HEADER_H_
#define ENTROGRAD_TOOLS_ENTROGRAD_CLI_NPY_HEADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::cli {

// Bytes of the longest preamble (magic, version, 4-byte header length of
// versions 2.0 and 3.0). Version 1.0 needs 10.
inline constexpr int kNpyMaxPreambleBytes = 12;

// Header dictionaries longer than this are refused before anything is
// allocated for them; NumPy itself refuses more than 10000 bytes by default.
inline constexpr uint64_t kNpyMaxHeaderBytes = 1 << 20;

// The fixed-size start of a .npy file.
struct NpyPreamble {
  int major_version = 0;       // 1, 2 or 3
  int minor_version = 0;       // 0
  uint64_t header_offset = 0;  // where the header dictionary starts: 10 or 12
  uint64_t header_length = 0;  // bytes of the dictionary, padding included
};

// Parses the preamble from the first bytes of a file (at least 10 for
// version 1.0, 12 for 2.0 and 3.0; more is ignored).
// Errors (INVALID_ARGUMENT): no \x93NUMPY magic, unsupported version, too few
// bytes, header length above kNpyMaxHeaderBytes.
absl::StatusOr<NpyPreamble> ParseNpyPreamble(absl::string_view first_bytes);

// The header dictionary, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
struct NpyHeader {
  // The dtype string as written ('<f4', '>f8', '|O', ...). Structured dtypes
  // (a list) are reported as an error by ParseNpyHeaderDict.
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;  // empty for a 0-d (scalar) array
};

// Parses the Python-literal dictionary of a .npy header: exactly the keys
// 'descr' (a string), 'fortran_order' (True or False) and 'shape' (a tuple
// of non-negative integers), trailing whitespace and padding allowed.
// Errors (INVALID_ARGUMENT, naming the problem and its byte offset in the
// dictionary): anything else, including a structured (list) descr, missing,
// repeated or unknown keys, and dimensions that do not fit in 64 bits.
absl::StatusOr<NpyHeader> ParseNpyHeaderDict(absl::string_view dict);

}  // namespace entrograd::cli

#endif  // ENTROGRAD_TOOLS_ENTROGRAD_CLI_NPY_HEADER_H_
