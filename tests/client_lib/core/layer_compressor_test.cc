#include "entrograd/layer_compressor.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/base/casts.h"
#include "client_lib/core/reference.h"
#include "entrograd/keep_count.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;

std::vector<float> HeavyTailedGradient(int64_t n, std::mt19937& rng) {
  std::student_t_distribution<float> t(2.0f);
  std::vector<float> gradient(n);
  for (float& x : gradient) x = 1e-3f * t(rng);
  return gradient;
}

std::unique_ptr<LayerCompressor> MakeCompressor(int64_t n,
                                                const CompressionOptions& options) {
  auto compressor = LayerCompressor::Create(n, options);
  EXPECT_TRUE(compressor.ok()) << compressor.status();
  return std::move(compressor).value();
}

// Top-k at density `rho` with momentum correction (mu 0.9), every layer
// compressed.
CompressionOptions TopKWithMomentumCorrection(double rho) {
  CompressionOptions options;
  options.policy = KeepPolicy::kTopK;
  options.rho = rho;
  options.dense_below = 0;
  options.momentum_correction = true;
  options.momentum = 0.9;
  return options;
}

// Runs many steps and checks, at every step, ALGORITHM.md 5.1 and 5.5-5.6
// against an independent computation: A from the previous G and V, the
// selection equal to the sort reference, and conservation bitwise.
void CheckConservationOverSteps(const CompressionOptions& options, int64_t n,
                                int steps) {
  std::mt19937 rng(99);
  auto compressor = MakeCompressor(n, options);
  CompressedLayer out;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> gradient = HeavyTailedGradient(n, rng);
    const std::vector<float> residual_before(compressor->residual().begin(),
                                             compressor->residual().end());
    const std::vector<float> velocity_before(compressor->velocity().begin(),
                                             compressor->velocity().end());
    std::vector<float> accumulated(n);
    std::vector<float> velocity_after = velocity_before;
    const float mu = static_cast<float>(options.momentum);
    for (int64_t i = 0; i < n; ++i) {
      if (options.momentum_correction) {
        velocity_after[i] = mu * velocity_before[i] + gradient[i];
        accumulated[i] = residual_before[i] + velocity_after[i];
      } else {
        accumulated[i] = residual_before[i] + gradient[i];
      }
    }
    ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, step, &out));
    ASSERT_EQ(out.step, step);
    ASSERT_EQ(out.indices, reference::SelectBySort(accumulated, out.k));
    ASSERT_EQ(out.values.size(), out.indices.size());

    // Conservation, bitwise: G(after) with the sent values written back at
    // their indices is A(before).
    std::vector<float> rebuilt(compressor->residual().begin(),
                               compressor->residual().end());
    for (size_t j = 0; j < out.indices.size(); ++j) {
      ASSERT_EQ(rebuilt[out.indices[j]], 0.0f);
      rebuilt[out.indices[j]] = out.values[j];
    }
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(absl::bit_cast<uint32_t>(rebuilt[i]),
                absl::bit_cast<uint32_t>(accumulated[i]))
          << "step " << step << " i " << i;
    }
    if (options.momentum_correction) {
      for (uint32_t index : out.indices) velocity_after[index] = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(absl::bit_cast<uint32_t>(compressor->velocity()[i]),
                  absl::bit_cast<uint32_t>(velocity_after[i]));
      }
    } else {
      EXPECT_TRUE(compressor->velocity().empty());
    }
  }
}

TEST(LayerCompressorTest, ConservationHoldsBitwiseWithoutMomentum) {
  CompressionOptions options;
  options.rho = 0.01;
  options.dense_below = 0;
  CheckConservationOverSteps(options, 20011, 60);
}

TEST(LayerCompressorTest, ConservationAndMaskingHoldBitwiseWithMomentum) {
  CompressionOptions options;
  options.rho = 0.005;
  options.dense_below = 0;
  options.momentum_correction = true;
  options.momentum = 0.9;
  CheckConservationOverSteps(options, 20011, 60);
}

TEST(LayerCompressorTest, TopKPolicyConservationAndReference) {
  CompressionOptions options;
  options.policy = KeepPolicy::kTopK;
  options.rho = 0.001;
  options.dense_below = 0;
  options.momentum_correction = true;
  CheckConservationOverSteps(options, 65536 + 3, 20);
}

TEST(LayerCompressorTest, ReportsTheSameEntropyAsComputeIntervalEntropy) {
  std::mt19937 rng(5);
  for (int64_t n : {1, 255, 1000, 70001}) {
    CompressionOptions options;
    options.dense_below = 0;
    options.intervals = 256;
    auto compressor = MakeCompressor(n, options);
    const std::vector<float> gradient = HeavyTailedGradient(n, rng);
    CompressedLayer out;
    ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, 0, &out));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats expected,
                                   ComputeIntervalEntropy(gradient, 256));
    EXPECT_EQ(out.entropy.entropy, expected.entropy) << n;
    EXPECT_EQ(out.entropy.intervals, expected.intervals);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(KeepDecision decision,
                                   DecideKeepCount(expected, n, 0, options));
    EXPECT_EQ(out.k, decision.k);
    EXPECT_EQ(out.keep_ratio, decision.keep_ratio);
  }
}

