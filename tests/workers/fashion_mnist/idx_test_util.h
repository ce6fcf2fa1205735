// Writes small IDX files, gzipped or plain, for the reader and loader tests.
#ifndef ENTROGRAD_TESTS_WORKERS_FASHION_MNIST_IDX_TEST_UTIL_H_
#define ENTROGRAD_TESTS_WORKERS_FASHION_MNIST_IDX_TEST_UTIL_H_

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace entrograd::testing {

// The bytes of an IDX file: big-endian magic and dims, then `data`.
inline std::vector<uint8_t> IdxBytes(uint32_t magic,
                                     const std::vector<uint32_t>& dims,
                                     const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes;
  auto put32 = [&bytes](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      bytes.push_back(static_cast<uint8_t>(v >> shift));
    }
  };
  put32(magic);
  for (uint32_t dim : dims) put32(dim);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// Writes `bytes` to `path`, through zlib's gzip writer when `gzip`.
inline void WriteBytes(const std::string& path,
                       const std::vector<uint8_t>& bytes, bool gzip) {
  if (gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr) << path;
    if (!bytes.empty()) {
      ASSERT_EQ(
          gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
          static_cast<int>(bytes.size()));
    }
    ASSERT_EQ(gzclose(file), Z_OK);
  } else {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << path;
  }
}

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A fresh, empty directory for the current test.
inline std::string FreshTestDir() {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      (std::string("entrograd_") + info->test_suite_name() + "_" +
       info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_WORKERS_FASHION_MNIST_IDX_TEST_UTIL_H_
