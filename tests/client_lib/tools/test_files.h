// Helpers for the entrograd-cli tests: .npy and .f32 file bytes built by
// hand (so the reader is checked against the format, not against itself) and
// a private temporary directory per test.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_TOOLS_TEST_FILES_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_TOOLS_TEST_FILES_H_

#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace entrograd::cli::testing {

// Little-endian float32 bytes of `values`, written byte by byte so the test
// does not depend on the host's byte order.
inline std::string Float32Bytes(const std::vector<float>& values) {
  std::string bytes;
  for (float value : values) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    for (int b = 0; b < 4; ++b)
      bytes += static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  return bytes;
}

// A .npy file: magic, version `major`.0, header length (2 bytes for 1.0, 4
// for 2.0 and 3.0), `dict` padded with spaces so that the data starts at a
// multiple of 64, a newline, then `data`.
inline std::string NpyBytes(absl::string_view dict, absl::string_view data,
                            int major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header(dict);
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  const size_t length_bytes = major == 1 ? 2 : 4;
  for (size_t b = 0; b < length_bytes; ++b) {
    bytes += static_cast<char>((header.size() >> (8 * b)) & 0xFF);
  }
  return absl::StrCat(bytes, header, data);
}

// The dict NumPy writes for a float32 C-order array; `shape` as Python
// writes it, e.g. "(3, 4)" or "(5,)".
inline std::string Float32Dict(absl::string_view shape,
                               absl::string_view descr = "<f4",
                               bool fortran_order = false) {
  return absl::StrCat("{'descr': '", descr,
                      "', 'fortran_order': ", fortran_order ? "True" : "False",
                      ", 'shape': ", shape, ", }");
}

inline std::string NpyFloat32(const std::vector<float>& values,
                              absl::string_view shape, int major = 1) {
  return NpyBytes(Float32Dict(shape), Float32Bytes(values), major);
}

// A fresh directory under ::testing::TempDir(), unique even when ctest runs
// tests in parallel.
inline std::string MakeTempDir() {
  std::string pattern = ::testing::TempDir();
  if (pattern.empty() || pattern.back() != '/') pattern += '/';
  pattern += "entrograd_cli_test_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const char* dir = mkdtemp(buffer.data());
  EXPECT_NE(dir, nullptr) << "mkdtemp(" << pattern << ") failed";
  return dir == nullptr ? ::testing::TempDir() : std::string(dir);
}

// MakeTempDir() removed with its contents at the end of the scope.
class ScopedTempDir {
 public:
  ScopedTempDir() : path_(MakeTempDir()) {}
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `bytes` to dir/name and returns the path.
inline std::string WriteFile(const std::string& dir, absl::string_view name,
                             absl::string_view bytes) {
  const std::string path = absl::StrCat(dir, "/", name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(file.good()) << "writing " << path;
  return path;
}

}  // namespace entrograd::cli::testing

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_TOOLS_TEST_FILES_H_