TEST(LayerCompressorTest, SameInputsGiveIdenticalOutputs) {
  CompressionOptions options;
  options.dense_below = 0;
  options.momentum_correction = true;
  auto first = MakeCompressor(30000, options);
  auto second = MakeCompressor(30000, options);
  std::mt19937 rng(1);
  CompressedLayer out_first, out_second;
  for (int step = 0; step < 10; ++step) {
    const std::vector<float> gradient = HeavyTailedGradient(30000, rng);
    ENTROGRAD_ASSERT_OK(first->Compress(gradient, step, &out_first));
    ENTROGRAD_ASSERT_OK(second->Compress(gradient, step, &out_second));
    ASSERT_EQ(out_first.indices, out_second.indices);
    ASSERT_EQ(0, std::memcmp(out_first.values.data(), out_second.values.data(),
                             out_first.values.size() * sizeof(float)));
  }
}

TEST(LayerCompressorTest, SmallLayerIsSentDenseAndResidualCleared) {
  CompressionOptions options;  // dense_below = 1024
  options.momentum_correction = true;
  auto compressor = MakeCompressor(100, options);
  std::vector<float> gradient(100);
  for (int i = 0; i < 100; ++i) gradient[i] = 0.01f * (i - 50);
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, 0, &out));
  EXPECT_TRUE(out.dense);
  EXPECT_EQ(out.k, 100);
  EXPECT_TRUE(out.indices.empty());
  EXPECT_EQ(out.values, gradient);  // sent whole: A = u
  for (float g : compressor->residual()) EXPECT_EQ(g, 0.0f);
  for (float v : compressor->velocity()) EXPECT_EQ(v, 0.0f);
}

// ALGORITHM.md 5.1: a layer sent whole every step takes no part in momentum
// correction or the residual. It sends u itself, bitwise (-0.0 included,
// which 0 + (mu * 0 + u) would turn into +0.0), and G and V stay +0.0.
class SentWholeTest : public ::testing::TestWithParam<bool> {
 protected:
  // Sent whole through dense_below (GetParam() false) or the dense policy.
  CompressionOptions WholeOptions(bool momentum_correction) const {
    CompressionOptions options;
    options.momentum_correction = momentum_correction;
    options.momentum = 0.9;
    if (GetParam()) {
      options.policy = KeepPolicy::kDense;
      options.dense_below = 0;
    } else {
      options.dense_below = kNumel + 1;
    }
    return options;
  }

  // Signed zeros, denormals, the largest finite magnitude and heavy tails.
  static std::vector<float> Gradient(int step, std::mt19937& rng) {
    std::vector<float> gradient = HeavyTailedGradient(kNumel, rng);
    for (int64_t i = step % 7; i < kNumel; i += 7) gradient[i] = -0.0f;
    gradient[3] = std::numeric_limits<float>::denorm_min();
    gradient[4] = -std::numeric_limits<float>::max();
    return gradient;
  }

  static constexpr int64_t kNumel = 3000;
};

TEST_P(SentWholeTest, SendsExactlyTheGradientAndKeepsResidualAndVelocityZero) {
  for (bool momentum : {true, false}) {
    SCOPED_TRACE(momentum ? "momentum correction" : "plain");
    auto compressor = MakeCompressor(kNumel, WholeOptions(momentum));
    EXPECT_TRUE(compressor->sent_whole());
    std::mt19937 rng(17);
    for (int step = 0; step < 5; ++step) {
      SCOPED_TRACE(step);
      const std::vector<float> gradient = Gradient(step, rng);
      CompressedLayer out;
      ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, step, &out));
      EXPECT_TRUE(out.dense);
      EXPECT_EQ(out.k, kNumel);
      EXPECT_DOUBLE_EQ(out.keep_ratio, 1.0);
      EXPECT_TRUE(out.indices.empty());
      ASSERT_EQ(out.values.size(), gradient.size());
      for (int64_t i = 0; i < kNumel; ++i) {
        ASSERT_EQ(absl::bit_cast<uint32_t>(out.values[i]),
                  absl::bit_cast<uint32_t>(gradient[i]))
            << "element " << i;
      }
      ASSERT_EQ(compressor->residual().size(), static_cast<size_t>(kNumel));
      for (float g : compressor->residual())
        ASSERT_EQ(absl::bit_cast<uint32_t>(g), 0u);
      // V keeps its shape (the checkpoint's), all +0.0.
      ASSERT_EQ(compressor->velocity().size(),
                momentum ? static_cast<size_t>(kNumel) : 0u);
      for (float v : compressor->velocity())
        ASSERT_EQ(absl::bit_cast<uint32_t>(v), 0u);
    }
  }
}

