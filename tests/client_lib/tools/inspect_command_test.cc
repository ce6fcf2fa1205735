#include "entrograd_cli/inspect_command.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "entrograd/codec.h"
#include "entrograd/entropy.h"
#include "entrograd/keep_count.h"
#include "entrograd/layer_compressor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "test_files.h"

namespace entrograd::cli {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::ElementsAre;
using testing::Float32Bytes;
using testing::NpyFloat32;
using testing::WriteFile;

constexpr size_t kRaw = 0, kDelta = 1, kBitmap = 2, kDense = 3;

// A gradient whose magnitude varies along its length, so the entropy is
// neither maximal nor zero.
std::vector<float> SkewedGradient(int numel, uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> gradient(numel);
  for (int i = 0; i < numel; ++i) {
    gradient[i] = normal(generator) * (i < numel / 5 ? 1.0f : 0.05f);
  }
  return gradient;
}

CompressionOptions WithPolicy(KeepPolicy policy) {
  CompressionOptions options;
  options.policy = policy;
  options.dense_below = 0;
  return options;
}

TEST(InspectGradientTest, HandCheckedUniformLayer) {
  // 4096 equal values: every interval has the same mean, P_i = 1/256, so
  // H = ln 256, Hn = 1, f = 1 and k = round(0.01 * 4096) = round(40.96) = 41.
  const std::vector<float> gradient(4096, 0.5f);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      LayerInspection layer,
      InspectGradient("u.npy", gradient, WithPolicy(KeepPolicy::kEntropy)));
  EXPECT_EQ(layer.name, "u.npy");
  EXPECT_EQ(layer.numel, 4096);
  EXPECT_EQ(layer.entropy.intervals, 256);
  EXPECT_NEAR(layer.entropy.entropy, std::log(256.0), 1e-12);
  EXPECT_NEAR(layer.entropy.normalized_entropy, 1.0, 1e-12);
  EXPECT_NEAR(layer.entropy.effective_fraction, 1.0, 1e-12);
  EXPECT_NEAR(layer.keep_ratio, 0.01, 1e-12);
  EXPECT_EQ(layer.k, 41);
  EXPECT_FALSE(layer.dense);
  // Ties go to the smaller index, so indices 0..40 are sent: 41 values of
  // 4 bytes = 164, plus
  //   raw_u32:      41 * 4            = 164 -> 328
  //   delta_varint: 41 one-byte gaps  =  41 -> 205
  //   bitmap:       4096 / 8          = 512 -> 676
  //   dense:        4096 * 4 values, no index bytes = 16384
  //   gap_range:    41 gaps of 1, each bucket 0, which the model soon
  //                 predicts: 4 code bytes + 8 renormalisations = 12 -> 176
  //                 (the coder's output, pinned: it is the wire format)
  EXPECT_THAT(layer.encoded_bytes, ElementsAre(328, 205, 676, 16384, 176));
  EXPECT_EQ(layer.auto_encoding, IndexEncoding::kGapRange);
}

TEST(InspectGradientTest, EqualsTheLibraryForEveryPerLayerPolicy) {
  const std::vector<float> gradient = SkewedGradient(10000, 7);
  for (KeepPolicy policy : {KeepPolicy::kEntropy, KeepPolicy::kTopK,
                            KeepPolicy::kThreshold, KeepPolicy::kDense}) {
    SCOPED_TRACE(KeepPolicyName(policy));
    CompressionOptions options = WithPolicy(policy);
    options.rho = 0.02;
    options.threshold = 1.5;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<LayerCompressor> compressor,
        LayerCompressor::Create(static_cast<int64_t>(gradient.size()),
                                options));
    CompressedLayer expected;
    ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, 0, &expected));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats entropy,
                                   ComputeIntervalEntropy(gradient, 256));

    ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection layer,
                                   InspectGradient("g", gradient, options));
    EXPECT_EQ(layer.k, expected.k);
    EXPECT_EQ(layer.keep_ratio, expected.keep_ratio);
    EXPECT_EQ(layer.dense, expected.dense);
    EXPECT_EQ(layer.entropy.entropy, expected.entropy.entropy);
    EXPECT_DOUBLE_EQ(layer.entropy.entropy, entropy.entropy);
    EXPECT_GT(layer.entropy.normalized_entropy, 0.5);
    EXPECT_LT(layer.entropy.normalized_entropy, 0.99);

    int64_t fewest = INT64_MAX;
    for (size_t e = 0; e < kIndexEncodingCount; ++e) {
      EncodeOptions encode;
      encode.index_encoding = kAllIndexEncodings[e];
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(
          EncodedPayload payload,
          expected.dense
              ? EncodeDense(expected.values, encode)
              : EncodeSparse(10000, expected.indices, expected.values, encode));
      EXPECT_EQ(layer.encoded_bytes[e], payload.WireBytes())
          << IndexEncodingName(kAllIndexEncodings[e]);
      fewest = std::min(fewest, payload.WireBytes());
    }
    EXPECT_EQ(layer.encoded_bytes[static_cast<size_t>(layer.auto_encoding) - 1],
              fewest);
  }
}

