#include "workers/fashion_mnist/idx_reader.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/fashion_mnist/idx_test_util.h"

namespace entrograd::workers {
namespace {

using ::entrograd::testing::FreshTestDir;
using ::entrograd::testing::IdxBytes;
using ::entrograd::testing::ReadBytes;
using ::entrograd::testing::StatusIs;
using ::entrograd::testing::WriteBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two 2x3 "images" with distinct bytes, including 0 and 255.
std::vector<uint8_t> ImageData() {
  return {0, 1, 2, 127, 128, 255, 9, 8, 7, 6, 5, 4};
}

class IdxReaderTest : public ::testing::TestWithParam<bool> {
 protected:
  bool gzip() const { return GetParam(); }
  std::string Write(const std::string& name,
                    const std::vector<uint8_t>& bytes) {
    const std::string path = dir_ + "/" + name;
    WriteBytes(path, bytes, gzip());
    return path;
  }
  std::string dir_ = FreshTestDir();
};

INSTANTIATE_TEST_SUITE_P(GzipAndPlain, IdxReaderTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Gzip" : "Plain";
                         });

TEST_P(IdxReaderTest, RoundTripsImages) {
  const std::string path =
      Write("images", IdxBytes(kIdxImagesMagic, {2, 2, 3}, ImageData()));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path, 3));
  EXPECT_THAT(array.dims, ElementsAre(2, 2, 3));
  EXPECT_EQ(array.data, ImageData());
}

TEST_P(IdxReaderTest, RoundTripsLabels) {
  const std::string path =
      Write("labels", IdxBytes(kIdxLabelsMagic, {4}, {9, 0, 3, 3}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path, 1));
  EXPECT_THAT(array.dims, ElementsAre(4));
  EXPECT_THAT(array.data, ElementsAre(9, 0, 3, 3));
}

// Larger than the reader's 1 MiB chunk, so several reads are stitched.
TEST_P(IdxReaderTest, RoundTripsAcrossReadChunks) {
  std::vector<uint8_t> data(3 * 1000 * 1000);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  }
  const std::string path =
      Write("big", IdxBytes(kIdxImagesMagic, {3000, 1000, 1}, data));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path, 3));
  EXPECT_THAT(array.dims, ElementsAre(3000, 1000, 1));
  EXPECT_EQ(array.data, data);
}