TEST_P(SentWholeTest, TwoPhasesSendTheGradientWholeOnly) {
  auto compressor = MakeCompressor(kNumel, WholeOptions(true));
  std::mt19937 rng(18);
  const std::vector<float> gradient = Gradient(0, rng);
  ENTROGRAD_ASSERT_OK(compressor->Accumulate(gradient, kNumel / 10).status());
  CompressedLayer out;
  // Fewer than all entries would leave the rest in a residual it keeps not.
  EXPECT_THAT(compressor->SelectTopK(kNumel / 10, 0, 0.1, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, "sent whole"));
  ENTROGRAD_ASSERT_OK(compressor->SelectTopK(kNumel, 0, 1.0, &out));
  EXPECT_TRUE(out.dense);
  ASSERT_EQ(out.values.size(), gradient.size());
  for (int64_t i = 0; i < kNumel; ++i) {
    ASSERT_EQ(absl::bit_cast<uint32_t>(out.values[i]),
              absl::bit_cast<uint32_t>(gradient[i]))
        << "element " << i;
  }
  for (float v : compressor->velocity())
    ASSERT_EQ(absl::bit_cast<uint32_t>(v), 0u);
}

TEST_P(SentWholeTest, RestoreStateAcceptsOnlyZeros) {
  auto compressor = MakeCompressor(kNumel, WholeOptions(true));
  std::vector<float> residual(kNumel, 0.0f);
  std::vector<float> velocity(kNumel, 0.0f);
  residual[5] = -0.0f;  // zero either way
  ENTROGRAD_ASSERT_OK(compressor->RestoreState(residual, velocity));
  EXPECT_EQ(absl::bit_cast<uint32_t>(compressor->residual()[5]), 0u);
  velocity[1234] = 0.25f;
  EXPECT_THAT(compressor->RestoreState(residual, velocity),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "velocity of a layer sent whole"));
  velocity[1234] = 0.0f;
  residual[7] = 1e-30f;
  EXPECT_THAT(compressor->RestoreState(residual, velocity),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 7"));
  for (float g : compressor->residual()) ASSERT_EQ(g, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Whole, SentWholeTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("DensePolicy")
                                             : std::string("DenseBelow");
                         });

TEST(LayerCompressorTest, AllZeroGradientSendsNothingAndKeepsResidual) {
  CompressionOptions options;
  options.dense_below = 0;
  auto compressor = MakeCompressor(5000, options);
  std::mt19937 rng(3);
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(HeavyTailedGradient(5000, rng), 0, &out));
  const std::vector<float> residual(compressor->residual().begin(),
                                    compressor->residual().end());
  const std::vector<float> zeros(5000, 0.0f);
  ENTROGRAD_ASSERT_OK(compressor->Compress(zeros, 1, &out));
  EXPECT_EQ(out.k, 0);
  EXPECT_TRUE(out.indices.empty());
  EXPECT_TRUE(out.entropy.all_zero);
  // G <- A = G + 0: unchanged.
  EXPECT_EQ(std::vector<float>(compressor->residual().begin(),
                               compressor->residual().end()),
            residual);
}

TEST(LayerCompressorTest, ThresholdPolicySendsEveryEntryAtOrAboveTau) {
  CompressionOptions options;
  options.policy = KeepPolicy::kThreshold;
  options.threshold = 0.25;
  options.dense_below = 0;
  auto compressor = MakeCompressor(8, options);
  const std::vector<float> gradient = {0.1f, -0.25f, 0.3f, 0.0f, -1.0f, 0.2f, 0.24f, 0.25f};
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, 0, &out));
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{1, 2, 4, 7}));
  EXPECT_EQ(out.values, (std::vector<float>{-0.25f, 0.3f, -1.0f, 0.25f}));
  EXPECT_DOUBLE_EQ(out.keep_ratio, 4.0 / 8.0);
  // Residual keeps the rest; next step 0.1 + 0.2 = 0.3 and 0.2 + 0.05 >= 0.25
  // cross tau, 0.24 stays below.
  const std::vector<float> second = {0.2f, 0, 0, 0, 0, 0.05f, 0, 0};
  ENTROGRAD_ASSERT_OK(compressor->Compress(second, 1, &out));
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{0, 5}));
}