TEST(InspectGradientTest, PolicyValuesAreWhatTheSpecSays) {
  const std::vector<float> gradient = SkewedGradient(10000, 3);
  CompressionOptions options = WithPolicy(KeepPolicy::kTopK);
  options.rho = 0.02;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection topk,
                                 InspectGradient("g", gradient, options));
  EXPECT_EQ(topk.k, 200);  // round(0.02 * 10000), whatever the entropy

  options.policy = KeepPolicy::kEntropy;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection entropy,
                                 InspectGradient("g", gradient, options));
  EXPECT_EQ(entropy.k,
            std::llround(0.02 * entropy.entropy.effective_fraction * 10000));
  EXPECT_LT(entropy.k, topk.k);  // f < 1 for a skewed layer

  options.policy = KeepPolicy::kThreshold;
  options.threshold = 1.0;
  int64_t at_least = 0;
  for (float value : gradient) at_least += std::fabs(value) >= 1.0f;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection threshold,
                                 InspectGradient("g", gradient, options));
  EXPECT_EQ(threshold.k, at_least);
  EXPECT_DOUBLE_EQ(threshold.keep_ratio, at_least / 10000.0);

  options.policy = KeepPolicy::kDense;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection dense,
                                 InspectGradient("g", gradient, options));
  EXPECT_EQ(dense.k, 10000);
  EXPECT_TRUE(dense.dense);
  EXPECT_EQ(dense.encoded_bytes[kDense], 40000);
  EXPECT_EQ(dense.auto_encoding, IndexEncoding::kDense);
}

TEST(InspectGradientTest, SmallLayersGoDenseWithDenseBelow) {
  CompressionOptions options = WithPolicy(KeepPolicy::kEntropy);
  options.dense_below = 64;
  // 63 elements, one of them +0.0: dense, and the dense vector's sparse
  // encodings carry only the 62 nonzeros.
  std::vector<float> gradient(63, 1.0f);
  gradient[10] = 0.0f;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection layer,
                                 InspectGradient("b", gradient, options));
  EXPECT_TRUE(layer.dense);
  EXPECT_EQ(layer.k, 63);
  EXPECT_EQ(layer.keep_ratio, 1.0);
  EXPECT_EQ(layer.encoded_bytes[kRaw], 62 * 8);
  EXPECT_EQ(layer.encoded_bytes[kBitmap], 8 + 62 * 4);
  EXPECT_EQ(layer.encoded_bytes[kDense], 63 * 4);
  EXPECT_EQ(layer.auto_encoding, IndexEncoding::kDense);

  options.dense_below = 63;  // n < dense_below is false at n = 63
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(layer,
                                 InspectGradient("b", gradient, options));
  EXPECT_FALSE(layer.dense);
  EXPECT_EQ(layer.k, 1);  // round(0.01 * f * 63) is 0 or 1, clamped to 1
}

TEST(InspectGradientTest, AllZeroLayerSendsNothing) {
  const std::vector<float> gradient(1000, 0.0f);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      LayerInspection layer,
      InspectGradient("z", gradient, WithPolicy(KeepPolicy::kEntropy)));
  EXPECT_TRUE(layer.entropy.all_zero);
  EXPECT_EQ(layer.k, 0);
  EXPECT_THAT(layer.encoded_bytes, ElementsAre(0, 0, 125, 4000, 0));
  EXPECT_EQ(layer.auto_encoding, IndexEncoding::kRawU32);  // tie: first wins
}

TEST(InspectGradientTest, IntervalsFlagChangesTheEntropy) {
  const std::vector<float> gradient = SkewedGradient(4096, 11);
  CompressionOptions options = WithPolicy(KeepPolicy::kEntropy);
  options.intervals = 1;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection one,
                                 InspectGradient("g", gradient, options));
  EXPECT_EQ(one.entropy.intervals, 1);
  EXPECT_EQ(one.entropy.entropy, 0.0);
  EXPECT_EQ(one.entropy.normalized_entropy, 1.0);
  EXPECT_EQ(one.k, 41);
}

TEST(InspectGradientTest, RejectsWhatTheLibraryRejects) {
  EXPECT_THAT(
      InspectGradient("g", std::vector<float>(100, 1.0f),
                      WithPolicy(KeepPolicy::kEntropyBudget)),
      StatusIs(absl::StatusCode::kFailedPrecondition, "entropy_budget"));
  EXPECT_THAT(InspectGradient("g", {}, WithPolicy(KeepPolicy::kEntropy)),
              StatusIs(absl::StatusCode::kInvalidArgument, "numel = 0"));
  EXPECT_THAT(
      InspectGradient("g", {1.0f, NAN}, WithPolicy(KeepPolicy::kEntropy)),
      StatusIs(absl::StatusCode::kInvalidArgument, "non-finite"));
  EXPECT_THAT(InspectGradient("g", std::vector<float>(10, 1.0f),
                              WithPolicy(KeepPolicy::kEntropy), 11),
              StatusIs(absl::StatusCode::kInvalidArgument, "out of range"));
}

