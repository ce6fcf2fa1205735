#include "workers/fashion_mnist/fashion_mnist.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/fashion_mnist/idx_reader.h"
#include "workers/fashion_mnist/idx_test_util.h"

namespace entrograd::workers {
namespace {

using ::entrograd::testing::FreshTestDir;
using ::entrograd::testing::IdxBytes;
using ::entrograd::testing::StatusIs;
using ::entrograd::testing::WriteBytes;

bool DatasetInstalled() {
  return std::filesystem::exists(std::string(kDefaultFashionMnistDir) + "/" +
                                 kTrainImagesFile + ".gz");
}

struct PixelStats {
  double mean;
  double std;
};

// Summed in double: float32 sums over 47M pixels would lose the digits
// the tolerances look at.
PixelStats Stats(const torch::Tensor& images) {
  const float* pixels = images.data_ptr<float>();
  const int64_t n = images.numel();
  double sum = 0.0;
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += pixels[i];
    sum_squares += static_cast<double>(pixels[i]) * pixels[i];
  }
  const double mean = sum / static_cast<double>(n);
  return {mean, std::sqrt(sum_squares / static_cast<double>(n) - mean * mean)};
}

#define SKIP_WITHOUT_DATASET()                                            \
  if (!DatasetInstalled()) {                                              \
    GTEST_SKIP() << kDefaultFashionMnistDir                               \
                 << " is absent: install Debian's dataset-fashion-mnist " \
                    "(scripts/setup.sh does)";                            \
  }

TEST(LoadFashionMnistTest, MissingDirectoryNamesTheFirstFile) {
  const std::string dir = FreshTestDir() + "/nowhere";
  EXPECT_THAT(LoadFashionMnist(dir),
              StatusIs(absl::StatusCode::kNotFound,
                       dir + "/train-images-idx3-ubyte.gz"));
}

// Small but well-formed files: the loader must still insist on the
// published counts, and name the offending file.
TEST(LoadFashionMnistTest, RejectsWrongSampleCount) {
  const std::string dir = FreshTestDir();
  WriteBytes(dir + "/train-images-idx3-ubyte.gz",
             IdxBytes(kIdxImagesMagic, {2, 28, 28},
                      std::vector<uint8_t>(2 * 28 * 28, 7)),
             /*gzip=*/true);
  WriteBytes(dir + "/train-labels-idx1-ubyte.gz",
             IdxBytes(kIdxLabelsMagic, {2}, {1, 2}), /*gzip=*/true);
  EXPECT_THAT(LoadFashionMnist(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "train-images-idx3-ubyte.gz: shape [2, 28, 28], "
                       "expected [60000, 28, 28]"));
}

TEST(LoadFashionMnistTest, RejectsWrongImageSide) {
  const std::string dir = FreshTestDir();
  WriteBytes(
      dir + "/train-images-idx3-ubyte",
      IdxBytes(kIdxImagesMagic, {60000, 1, 1}, std::vector<uint8_t>(60000, 7)),
      /*gzip=*/false);
  WriteBytes(dir + "/train-labels-idx1-ubyte",
             IdxBytes(kIdxLabelsMagic, {60000}, std::vector<uint8_t>(60000)),
             /*gzip=*/false);
  EXPECT_THAT(LoadFashionMnist(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "train-images-idx3-ubyte: shape [60000, 1, 1]"));
}

TEST(LoadFashionMnistTest, RejectsOutOfRangeLabelAndFindsPlainFiles) {
  const std::string dir = FreshTestDir();
  WriteBytes(dir + "/train-images-idx3-ubyte",
             IdxBytes(kIdxImagesMagic, {60000, 28, 28},
                      std::vector<uint8_t>(60000 * 28 * 28)),
             /*gzip=*/false);
  std::vector<uint8_t> labels(60000, 9);
  labels[123] = 10;
  WriteBytes(dir + "/train-labels-idx1-ubyte",
             IdxBytes(kIdxLabelsMagic, {60000}, labels), /*gzip=*/false);
  EXPECT_THAT(LoadFashionMnist(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "train-labels-idx1-ubyte: label 10 at index 123"));
}

TEST(LoadFashionMnistTest, MissingTestFilesAreNamed) {
  const std::string dir = FreshTestDir();
  WriteBytes(dir + "/train-images-idx3-ubyte",
             IdxBytes(kIdxImagesMagic, {60000, 28, 28},
                      std::vector<uint8_t>(60000 * 28 * 28)),
             /*gzip=*/false);
  WriteBytes(dir + "/train-labels-idx1-ubyte",
             IdxBytes(kIdxLabelsMagic, {60000}, std::vector<uint8_t>(60000)),
             /*gzip=*/false);
  EXPECT_THAT(LoadFashionMnist(dir),
              StatusIs(absl::StatusCode::kNotFound,
                       "t10k-images-idx3-ubyte.gz: no such file"));
}

TEST(LoadFashionMnistTest, RealDatasetHasPublishedShapesAndStatistics) {
  SKIP_WITHOUT_DATASET();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionMnist data,
                                 LoadFashionMnist(kDefaultFashionMnistDir));
  for (const MnistSplit* split : {&data.train, &data.test}) {
    const int64_t n = split == &data.train ? 60000 : 10000;
    EXPECT_EQ(split->images.sizes(), torch::IntArrayRef({n, 1, 28, 28}));
    EXPECT_EQ(split->images.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(split->images.is_contiguous());
    EXPECT_EQ(split->labels.sizes(), torch::IntArrayRef({n}));
    EXPECT_EQ(split->labels.scalar_type(), torch::kInt64);
    EXPECT_EQ(split->labels.min().item<int64_t>(), 0);
    EXPECT_EQ(split->labels.max().item<int64_t>(), 9);
    // Fashion-MNIST is balanced: n / 10 samples of each class.
    const torch::Tensor counts = torch::bincount(split->labels);
    EXPECT_TRUE(torch::equal(counts, torch::full({10}, n / 10, torch::kInt64)))
        << counts;
    // Pixel 0 maps to -mean/std, pixel 255 to (1 - mean)/std.
    EXPECT_FLOAT_EQ(split->images.min().item<float>(),
                    (0.0f - kFashionMnistMean) / kFashionMnistStd);
    EXPECT_FLOAT_EQ(split->images.max().item<float>(),
                    (1.0f - kFashionMnistMean) / kFashionMnistStd);
  }
  // The constants are the training set's statistics, so the normalised
  // training pixels have mean ~0 and standard deviation ~1 (measured:
  // 0.00012 and 1.00007; the test set: 0.0024 and 0.9984).
  const PixelStats train = Stats(data.train.images);
  EXPECT_NEAR(train.mean, 0.0, 0.001);
  EXPECT_NEAR(train.std, 1.0, 0.001);
  const PixelStats test = Stats(data.test.images);
  EXPECT_NEAR(test.mean, 0.0, 0.005);
  EXPECT_NEAR(test.std, 1.0, 0.005);
  // Label of the first training image (an ankle boot) and of the first test
  // image (also an ankle boot), as published.
  EXPECT_EQ(data.train.labels[0].item<int64_t>(), 9);
  EXPECT_EQ(data.test.labels[0].item<int64_t>(), 9);
}

}  // namespace
}  // namespace entrograd::workers
