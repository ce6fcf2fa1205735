// Bad input to the CUDA compressor: NaN/Inf gradients, an accumulation that
// overflows, null pointers, k out of range, calls out of order, workspaces
// that are too small. Each error must have the CPU reference's code (naming
// the same element where the CPU names one) and leave G and V bitwise as
// they were (docs/DESIGN.md "Bad input changes no state"). Without a CUDA device
// every test skips.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "client_lib/cuda/cuda_test_support.h"
#include "client_lib/cuda/parity_harness.h"
#include "entrograd/compression_options.h"
#include "entrograd/cuda/device_compressor.h"
#include "entrograd/keep_count.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::cuda_test {
namespace {

using cuda::GradientType;
using ::entrograd::testing::StatusIs;

constexpr int64_t kMillionPlus3 = 1000003;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNearMax = 3e38f;  // twice this overflows float

CompressionOptions Options(bool momentum) {
  CompressionOptions options;
  options.momentum_correction = momentum;
  options.dense_below = 0;
  return options;
}

struct State {
  std::vector<float> residual;
  std::vector<float> velocity;
};

State Snapshot(ParityHarness& harness) {
  State state;
  EXPECT_THAT(harness.DeviceState(&state.residual, &state.velocity),
              ::entrograd::testing::IsOk());
  return state;
}

// G and V are bitwise what they were in `before`.
::testing::AssertionResult Unchanged(ParityHarness& harness,
                                     const State& before) {
  const State now = Snapshot(harness);
  if (auto same = BitwiseEqual(before.residual, now.residual, "residual G");
      !same) {
    return same;
  }
  return BitwiseEqual(before.velocity, now.velocity, "velocity V");
}

// One ordinary step, so that the state an error must preserve is not zero.
void GoodStep(ParityHarness& harness, int64_t step, GradientType type) {
  const TestGradient gradient =
      MakeGradient(Shape::kStudentT, harness.numel(), 500 + step, type);
  ASSERT_TRUE(harness.Accumulate(gradient));
  const int64_t k = std::max<int64_t>(1, harness.numel() / 100);
  ASSERT_TRUE(harness.SelectTopK(k, step, 0.01));
}

// --- NaN and Inf in the gradient. --------------------------------------------

struct NonFiniteCase {
  GradientType type;
  int64_t numel;
  bool momentum;
};

std::string CaseName(const NonFiniteCase& c) {
  const char* type = c.type == GradientType::kFloat32   ? "F32"
                     : c.type == GradientType::kFloat16 ? "F16"
                                                        : "BF16";
  return absl::StrCat(type, "_n", c.numel, c.momentum ? "_Momentum" : "_Plain");
}
// gtest prints parameters in test listings, and ctest names tests after
// them: print the case name, not the struct's bytes (padding included).
void PrintTo(const NonFiniteCase& c, std::ostream* os) { *os << CaseName(c); }

class NonFiniteGradientTest
    : public CudaDeviceTest,
      public ::testing::WithParamInterface<NonFiniteCase> {};

TEST_P(NonFiniteGradientTest, RejectedNamingTheFirstAndStateUnchanged) {
  const NonFiniteCase& c = GetParam();
  const int64_t n = c.numel;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness, ParityHarness::Create(n, Options(c.momentum), stream()));
  // Planted positions; the error must name the smallest. Several positions
  // in different intervals and tiles catch a "first" that is really "any".
  const std::vector<std::vector<int64_t>> plantings = {
      {0}, {n - 1}, {n - 1, n / 2, n / 3}, {n / 3 + 1, n / 3}};
  const float bad_values[] = {kNaN, kInf, -kInf};
  int64_t step = 0;
  for (size_t p = 0; p < plantings.size(); ++p) {
    for (float bad : bad_values) {
      SCOPED_TRACE(absl::StrCat("planting ", p, ", value ", bad));
      ASSERT_NO_FATAL_FAILURE(GoodStep(*harness, step++, c.type));
      const State before = Snapshot(*harness);
      TestGradient gradient =
          MakeGradient(Shape::kNormal, n, 600 + step, c.type);
      int64_t first = n;
      for (int64_t i : plantings[p]) {
        if (i >= n) continue;  // n = 1 has only element 0
        gradient.Set(i, bad);
        first = std::min(first, i);
      }
      ASSERT_TRUE(harness->Accumulate(gradient));  // statuses agree
      EXPECT_THAT(harness->device_status(),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           absl::StrCat("element ", first)));
      EXPECT_TRUE(
          NamesElement(std::string(harness->device_status().message()), first))
          << harness->device_status();
      EXPECT_TRUE(Unchanged(*harness, before));
      // Nothing is pending after the failed accumulation.
      ASSERT_TRUE(harness->SelectTopK(1, step, 0.0));
      EXPECT_THAT(harness->device_status(),
                  StatusIs(absl::StatusCode::kFailedPrecondition, ""));
      EXPECT_TRUE(Unchanged(*harness, before));
    }
  }
  // And the compressors still agree afterwards.
  ASSERT_NO_FATAL_FAILURE(GoodStep(*harness, step, c.type));
}