class InspectFilesTest : public ::testing::Test {
 protected:
  std::string Write(absl::string_view name, absl::string_view bytes) {
    return WriteFile(dir_.path(), name, bytes);
  }
  testing::ScopedTempDir dir_;
};

TEST_F(InspectFilesTest, InspectsFilesInOrderWithTheirBaseNames) {
  const std::vector<float> a = SkewedGradient(6000, 1);
  const std::vector<float> b = SkewedGradient(2048, 2);
  const std::vector<std::string> paths = {
      Write("a.npy", NpyFloat32(a, "(60, 100)")),
      Write("b.f32", Float32Bytes(b))};
  const CompressionOptions options = WithPolicy(KeepPolicy::kEntropy);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<LayerInspection> layers,
                                 InspectFiles(paths, options));
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].name, "a.npy");
  EXPECT_EQ(layers[1].name, "b.f32");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection direct_a,
                                 InspectGradient("a.npy", a, options));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(LayerInspection direct_b,
                                 InspectGradient("b.f32", b, options));
  EXPECT_EQ(layers[0].k, direct_a.k);
  EXPECT_EQ(layers[0].entropy.entropy, direct_a.entropy.entropy);
  EXPECT_EQ(layers[0].encoded_bytes, direct_a.encoded_bytes);
  EXPECT_EQ(layers[1].k, direct_b.k);
  EXPECT_EQ(layers[1].entropy.entropy, direct_b.entropy.entropy);
}

TEST_F(InspectFilesTest, BudgetPolicySharesTheDensityOverAllFiles) {
  const std::vector<std::vector<float>> gradients = {
      SkewedGradient(20000, 4), std::vector<float>(5000, 1.0f),
      SkewedGradient(9000, 5)};
  std::vector<std::string> paths;
  std::vector<BudgetLayer> budget_layers;
  int64_t total_numel = 0;
  for (size_t l = 0; l < gradients.size(); ++l) {
    paths.push_back(
        Write(absl::StrCat("l", l, ".f32"), Float32Bytes(gradients[l])));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                   ComputeIntervalEntropy(gradients[l], 256));
    const auto numel = static_cast<int64_t>(gradients[l].size());
    budget_layers.push_back({numel, stats.effective_fraction, stats.all_zero});
    total_numel += numel;
  }
  CompressionOptions options = WithPolicy(KeepPolicy::kEntropyBudget);
  options.budget_density = 0.01;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> expected,
                                 BudgetKeepCounts(budget_layers, 0.01));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<LayerInspection> layers,
                                 InspectFiles(paths, options));
  ASSERT_EQ(layers.size(), 3u);
  int64_t sent = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    EXPECT_EQ(layers[l].k, expected[l]) << l;
    EXPECT_DOUBLE_EQ(layers[l].keep_ratio,
                     static_cast<double>(expected[l]) / layers[l].numel);
    sent += layers[l].k;
  }
  EXPECT_NEAR(static_cast<double>(sent), 0.01 * total_numel, 3.0);
  // The uniform layer (f = 1) gets a larger share than its size alone.
  EXPECT_GT(static_cast<double>(layers[1].k) / 5000,
            static_cast<double>(layers[0].k) / 20000);
}

TEST_F(InspectFilesTest, BudgetPolicyLeavesSmallLayersOutAndDense) {
  const std::vector<float> big = SkewedGradient(10000, 6);
  const std::vector<float> small(100, 1.0f);
  const std::vector<std::string> paths = {
      Write("big.f32", Float32Bytes(big)),
      Write("small.f32", Float32Bytes(small))};
  CompressionOptions options = WithPolicy(KeepPolicy::kEntropyBudget);
  options.budget_density = 0.01;
  options.dense_below = 1000;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<LayerInspection> layers,
                                 InspectFiles(paths, options));
  // Only the big layer takes the budget: k = round(0.01 * 10000).
  EXPECT_EQ(layers[0].k, 100);
  EXPECT_FALSE(layers[0].dense);
  EXPECT_EQ(layers[1].k, 100);
  EXPECT_TRUE(layers[1].dense);
}

TEST_F(InspectFilesTest, FirstBadFileStopsWithItsPath) {
  const std::string good = Write("good.f32", Float32Bytes({1.0f, 2.0f}));
  const std::string bad = Write("bad.f32", Float32Bytes({1.0f, INFINITY}));
  for (KeepPolicy policy : {KeepPolicy::kEntropy, KeepPolicy::kEntropyBudget}) {
    EXPECT_THAT(InspectFiles({good, bad}, WithPolicy(policy)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(bad, ": holds a non-finite value")));
  }
}

}  // namespace
}  // namespace entrograd::cli
