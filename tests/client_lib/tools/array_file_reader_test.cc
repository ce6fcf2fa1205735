#include "entrograd_cli/array_file_reader.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "test_files.h"

namespace entrograd::cli {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::Float32Bytes;
using testing::Float32Dict;
using ::testing::HasSubstr;
using testing::NpyBytes;
using testing::NpyFloat32;
using testing::WriteFile;

std::vector<float> Iota(int count) {
  std::vector<float> values;
  for (int i = 0; i < count; ++i) values.push_back(0.5f * i - 3.0f);
  return values;
}

class ArrayFileReaderTest : public ::testing::Test {
 protected:
  std::string Write(absl::string_view name, absl::string_view bytes) {
    return WriteFile(dir_.path(), name, bytes);
  }

  testing::ScopedTempDir dir_;
};

TEST_F(ArrayFileReaderTest, ReadsMultiDimensionalNpyInCOrder) {
  const std::vector<float> values = Iota(2 * 3 * 4);
  const std::string path = Write("w.npy", NpyFloat32(values, "(2, 3, 4)"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<float> read, ReadArrayFile(path));
  EXPECT_THAT(read, ElementsAreArray(values));
}

TEST_F(ArrayFileReaderTest, ReadsEveryFormatVersion) {
  const std::vector<float> values = Iota(12);
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    const std::string path = Write(absl::StrCat("v", major, ".npy"),
                                   NpyFloat32(values, "(3, 4)", major));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<float> read,
                                   ReadArrayFile(path));
    EXPECT_THAT(read, ElementsAreArray(values));
  }
}

TEST_F(ArrayFileReaderTest, ReadsOneDimensionalAndScalarArrays) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<float> vector,
      ReadArrayFile(Write("v.npy", NpyFloat32({1.5f, -2.0f}, "(2,)"))));
  EXPECT_THAT(vector, ElementsAre(1.5f, -2.0f));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<float> scalar,
      ReadArrayFile(Write("s.npy", NpyFloat32({7.25f}, "()"))));
  EXPECT_THAT(scalar, ElementsAre(7.25f));
}

TEST_F(ArrayFileReaderTest, ReadsAHeaderThatIsNotPaddedTo64Bytes) {
  // Old NumPy versions aligned to 16 bytes; the reader must not insist.
  std::string bytes = "\x93NUMPY\x01";
  const std::string dict = Float32Dict("(2,)") + "\n";
  bytes += '\0';
  bytes += static_cast<char>(dict.size());
  bytes += '\0';
  bytes += dict + Float32Bytes({3.0f, 4.0f});
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<float> read,
                                 ReadArrayFile(Write("odd.npy", bytes)));
  EXPECT_THAT(read, ElementsAre(3.0f, 4.0f));
}

TEST_F(ArrayFileReaderTest, ReadsRawFloat32AndUpperCaseExtensions) {
  const std::vector<float> values = {1.0f, -0.0f, 3.5e-20f, -1e30f};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<float> raw,
      ReadArrayFile(Write("g.f32", Float32Bytes(values))));
  EXPECT_THAT(raw, ElementsAreArray(values));
  EXPECT_TRUE(std::signbit(raw[1]));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<float> upper,
      ReadArrayFile(Write("G.NPY", NpyFloat32(values, "(4,)"))));
  EXPECT_THAT(upper, ElementsAreArray(values));
}

TEST_F(ArrayFileReaderTest, ErrorsNameTheFile) {
  const std::string path = absl::StrCat(dir_.path(), "/missing.npy");
  EXPECT_THAT(ReadArrayFile(path),
              StatusIs(absl::StatusCode::kNotFound,
                       absl::StrCat(path, ": no such file")));
}