std::vector<NonFiniteCase> NonFiniteCases() {
  std::vector<NonFiniteCase> cases;
  for (GradientType type : {GradientType::kFloat32, GradientType::kFloat16,
                            GradientType::kBFloat16}) {
    for (int64_t n : {int64_t{1}, int64_t{257}, kMillionPlus3}) {
      cases.push_back({type, n, false});
      cases.push_back({type, n, true});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NonFiniteGradientTest, ::testing::ValuesIn(NonFiniteCases()),
    [](const ::testing::TestParamInfo<NonFiniteCase>& info) {
      return CaseName(info.param);
    });

// --- A finite gradient whose accumulation overflows to Inf. -----------------

struct OverflowCase {
  int64_t numel;
  bool momentum;
};

std::string CaseName(const OverflowCase& c) {
  return absl::StrCat("n", c.numel, c.momentum ? "_Momentum" : "_Plain");
}
void PrintTo(const OverflowCase& c, std::ostream* os) { *os << CaseName(c); }

class OverflowTest : public CudaDeviceTest,
                     public ::testing::WithParamInterface<OverflowCase> {
 protected:
  // A harness whose G (or V) holds kNearMax at two places and a gradient
  // that pushes both past the float range: A is +Inf at n/4 and -Inf at n/2.
  void Prepare(const CompressionOptions& options,
               std::unique_ptr<ParityHarness>* harness,
               TestGradient* gradient) {
    const int64_t n = GetParam().numel;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(*harness,
                                   ParityHarness::Create(n, options, stream()));
    std::vector<float> residual = MakeValues(Shape::kNormal, n, 700);
    std::vector<float> velocity;
    if (options.momentum_correction) {
      velocity = MakeValues(Shape::kNormal, n, 701);
      velocity[n / 4] = kNearMax;  // V' = 0.9 V + u overflows
      velocity[n / 2] = -kNearMax;
    } else {
      residual[n / 4] = kNearMax;
      residual[n / 2] = -kNearMax;
    }
    ASSERT_TRUE((*harness)->RestoreState(residual, velocity));
    *gradient = MakeGradient(Shape::kNormal, n, 702, GradientType::kFloat32);
    gradient->Set(n / 4, kNearMax);
    gradient->Set(n / 2, -kNearMax);
    first_ = n / 4;
  }

  void ExpectRejected(ParityHarness& harness) {
    EXPECT_THAT(harness.device_status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("element ", first_)));
  }

  int64_t first_ = 0;
};

TEST_P(OverflowTest, EveryExplicitKIsRejectedAndStateUnchanged) {
  const int64_t n = GetParam().numel;
  std::unique_ptr<ParityHarness> harness;
  TestGradient gradient;
  ASSERT_NO_FATAL_FAILURE(
      Prepare(Options(GetParam().momentum), &harness, &gradient));
  const State before = Snapshot(*harness);
  // The gradient itself is finite: Accumulate succeeds on both.
  ASSERT_TRUE(harness->Accumulate(gradient));
  ENTROGRAD_ASSERT_OK(harness->device_status());
  for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{10}, n / 2, n - 1, n}) {
    SCOPED_TRACE(absl::StrCat("k ", k));
    ASSERT_TRUE(harness->SelectTopK(k, 0, 0.01));
    ExpectRejected(*harness);
    EXPECT_TRUE(Unchanged(*harness, before));
  }
}