TEST(LayerCompressorTest, BudgetPolicyRunsInTwoPhases) {
  CompressionOptions options;
  options.policy = KeepPolicy::kEntropyBudget;
  options.budget_density = 0.01;
  options.dense_below = 0;
  std::mt19937 rng(8);
  std::vector<std::unique_ptr<LayerCompressor>> layers;
  layers.push_back(MakeCompressor(40000, options));
  layers.push_back(MakeCompressor(10000, options));
  CompressedLayer out;
  EXPECT_THAT(layers[0]->Compress(HeavyTailedGradient(40000, rng), 0, &out),
              StatusIs(absl::StatusCode::kFailedPrecondition, "BudgetKeepCounts"));
  std::vector<BudgetLayer> budget;
  for (auto& layer : layers) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        EntropyStats stats, layer->Accumulate(HeavyTailedGradient(layer->numel(), rng)));
    budget.push_back({layer->numel(), stats.effective_fraction, stats.all_zero});
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> keep,
                                 BudgetKeepCounts(budget, options.budget_density));
  int64_t sent = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    ENTROGRAD_ASSERT_OK(layers[l]->SelectTopK(keep[l], 0, 0.0, &out));
    EXPECT_EQ(out.k, keep[l]);
    sent += out.k;
  }
  EXPECT_LE(std::abs(sent - 500), 2);  // D * N = 0.01 * 50000
}

TEST(LayerCompressorTest, NonFiniteGradientIsRejectedAndChangesNothing) {
  CompressionOptions options;
  options.dense_below = 0;
  options.momentum_correction = true;
  auto compressor = MakeCompressor(3000, options);
  std::mt19937 rng(4);
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(HeavyTailedGradient(3000, rng), 0, &out));
  const std::vector<float> residual(compressor->residual().begin(),
                                    compressor->residual().end());
  const std::vector<float> velocity(compressor->velocity().begin(),
                                    compressor->velocity().end());
  std::vector<float> bad = HeavyTailedGradient(3000, rng);
  bad[1234] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(compressor->Compress(bad, 1, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 1234"));
  bad[1234] = std::numeric_limits<float>::infinity();
  EXPECT_THAT(compressor->Compress(bad, 1, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 1234"));
  EXPECT_EQ(std::vector<float>(compressor->residual().begin(),
                               compressor->residual().end()), residual);
  EXPECT_EQ(std::vector<float>(compressor->velocity().begin(),
                               compressor->velocity().end()), velocity);
  // And after the error a pending selection cannot be committed.
  EXPECT_THAT(compressor->SelectWithPolicy(1, &out),
              StatusIs(absl::StatusCode::kFailedPrecondition, "Accumulate"));
}

// A compressor of 2000 elements that sent element 0 of `gradient` at step 0
// and kept element 1 (2.9e38) in its residual: the same gradient again
// overflows A at element 1.
std::unique_ptr<LayerCompressor> CompressorAboutToOverflow(
    CompressionOptions options, std::vector<float>* gradient) {
  options.rho = 0.0005;  // k = round(0.0005 * 2000) = 1 (entropy: f <= 1)
  options.dense_below = 0;
  auto compressor = MakeCompressor(2000, options);
  gradient->assign(2000, 0.0f);
  (*gradient)[0] = 3.0e38f;
  (*gradient)[1] = 2.9e38f;
  CompressedLayer out;
  EXPECT_TRUE(compressor->Compress(*gradient, 0, &out).ok());
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{0}));
  return compressor;
}

TEST(LayerCompressorTest, OverflowingAccumulationIsRejectedAndChangesNothing) {
  CompressionOptions options;
  options.policy = KeepPolicy::kTopK;
  std::vector<float> gradient;
  auto compressor = CompressorAboutToOverflow(options, &gradient);
  CompressedLayer out;
  EXPECT_THAT(compressor->Compress(gradient, 1, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, "accumulated"));
  EXPECT_EQ(compressor->residual()[1], 2.9e38f);
  EXPECT_EQ(compressor->residual()[0], 0.0f);
}

// H over the means of |x| in m intervals (ALGORITHM.md 5.2-5.3), computed
// independently: plain sums in index order.
double ReferenceEntropy(const std::vector<float>& x, int64_t m) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<double> means(m, 0.0);
  double total = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t begin = i * n / m, end = (i + 1) * n / m;
    for (int64_t j = begin; j < end; ++j) {
      means[i] += std::fabs(static_cast<double>(x[j]));
    }
    means[i] /= static_cast<double>(end - begin);
    total += means[i];
  }
  double h = 0.0;
  for (double mean : means) {
    if (mean > 0) h -= (mean / total) * std::log(mean / total);
  }
  return h;
}