TEST_F(ArrayFileReaderTest, RejectsDirectoriesAndOtherExtensions) {
  const std::string subdir = absl::StrCat(dir_.path(), "/dir.npy");
  ASSERT_TRUE(std::filesystem::create_directory(subdir));
  EXPECT_THAT(
      ReadArrayFile(subdir),
      StatusIs(absl::StatusCode::kFailedPrecondition, "not a regular file"));
  EXPECT_THAT(ReadArrayFile(Write("g.txt", "1 2 3")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unsupported file extension '.txt'"));
  EXPECT_THAT(
      ReadArrayFile(Write("gradient", Float32Bytes({1.0f}))),
      StatusIs(absl::StatusCode::kInvalidArgument, "no file extension"));
}

TEST_F(ArrayFileReaderTest, RejectsBadNpyPreambleAndHeader) {
  EXPECT_THAT(ReadArrayFile(Write("empty.npy", "")),
              StatusIs(absl::StatusCode::kInvalidArgument, "magic"));
  EXPECT_THAT(ReadArrayFile(Write("text.npy", "hello, world")),
              StatusIs(absl::StatusCode::kInvalidArgument, "magic"));
  EXPECT_THAT(ReadArrayFile(Write("v9.npy", NpyBytes(Float32Dict("(1,)"),
                                                     Float32Bytes({1.0f}), 9))),
              StatusIs(absl::StatusCode::kInvalidArgument, "version 9.0"));
  const std::string full = NpyFloat32({1.0f}, "(1,)");
  EXPECT_THAT(ReadArrayFile(Write("cut.npy", full.substr(0, 40))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the header is 118 bytes long but the file ends after "
                       "40 bytes"));
  EXPECT_THAT(
      ReadArrayFile(Write("dict.npy", NpyBytes("{'descr': '<f4'}", ""))),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "bad npy header: missing key 'fortran_order'"));
}

TEST_F(ArrayFileReaderTest, RejectsOtherDtypesNamingWhatWasFound) {
  struct Case {
    const char* descr;
    const char* found;
  };
  const Case cases[] = {
      {">f4", "'>f4' (big-endian float32)"},
      {"<f8", "'<f8' (little-endian float64)"},
      {"<f2", "'<f2' (little-endian float16)"},
      {"|O", "'|O' (object array"},
      {"<i4", "'<i4' (little-endian int32)"},
      {"|u1", "'|u1' (uint8)"},
      {"|b1", "'|b1' (bool)"},
      {"=f4", "'=f4' (native-order float32)"},
      {"|f4", "'|f4' (float32)"},
      {"", "'' (an empty dtype)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.descr);
    const std::string path = Write(
        "t.npy",
        NpyBytes(Float32Dict("(1,)", c.descr), Float32Bytes({1.0f, 2.0f})));
    EXPECT_THAT(ReadArrayFile(path),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("unsupported dtype ", c.found)));
    EXPECT_THAT(ReadArrayFile(path).status().message(),
                HasSubstr("expected '<f4' (little-endian float32)"));
  }
}

TEST_F(ArrayFileReaderTest, RejectsFortranOrder) {
  const std::string path = Write(
      "f.npy",
      NpyBytes(Float32Dict("(2, 2)", "<f4", true), Float32Bytes(Iota(4))));
  EXPECT_THAT(ReadArrayFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "fortran_order is True"));
}

TEST_F(ArrayFileReaderTest, RejectsTruncatedAndOverlongData) {
  const std::string full = NpyFloat32(Iota(12), "(3, 4)");
  EXPECT_THAT(
      ReadArrayFile(Write("short.npy", full.substr(0, full.size() - 6))),
      StatusIs(absl::StatusCode::kDataLoss,
               "truncated data: shape (3, 4) needs 12 elements (48 bytes) but "
               "only 42 bytes follow the header"));
  EXPECT_THAT(ReadArrayFile(Write("long.npy", full + "xyz")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "3 unexpected bytes after the 12 elements"));
}

TEST_F(ArrayFileReaderTest, RejectsEmptyArrays) {
  EXPECT_THAT(
      ReadArrayFile(Write("zero.npy", NpyBytes(Float32Dict("(0, 3)"), ""))),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "empty array: shape (0, 3) has no elements"));
  EXPECT_THAT(ReadArrayFile(Write("zero.f32", "")),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty file"));
}

TEST_F(ArrayFileReaderTest, RejectsTooManyElementsBeforeReadingData) {
  // 65536 * 65536 = 2^32 > 2^32 - 1; the file itself is tiny, so the check
  // must come from the header alone.
  EXPECT_THAT(
      ReadArrayFile(Write("huge.npy", NpyBytes(Float32Dict("(65536, 65536)"),
                                               Float32Bytes({1.0f})))),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "too many elements: shape (65536, 65536)"));
  // A product that overflows 64 bits is caught too.
  EXPECT_THAT(
      ReadArrayFile(
          Write("overflow.npy",
                NpyBytes(Float32Dict("(4294967296, 4294967296, 16)"), ""))),
      StatusIs(absl::StatusCode::kInvalidArgument, "too many elements"));
  // Exactly the limit is accepted by the header check and fails only for
  // the missing data.
  EXPECT_THAT(
      ReadArrayFile(Write("limit.npy", NpyBytes(Float32Dict("(4294967295,)"),
                                                Float32Bytes({1.0f})))),
      StatusIs(absl::StatusCode::kDataLoss, "truncated data"));
}

TEST_F(ArrayFileReaderTest, RejectsRawFilesWithAPartialElement) {
  EXPECT_THAT(ReadArrayFile(Write("odd.f32", "1234567")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "size 7 bytes is not a multiple of 4"));
}

TEST_F(ArrayFileReaderTest, RejectsNanAndInfNamingTheElement) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THAT(ReadArrayFile(
                  Write("nan.npy", NpyFloat32({1, 2, 3, nan, 5, 6}, "(2, 3)"))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "non-finite value (nan) at element 3"));
  EXPECT_THAT(ReadArrayFile(Write("inf.f32", Float32Bytes({-inf, 0.0f}))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "non-finite value (-inf) at element 0"));
}

TEST_F(ArrayFileReaderTest, SurvivesEveryTruncationOfAValidFile) {
  const std::string full = NpyFloat32(Iota(6), "(2, 3)");
  for (size_t length = 0; length < full.size(); ++length) {
    SCOPED_TRACE(length);
    EXPECT_FALSE(ReadArrayFile(Write("cut.npy", full.substr(0, length))).ok());
  }
}

TEST(BaseNameTest, StripsDirectories) {
  EXPECT_EQ(BaseName("a/b/conv1.weight.npy"), "conv1.weight.npy");
  EXPECT_EQ(BaseName("/abs/g.f32"), "g.f32");
  EXPECT_EQ(BaseName("plain.npy"), "plain.npy");
}

}  // namespace
}  // namespace entrograd::cli