TEST_P(OverflowTest, EveryPolicyIsRejectedAndStateUnchanged) {
  // Not kDense: a layer sent whole keeps no G or V to overflow (A = u, finite
  // whenever u is), and refuses the nonzero state Prepare restores.
  for (KeepPolicy policy :
       {KeepPolicy::kEntropy, KeepPolicy::kTopK, KeepPolicy::kThreshold}) {
    SCOPED_TRACE(KeepPolicyName(policy));
    CompressionOptions options = Options(GetParam().momentum);
    options.policy = policy;
    std::unique_ptr<ParityHarness> harness;
    TestGradient gradient;
    ASSERT_NO_FATAL_FAILURE(Prepare(options, &harness, &gradient));
    const State before = Snapshot(*harness);
    ASSERT_TRUE(harness->Accumulate(gradient));
    ASSERT_TRUE(harness->SelectWithPolicy(0));
    ExpectRejected(*harness);
    EXPECT_TRUE(Unchanged(*harness, before));
    ASSERT_TRUE(harness->Compress(gradient, 0));
    ExpectRejected(*harness);
    EXPECT_TRUE(Unchanged(*harness, before));
  }
}

TEST_P(OverflowTest, EntropyOfAccumulatedIsRejectedInAccumulate) {
  // The sums of |A| are not finite: there is no entropy to choose k from,
  // so Accumulate itself fails, naming A, on both paths.
  CompressionOptions options = Options(GetParam().momentum);
  options.entropy_of = EntropySource::kAccumulated;
  std::unique_ptr<ParityHarness> harness;
  TestGradient gradient;
  ASSERT_NO_FATAL_FAILURE(Prepare(options, &harness, &gradient));
  const State before = Snapshot(*harness);
  ASSERT_TRUE(harness->Accumulate(gradient));
  ExpectRejected(*harness);
  EXPECT_THAT(harness->device_status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "accumulated"));
  EXPECT_TRUE(Unchanged(*harness, before));
  ASSERT_TRUE(harness->Compress(gradient, 0));
  ExpectRejected(*harness);
  EXPECT_TRUE(Unchanged(*harness, before));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OverflowTest,
    ::testing::Values(OverflowCase{1000, false}, OverflowCase{1000, true},
                      OverflowCase{kMillionPlus3, false},
                      OverflowCase{kMillionPlus3, true}),
    [](const ::testing::TestParamInfo<OverflowCase>& info) {
      return CaseName(info.param);
    });

// --- Calls that are wrong in themselves. -------------------------------------

class DeviceBadCallTest : public CudaDeviceTest {};

TEST_F(DeviceBadCallTest, NullGradientIsRejectedAndStateUnchanged) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness, ParityHarness::Create(4097, Options(true), stream()));
  ASSERT_NO_FATAL_FAILURE(GoodStep(*harness, 0, GradientType::kFloat32));
  const State before = Snapshot(*harness);
  for (GradientType type : {GradientType::kFloat32, GradientType::kFloat16,
                            GradientType::kBFloat16}) {
    EXPECT_THAT(harness->device().Accumulate(nullptr, type, stream()),
                StatusIs(absl::StatusCode::kInvalidArgument, "null"));
    cuda::DeviceCompressedLayer out;
    EXPECT_THAT(harness->device().Compress(nullptr, type, 1, stream(), &out),
                StatusIs(absl::StatusCode::kInvalidArgument, "null"));
    EXPECT_THAT(harness->device().SelectTopK(1, 1, 0.0, stream(), &out),
                StatusIs(absl::StatusCode::kFailedPrecondition, ""));
    EXPECT_TRUE(Unchanged(*harness, before));
  }
}