// EntropySource::kAccumulated: the entropy is of |A|, so a step whose fresh
// gradient is concentrated still measures the residual spread everywhere,
// and k follows it.
TEST(LayerCompressorTest, EntropyOfAccumulatedMeasuresTheResidualToo) {
  const int64_t n = 20011;
  const int64_t m = 256;
  CompressionOptions of_gradient;
  of_gradient.rho = 0.01;
  of_gradient.dense_below = 0;
  of_gradient.momentum_correction = true;
  CompressionOptions of_accumulated = of_gradient;
  of_accumulated.entropy_of = EntropySource::kAccumulated;
  auto measuring_a = MakeCompressor(n, of_accumulated);
  auto measuring_u = MakeCompressor(n, of_gradient);
  std::mt19937 rng(5);
  CompressedLayer out_a, out_u;

  // Step 0: G = V = 0, so A = u bitwise and both measure the same.
  std::vector<float> gradient = HeavyTailedGradient(n, rng);
  ENTROGRAD_ASSERT_OK(measuring_a->Compress(gradient, 0, &out_a));
  ENTROGRAD_ASSERT_OK(measuring_u->Compress(gradient, 0, &out_u));
  EXPECT_EQ(out_a.entropy.entropy, out_u.entropy.entropy);
  EXPECT_EQ(out_a.indices, out_u.indices);

  // Step 1: the fresh gradient covers the first tenth only.
  std::fill(gradient.begin(), gradient.end(), 0.0f);
  const std::vector<float> head = HeavyTailedGradient(n / 10, rng);
  std::copy(head.begin(), head.end(), gradient.begin());
  std::vector<float> accumulated(n);
  for (int64_t i = 0; i < n; ++i) {
    const float velocity = 0.9f * measuring_a->velocity()[i] + gradient[i];
    accumulated[i] = measuring_a->residual()[i] + velocity;
  }
  ENTROGRAD_ASSERT_OK(measuring_a->Compress(gradient, 1, &out_a));
  ENTROGRAD_ASSERT_OK(measuring_u->Compress(gradient, 1, &out_u));
  const double h_of_a = ReferenceEntropy(accumulated, m);
  EXPECT_NEAR(out_a.entropy.entropy, h_of_a, 1e-9 * h_of_a);
  EXPECT_NEAR(out_u.entropy.entropy, ReferenceEntropy(gradient, m), 1e-9);
  // The residual spreads A over every interval; u covers about 26 of 256.
  EXPECT_GT(out_a.entropy.entropy, out_u.entropy.entropy + 1.0);
  EXPECT_EQ(out_a.k, std::llround(0.01 * std::exp(h_of_a) / m * n));
  EXPECT_EQ(out_a.indices, reference::SelectBySort(accumulated, out_a.k));
}

TEST(LayerCompressorTest, ConservationHoldsBitwiseWithEntropyOfAccumulated) {
  CompressionOptions options;
  options.rho = 0.005;
  options.dense_below = 0;
  options.momentum_correction = true;
  options.entropy_of = EntropySource::kAccumulated;
  CheckConservationOverSteps(options, 20011, 30);
}

// Sums of |A| go non-finite when finite inputs overflow A: the error names
// A, not the gradient, and nothing changes.
TEST(LayerCompressorTest, OverflowUnderEntropyOfAccumulatedNamesA) {
  CompressionOptions options;
  options.entropy_of = EntropySource::kAccumulated;
  std::vector<float> gradient;
  auto compressor = CompressorAboutToOverflow(options, &gradient);
  CompressedLayer out;
  EXPECT_THAT(compressor->Compress(gradient, 1, &out),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "accumulated gradient (residual + gradient) holds a "
                       "non-finite value (inf) at element 1"));
  EXPECT_EQ(compressor->residual()[1], 2.9e38f);
  // A non-finite gradient is named first, as the CUDA path does, even where
  // A overflowed earlier in the layer.
  gradient[1999] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(
      compressor->Compress(gradient, 1, &out),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "gradient holds a non-finite value (nan) at element 1999"));
}

// share_hold_steps (ALGORITHM.md 5.4): the share of a window's first step
// decides k for the whole window; the entropy is still measured and
// reported every step, and the selection stays exact.
TEST(LayerCompressorTest, HeldShareDecidesKForTheWholeWindow) {
  const int64_t n = 20011;
  const int64_t m = 256;
  CompressionOptions options;
  options.rho = 0.01;
  options.dense_below = 0;
  options.momentum_correction = true;
  options.share_hold_steps = 4;
  auto held = MakeCompressor(n, options);
  std::mt19937 rng(17);
  auto k_of = [&](const EntropyStats& stats) {
    return std::llround(0.01 * std::exp(stats.entropy) / m * n);
  };
  EntropyStats window_first;
  for (int64_t step = 0; step < 9; ++step) {
    // Every other step the gradient covers a tenth of the layer only, so
    // the measured entropy swings by more than a nat from step to step.
    std::vector<float> gradient = HeavyTailedGradient(n, rng);
    if (step % 2 == 1) std::fill(gradient.begin() + n / 10, gradient.end(), 0.0f);
    std::vector<float> accumulated(n);
    for (int64_t i = 0; i < n; ++i) {
      accumulated[i] =
          held->residual()[i] + (0.9f * held->velocity()[i] + gradient[i]);
    }
    CompressedLayer out;
    ENTROGRAD_ASSERT_OK(held->Compress(gradient, step, &out));
    EXPECT_NEAR(out.entropy.entropy, ReferenceEntropy(gradient, m), 1e-9)
        << "step " << step;
    if (step % 4 == 0) window_first = out.entropy;
    EXPECT_EQ(out.k, k_of(window_first)) << "step " << step;
    EXPECT_EQ(out.indices, reference::SelectBySort(accumulated, out.k))
        << "step " << step;
    EXPECT_EQ(held->held_share().window, step / 4);
    EXPECT_EQ(held->held_share().effective_fraction,
              window_first.effective_fraction);
    if (step % 4 != 0) {
      // Not what this step's own entropy would have asked for.
      EXPECT_NE(out.k, k_of(out.entropy)) << "step " << step;
    }
  }
}