TEST_P(IdxReaderTest, ZeroItemsIsAnEmptyArray) {
  const std::string path = Write("empty", IdxBytes(kIdxLabelsMagic, {0}, {}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(IdxArray array, ReadIdxFile(path, 1));
  EXPECT_THAT(array.dims, ElementsAre(0));
  EXPECT_TRUE(array.data.empty());
}

TEST_P(IdxReaderTest, RejectsLabelsFileReadAsImages) {
  const std::string path =
      Write("labels", IdxBytes(kIdxLabelsMagic, {4}, {1, 2, 3, 4}));
  EXPECT_THAT(ReadIdxFile(path, 3),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bad magic 0x00000801, expected 0x00000803"));
}

TEST_P(IdxReaderTest, RejectsOtherElementType) {
  // 0x0D is IDX's float32 type.
  const std::string path =
      Write("floats", IdxBytes(0x00000D01, {1}, {0, 0, 0, 0}));
  EXPECT_THAT(ReadIdxFile(path, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "bad magic"));
}

TEST_P(IdxReaderTest, RejectsNonZeroLeadingMagicBytes) {
  const std::string path = Write("magic", IdxBytes(0x01000801, {1}, {0}));
  EXPECT_THAT(ReadIdxFile(path, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "bad magic"));
}

TEST_P(IdxReaderTest, ErrorsNameTheFile) {
  const std::string path =
      Write("named-file", IdxBytes(kIdxLabelsMagic, {4}, {1, 2}));
  EXPECT_THAT(ReadIdxFile(path, 1),
              StatusIs(absl::StatusCode::kDataLoss, path));
}

TEST_P(IdxReaderTest, RejectsTruncatedData) {
  const std::string path =
      Write("short", IdxBytes(kIdxImagesMagic, {2, 2, 3}, {1, 2, 3, 4, 5}));
  EXPECT_THAT(ReadIdxFile(path, 3), StatusIs(absl::StatusCode::kDataLoss,
                                             "truncated data: 5 of 12 bytes"));
}

TEST_P(IdxReaderTest, RejectsTruncatedDims) {
  std::vector<uint8_t> bytes = IdxBytes(kIdxImagesMagic, {2, 2, 3}, {});
  bytes.resize(4 + 6);  // Magic and one and a half dims.
  const std::string path = Write("short-dims", bytes);
  EXPECT_THAT(
      ReadIdxFile(path, 3),
      StatusIs(absl::StatusCode::kDataLoss, "truncated header: 6 of 12 bytes"));
}

TEST_P(IdxReaderTest, RejectsEmptyFile) {
  const std::string path = Write("zero-bytes", {});
  EXPECT_THAT(ReadIdxFile(path, 1), StatusIs(absl::StatusCode::kDataLoss,
                                             "truncated header: 0 of 4 bytes"));
}

TEST_P(IdxReaderTest, RejectsTrailingBytes) {
  const std::string path =
      Write("long", IdxBytes(kIdxLabelsMagic, {2}, {1, 2, 3}));
  EXPECT_THAT(ReadIdxFile(path, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "trailing bytes"));
}

// A header promising 2^32-1 x 2^32-1 x 1 bytes must fail before anything
// that size is allocated.
TEST_P(IdxReaderTest, RejectsHugeDimensionsWithoutAllocating) {
  const std::string path = Write(
      "huge", IdxBytes(kIdxImagesMagic, {0xFFFFFFFF, 0xFFFFFFFF, 1}, {1}));
  EXPECT_THAT(ReadIdxFile(path, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, "kMaxIdxBytes"));
}

// Within kMaxIdxBytes but far beyond the file: a truncation, not a 1 GiB
// allocation.
TEST_P(IdxReaderTest, RejectsHeaderPromisingMoreThanTheFileHolds) {
  const std::string path =
      Write("promise", IdxBytes(kIdxImagesMagic, {1024, 1024, 1024}, {1, 2}));
  EXPECT_THAT(ReadIdxFile(path, 3),
              StatusIs(absl::StatusCode::kDataLoss,
                       "truncated data: 2 of 1073741824 bytes"));
}

TEST(IdxReaderFileTest, MissingFileIsNotFound) {
  const std::string path = FreshTestDir() + "/absent.gz";
  EXPECT_THAT(ReadIdxFile(path, 1),
              StatusIs(absl::StatusCode::kNotFound, path));
}

TEST(IdxReaderFileTest, DirectoryIsAnError) {
  const std::string dir = FreshTestDir();
  const absl::StatusOr<IdxArray> result = ReadIdxFile(dir, 1);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr(dir));
}

TEST(IdxReaderFileTest, RejectsBadExpectedRank) {
  EXPECT_THAT(ReadIdxFile("unused", 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "expected_rank"));
  EXPECT_THAT(ReadIdxFile("unused", 256),
              StatusIs(absl::StatusCode::kInvalidArgument, "expected_rank"));
}

// Not gzip and not IDX: zlib passes it through as plain bytes, and the
// magic check rejects it.
TEST(IdxReaderFileTest, RejectsGarbage) {
  const std::string path = FreshTestDir() + "/garbage";
  std::vector<uint8_t> garbage(4096);
  for (size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  WriteBytes(path, garbage, /*gzip=*/false);
  EXPECT_THAT(ReadIdxFile(path, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, "bad magic"));
}

// A gzip header followed by garbage: the inflate error is reported, not
// passed through as data.
TEST(IdxReaderFileTest, RejectsCorruptGzipStream) {
  const std::string path = FreshTestDir() + "/corrupt.gz";
  std::vector<uint8_t> bytes = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03};
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<uint8_t>(0xff - i));
  WriteBytes(path, bytes, /*gzip=*/false);
  EXPECT_THAT(ReadIdxFile(path, 1),
              StatusIs(absl::StatusCode::kDataLoss, path));
}

// A valid gzip file cut short (e.g. an interrupted download).
TEST(IdxReaderFileTest, RejectsTruncatedGzipFile) {
  const std::string dir = FreshTestDir();
  std::vector<uint8_t> data(20000);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  }
  WriteBytes(dir + "/whole.gz", IdxBytes(kIdxImagesMagic, {20, 1000, 1}, data),
             /*gzip=*/true);
  std::vector<uint8_t> gz = ReadBytes(dir + "/whole.gz");
  ASSERT_GT(gz.size(), 100u);
  gz.resize(gz.size() / 2);
  WriteBytes(dir + "/half.gz", gz, /*gzip=*/false);
  EXPECT_THAT(ReadIdxFile(dir + "/half.gz", 3),
              StatusIs(absl::StatusCode::kDataLoss, "truncated data"));
}

}  // namespace
}  // namespace entrograd::workers