TEST_F(DeviceBadCallTest, KOutOfRangeIsRejectedAndTheAccumulationKept) {
  const int64_t n = 65537;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness, ParityHarness::Create(n, Options(true), stream()));
  ASSERT_NO_FATAL_FAILURE(GoodStep(*harness, 0, GradientType::kFloat32));
  const State before = Snapshot(*harness);
  ASSERT_TRUE(harness->Accumulate(
      MakeGradient(Shape::kStudentT, n, 800, GradientType::kFloat32)));
  for (int64_t k : {int64_t{-1}, n + 1, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    SCOPED_TRACE(absl::StrCat("k ", k));
    ASSERT_TRUE(harness->SelectTopK(k, 1, 0.01));
    EXPECT_THAT(harness->device_status(),
                StatusIs(absl::StatusCode::kInvalidArgument, "out of range"));
    EXPECT_TRUE(Unchanged(*harness, before));
  }
  // As on the CPU, the pending accumulation survives a rejected k.
  ASSERT_TRUE(harness->SelectTopK(655, 1, 0.01));
  ENTROGRAD_EXPECT_OK(harness->device_status());
}

TEST_F(DeviceBadCallTest, SelectWithoutPendingAccumulateFails) {
  const int64_t n = 4097;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness, ParityHarness::Create(n, Options(true), stream()));
  auto expect_no_pending = [&](const char* when) {
    SCOPED_TRACE(when);
    ASSERT_TRUE(harness->SelectTopK(1, 0, 0.0));
    EXPECT_THAT(harness->device_status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "Accumulate"));
    ASSERT_TRUE(harness->SelectWithPolicy(0));
    EXPECT_THAT(harness->device_status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "Accumulate"));
  };
  expect_no_pending("fresh compressor");
  ASSERT_NO_FATAL_FAILURE(GoodStep(*harness, 0, GradientType::kFloat32));
  expect_no_pending("after a select");
  ASSERT_TRUE(harness->Accumulate(
      MakeGradient(Shape::kNormal, n, 810, GradientType::kFloat32)));
  harness->DiscardPending();
  expect_no_pending("after DiscardPending");
  ASSERT_TRUE(harness->Accumulate(
      MakeGradient(Shape::kNormal, n, 811, GradientType::kFloat32)));
  ASSERT_TRUE(harness->RestoreState(std::vector<float>(n, 0.5f),
                                    std::vector<float>(n, -0.25f)));
  expect_no_pending("after RestoreState");
}

TEST_F(DeviceBadCallTest, EntropyBudgetNeedsTheTwoPhases) {
  const int64_t n = 65537;
  CompressionOptions options = Options(false);
  options.policy = KeepPolicy::kEntropyBudget;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto harness,
                                 ParityHarness::Create(n, options, stream()));
  const TestGradient gradient =
      MakeGradient(Shape::kStudentT, n, 820, GradientType::kFloat32);
  ASSERT_TRUE(harness->Compress(gradient, 0));
  EXPECT_THAT(
      harness->device_status(),
      StatusIs(absl::StatusCode::kFailedPrecondition, "entropy_budget"));
  ASSERT_TRUE(harness->Accumulate(gradient));
  ASSERT_TRUE(harness->SelectWithPolicy(0));
  EXPECT_THAT(harness->device_status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  // The budget's k for this one layer, from the CPU's entropy, as a caller
  // would compute it; then the explicit selection matches.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 harness->cpu().Accumulate(gradient.widened));
  harness->cpu().DiscardPending();
  const BudgetLayer layer{n, stats.effective_fraction, stats.all_zero};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<int64_t> ks,
      BudgetKeepCounts(absl::MakeConstSpan(&layer, 1), options.budget_density));
  ASSERT_TRUE(harness->Accumulate(gradient));
  ASSERT_TRUE(harness->SelectTopK(ks[0], 0, options.budget_density));
  ENTROGRAD_EXPECT_OK(harness->device_status());
}