TEST(LayerCompressorTest, ConservationHoldsBitwiseWithAHeldShare) {
  CompressionOptions options;
  options.rho = 0.005;
  options.dense_below = 0;
  options.momentum_correction = true;
  options.share_hold_steps = 7;
  CheckConservationOverSteps(options, 20011, 30);
}

TEST(LayerCompressorTest, AFailedStepTakesNoNewShare) {
  CompressionOptions options;
  options.share_hold_steps = 2;
  std::vector<float> gradient;
  auto compressor = CompressorAboutToOverflow(options, &gradient);
  const HeldShare before = compressor->held_share();
  EXPECT_EQ(before.window, 0);
  CompressedLayer out;
  // Step 2 starts window 1, but A overflows: nothing commits.
  EXPECT_FALSE(compressor->Compress(gradient, 2, &out).ok());
  EXPECT_EQ(compressor->held_share().window, 0);
  EXPECT_EQ(compressor->held_share().effective_fraction,
            before.effective_fraction);
}

TEST(LayerCompressorTest, RestoreHeldShareValidates) {
  CompressionOptions options;
  options.share_hold_steps = 3;
  auto compressor = MakeCompressor(4096, options);
  ENTROGRAD_EXPECT_OK(compressor->RestoreHeldShare(HeldShare{5, 0.25}));
  EXPECT_THAT(compressor->RestoreHeldShare(HeldShare{6, 0.0}),
              StatusIs(absl::StatusCode::kInvalidArgument, "effective_fraction"));
  EXPECT_EQ(compressor->held_share().window, 5);
  EXPECT_EQ(compressor->held_share().effective_fraction, 0.25);
}

TEST(LayerCompressorTest, AnyKAfterAnyMaxKeepHintIsExact) {
  // The hint only decides whether the pass collects candidates; a k above
  // the hint, or a hint the sample misjudges, must still give the exact set.
  std::mt19937 rng(12);
  CompressionOptions options;
  options.dense_below = 0;
  for (reference::Shape shape : reference::kAllShapes) {
    const std::vector<float> gradient = reference::MakeValues(shape, 50000, 7);
    for (int64_t hint : {-1, 1, 10, 500, 49999}) {
      for (int64_t k : {1, 10, 11, 499, 500, 2000, 49999, 50000}) {
        auto compressor = MakeCompressor(50000, options);
        ENTROGRAD_ASSERT_OK(compressor->Accumulate(gradient, hint).status());
        CompressedLayer out;
        ENTROGRAD_ASSERT_OK(compressor->SelectTopK(k, 0, 0.0, &out));
        if (k == 50000) {
          EXPECT_TRUE(out.dense);
          continue;
        }
        ASSERT_EQ(out.indices, reference::SelectBySort(gradient, k))
            << "shape " << static_cast<int>(shape) << " hint " << hint << " k " << k;
      }
    }
  }
}

TEST(LayerCompressorTest, LargestLayersWork) {
  // 500M elements (2 GB per buffer): 64-bit sizes end to end. Too big for
  // the sort reference; checks that the selected entries are the largest.
  const int64_t n = 500'000'003;
  CompressionOptions options;
  options.policy = KeepPolicy::kTopK;
  options.rho = 1e-5;
  options.dense_below = 0;
  std::vector<float> gradient(n);
  uint64_t state = 1;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    gradient[i] = static_cast<float>(static_cast<int32_t>(state >> 32)) * 1e-12f;
  }
  auto compressor = MakeCompressor(n, options);
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, 0, &out));
  ASSERT_EQ(out.k, 5000);  // round(1e-5 * 500000003)
  ASSERT_TRUE(std::is_sorted(out.indices.begin(), out.indices.end()));
  float smallest_sent = INFINITY;
  for (size_t j = 0; j < out.indices.size(); ++j) {
    ASSERT_EQ(out.values[j], gradient[out.indices[j]]);
    smallest_sent = std::min(smallest_sent, std::fabs(out.values[j]));
  }
  float largest_kept = 0.0f;
  for (float g : compressor->residual()) largest_kept = std::max(largest_kept, std::fabs(g));
  EXPECT_LE(largest_kept, smallest_sent);
  EXPECT_GT(out.indices.back(), 400'000'000u);  // indices beyond 2^28 occur
}

TEST(LayerCompressorTest, RejectsBadCallsAndRestoresState) {
  CompressionOptions options;
  options.dense_below = 0;
  EXPECT_THAT(LayerCompressor::Create(0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, "numel"));
  options.rho = 2;
  EXPECT_THAT(LayerCompressor::Create(10, options),
              StatusIs(absl::StatusCode::kInvalidArgument, "rho"));
  options.rho = 0.01;
  auto compressor = MakeCompressor(10, options);
  CompressedLayer out;
  const std::vector<float> short_gradient(9, 1.0f);
  EXPECT_THAT(compressor->Compress(short_gradient, 0, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, "9 elements"));
  EXPECT_THAT(compressor->SelectTopK(1, 0, 0.1, &out),
              StatusIs(absl::StatusCode::kFailedPrecondition, "Accumulate"));
  const std::vector<float> gradient(10, 1.0f);
  ENTROGRAD_ASSERT_OK(compressor->Accumulate(gradient).status());
  EXPECT_THAT(compressor->SelectTopK(11, 0, 0.1, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, "k = 11"));

  std::vector<float> saved(10, 0.5f);
  ENTROGRAD_ASSERT_OK(compressor->RestoreState(saved, {}));
  EXPECT_EQ(compressor->residual()[3], 0.5f);
  const std::vector<float> velocity(10, 0.0f);
  EXPECT_THAT(compressor->RestoreState(saved, velocity),
              StatusIs(absl::StatusCode::kInvalidArgument, "velocity"));
  saved[2] = std::nanf("");
  EXPECT_THAT(compressor->RestoreState(saved, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 2"));
  EXPECT_EQ(compressor->residual()[2], 0.5f);
}

// Global top-k (ALGORITHM.md step 7, variant): putting back the entries the
// merged update left out makes G at those entries A before the selection,
// bit for bit; the entries that were applied stay zero; V stays masked.
TEST(LayerCompressorTest, KeepUnappliedRestoresASelectionBitwise) {
  const CompressionOptions options = TopKWithMomentumCorrection(0.01);
  constexpr int64_t kN = 5003;
  std::mt19937 rng(12);
  auto compressor = MakeCompressor(kN, options);
  CompressedLayer out;
  // Two steps, so that G and V are not zero before the one checked.
  ENTROGRAD_ASSERT_OK(compressor->Compress(HeavyTailedGradient(kN, rng), 0, &out));
  ENTROGRAD_ASSERT_OK(compressor->Compress(HeavyTailedGradient(kN, rng), 1, &out));
  ASSERT_EQ(out.indices.size(), 50u);  // round(0.01 * 5003)
  const std::vector<float> residual_after(compressor->residual().begin(),
                                          compressor->residual().end());
  const std::vector<float> velocity_after(compressor->velocity().begin(),
                                          compressor->velocity().end());
  // The odd positions of the selection were left out of the merge.
  std::vector<uint32_t> unapplied_indices;
  std::vector<float> unapplied_values;
  for (size_t j = 1; j < out.indices.size(); j += 2) {
    unapplied_indices.push_back(out.indices[j]);
    unapplied_values.push_back(out.values[j]);
  }
  ENTROGRAD_ASSERT_OK(
      compressor->KeepUnapplied(unapplied_indices, unapplied_values));
  std::vector<float> want = residual_after;
  for (size_t j = 0; j < out.indices.size(); ++j) {
    EXPECT_EQ(residual_after[out.indices[j]], 0.0f);
    if (j % 2 == 1) want[out.indices[j]] = out.values[j];
  }
  EXPECT_EQ(0, std::memcmp(compressor->residual().data(), want.data(),
                           want.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(compressor->velocity().data(), velocity_after.data(),
                           velocity_after.size() * sizeof(float)));
}

TEST(LayerCompressorTest, KeepUnappliedRejectsBadEntriesAndChangesNothing) {
  CompressionOptions options;
  options.rho = 0.01;
  options.dense_below = 0;
  auto compressor = MakeCompressor(100, options);
  std::mt19937 rng(3);
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(HeavyTailedGradient(100, rng), 0, &out));
  const std::vector<float> before(compressor->residual().begin(),
                                  compressor->residual().end());
  const float huge = std::numeric_limits<float>::max();
  struct Bad {
    std::vector<uint32_t> indices;
    std::vector<float> values;
    const char* names;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{1, 2}, {1.0f}, "2 indices but 1 values"},
           {{5, 5}, {1.0f, 1.0f}, "not above the one before"},
           {{3, 100}, {1.0f, 1.0f}, "not below numel"},
           {{4}, {std::nanf("")}, "not finite"},
           {{4, 7}, {1.0f, std::numeric_limits<float>::infinity()}, "not finite"},
       }) {
    EXPECT_THAT(compressor->KeepUnapplied(bad.indices, bad.values),
                StatusIs(absl::StatusCode::kInvalidArgument, bad.names));
  }
  // A sum that overflows: put huge back twice at the same index.
  ENTROGRAD_ASSERT_OK(compressor->KeepUnapplied({9}, {huge}));
  EXPECT_THAT(compressor->KeepUnapplied({9}, {huge}),
              StatusIs(absl::StatusCode::kInvalidArgument, "not finite"));
  std::vector<float> want = before;
  want[9] = before[9] + huge;
  EXPECT_EQ(0, std::memcmp(compressor->residual().data(), want.data(),
                           want.size() * sizeof(float)));
  // Pending accumulation, and a layer sent whole.
  ENTROGRAD_ASSERT_OK(compressor->Accumulate(HeavyTailedGradient(100, rng)).status());
  EXPECT_THAT(compressor->KeepUnapplied({1}, {1.0f}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "pending"));
  options.dense_below = 1000;
  auto whole = MakeCompressor(100, options);
  EXPECT_THAT(whole->KeepUnapplied({1}, {1.0f}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "sent whole"));
}