TEST_F(DeviceBadCallTest, RestoreStateRejectsWhatTheCpuRejects) {
  const int64_t n = 1000;
  for (bool momentum : {false, true}) {
    SCOPED_TRACE(momentum ? "momentum" : "plain");
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto harness, ParityHarness::Create(n, Options(momentum), stream()));
    ASSERT_NO_FATAL_FAILURE(GoodStep(*harness, 0, GradientType::kFloat32));
    const State before = Snapshot(*harness);
    const std::vector<float> good(n, 0.125f);
    const std::vector<float> velocity = momentum ? good : std::vector<float>();
    std::vector<float> nan_residual = good;
    nan_residual[417] = kNaN;
    std::vector<float> inf_velocity(n, 0.0f);
    inf_velocity[998] = -kInf;
    auto expect_rejected = [&](const char* what, const std::vector<float>& g,
                               const std::vector<float>& v, int64_t element) {
      SCOPED_TRACE(what);
      ASSERT_TRUE(harness->RestoreState(g, v));  // statuses agree
      EXPECT_EQ(harness->device_status().code(),
                absl::StatusCode::kInvalidArgument)
          << harness->device_status();
      if (element >= 0) {
        EXPECT_TRUE(NamesElement(
            std::string(harness->device_status().message()), element))
            << harness->device_status();
      }
      EXPECT_TRUE(Unchanged(*harness, before));
    };
    expect_rejected("short residual", std::vector<float>(n - 1), velocity, -1);
    expect_rejected("long velocity", good, std::vector<float>(n + 1), -1);
    expect_rejected("NaN residual", nan_residual, velocity, 417);
    if (momentum) {
      expect_rejected("-Inf velocity", good, inf_velocity, 998);
    } else {
      expect_rejected("velocity without momentum", good, good, -1);
    }
  }
}

// --- Creation: sizes, options and workspaces. --------------------------------

class DeviceCreateTest : public CudaDeviceTest {};

TEST_F(DeviceCreateTest, RejectsBadSizesAndOptions) {
  const CompressionOptions options;
  for (int64_t n : {int64_t{0}, int64_t{-1}, int64_t{1} << 32}) {
    EXPECT_THAT(cuda::DeviceLayerCompressor::Create(n, options),
                StatusIs(absl::StatusCode::kInvalidArgument, "numel"));
  }
  CompressionOptions bad_rho;
  bad_rho.rho = 0.0;
  EXPECT_THAT(cuda::DeviceLayerCompressor::Create(1000, bad_rho),
              StatusIs(absl::StatusCode::kInvalidArgument, "rho"));
  CompressionOptions bad_momentum;
  bad_momentum.momentum_correction = true;
  bad_momentum.momentum = 1.0;
  EXPECT_THAT(cuda::DeviceLayerCompressor::Create(1000, bad_momentum),
              StatusIs(absl::StatusCode::kInvalidArgument, "momentum"));
  EXPECT_THAT(cuda::DeviceWorkspace::Create(0, 256),
              StatusIs(absl::StatusCode::kInvalidArgument, "max_numel"));
  EXPECT_THAT(cuda::DeviceWorkspace::Create(int64_t{1} << 32, 256),
              StatusIs(absl::StatusCode::kInvalidArgument, "max_numel"));
  EXPECT_THAT(cuda::DeviceWorkspace::Create(1000, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "max_intervals"));
}

TEST_F(DeviceCreateTest, WorkspaceMustCoverTheLayer) {
  const CompressionOptions options;  // M = 256
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto workspace,
                                 cuda::DeviceWorkspace::Create(1000, 256));
  EXPECT_THAT(cuda::DeviceLayerCompressor::Create(1001, options, workspace),
              StatusIs(absl::StatusCode::kInvalidArgument, "workspace"));
  ENTROGRAD_EXPECT_OK(
      cuda::DeviceLayerCompressor::Create(1000, options, workspace));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto few_intervals,
                                 cuda::DeviceWorkspace::Create(100000, 16));
  EXPECT_THAT(cuda::DeviceLayerCompressor::Create(1000, options, few_intervals),
              StatusIs(absl::StatusCode::kInvalidArgument, "workspace"));
  // m = min(M, n) = 10 intervals fit in 16.
  ENTROGRAD_EXPECT_OK(
      cuda::DeviceLayerCompressor::Create(10, options, few_intervals));
}

}  // namespace
}  // namespace entrograd::cuda_test