// Update-space accumulation (DistributedOptimizerOptions::
// accumulate_in_update_space): ScaleState multiplies every element of G and
// V by the factor in double and rounds once to float32, and the next step
// accumulates on the scaled state.
TEST(LayerCompressorTest, ScaleStateScalesResidualAndVelocityExactly) {
  const CompressionOptions options = TopKWithMomentumCorrection(0.01);
  constexpr int64_t kN = 4001;
  constexpr double kFactor = 0.03 / 0.0291;  // a cosine step's a / b
  std::mt19937 rng(21);
  auto compressor = MakeCompressor(kN, options);
  CompressedLayer out;
  ENTROGRAD_ASSERT_OK(compressor->Compress(HeavyTailedGradient(kN, rng), 0, &out));
  const std::vector<float> residual(compressor->residual().begin(),
                                    compressor->residual().end());
  const std::vector<float> velocity(compressor->velocity().begin(),
                                    compressor->velocity().end());
  ENTROGRAD_ASSERT_OK(compressor->ScaleState(kFactor));
  int64_t changed = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const float want_g = static_cast<float>(double{residual[i]} * kFactor);
    const float want_v = static_cast<float>(double{velocity[i]} * kFactor);
    ASSERT_EQ(absl::bit_cast<uint32_t>(compressor->residual()[i]),
              absl::bit_cast<uint32_t>(want_g)) << "G[" << i << "]";
    ASSERT_EQ(absl::bit_cast<uint32_t>(compressor->velocity()[i]),
              absl::bit_cast<uint32_t>(want_v)) << "V[" << i << "]";
    changed += compressor->residual()[i] != residual[i];
  }
  EXPECT_GT(changed, kN / 2);

  // The next step starts from the scaled state: A = G' + (mu V' + u).
  const std::vector<float> scaled_g(compressor->residual().begin(),
                                    compressor->residual().end());
  const std::vector<float> scaled_v(compressor->velocity().begin(),
                                    compressor->velocity().end());
  const std::vector<float> gradient = HeavyTailedGradient(kN, rng);
  ENTROGRAD_ASSERT_OK(compressor->Compress(gradient, 1, &out));
  for (size_t j = 0; j < out.indices.size(); ++j) {
    const uint32_t i = out.indices[j];
    const float v = 0.9f * scaled_v[i] + gradient[i];
    ASSERT_EQ(out.values[j], scaled_g[i] + v) << "entry " << i;
  }
}

TEST(LayerCompressorTest, ScaleStateRejectsBadCallsAndChangesNothing) {
  const CompressionOptions options = TopKWithMomentumCorrection(0.1);
  auto compressor = MakeCompressor(10, options);
  std::vector<float> residual(10, 0.5f);
  residual[7] = 3e38f;
  const std::vector<float> velocity(10, 0.25f);
  ENTROGRAD_ASSERT_OK(compressor->RestoreState(residual, velocity));
  for (double bad : {0.0, -2.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(compressor->ScaleState(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "scale factor"));
  }
  // 3e38 * 2 overflows float32: refused, naming the element, G unchanged.
  EXPECT_THAT(compressor->CheckScaleState(2.0),
              StatusIs(absl::StatusCode::kInvalidArgument, "residual[7]"));
  EXPECT_THAT(compressor->ScaleState(2.0),
              StatusIs(absl::StatusCode::kInvalidArgument, "residual[7]"));
  EXPECT_EQ(compressor->residual()[0], 0.5f);
  EXPECT_EQ(compressor->velocity()[0], 0.25f);
  ENTROGRAD_ASSERT_OK(compressor->ScaleState(0.5));
  EXPECT_EQ(compressor->residual()[0], 0.25f);
  EXPECT_EQ(compressor->velocity()[0], 0.125f);
  // Between Accumulate and Select the pending A was formed from the old G.
  ENTROGRAD_ASSERT_OK(compressor->Accumulate(std::vector<float>(10, 1.0f)).status());
  EXPECT_THAT(compressor->ScaleState(0.5),
              StatusIs(absl::StatusCode::kFailedPrecondition, "pending"));
  EXPECT_EQ(compressor->residual()[0], 0.25f);
}

}  // namespace
}  // namespace entrograd
