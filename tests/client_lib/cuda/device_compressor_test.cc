// Parity of the CUDA compressor with the CPU reference (ALGORITHM.md "CPU
// and CUDA agree"): the same gradients go to LayerCompressor and
// DeviceLayerCompressor, step after step, and ParityHarness checks after
// every call the same k, indices, bitwise values, bitwise G and V, and the
// entropy to 1e-6 relative. Without a CUDA device every test skips.
#include "entrograd/cuda/device_compressor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client_lib/cuda/cuda_test_support.h"
#include "client_lib/cuda/parity_harness.h"
#include "entrograd/compression_options.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::cuda_test {
namespace {

using cuda::GradientType;

constexpr int64_t kMillionPlus3 = 1000003;
constexpr int64_t k25M = 25000000;

const char* TypeName(GradientType type) {
  switch (type) {
    case GradientType::kFloat32:
      return "F32";
    case GradientType::kFloat16:
      return "F16";
    case GradientType::kBFloat16:
      return "BF16";
  }
  return "?";
}

// Every layer size is selected from: a layer sent whole (dense_below) takes
// only k = n. The policy cases set dense_below themselves.
CompressionOptions Options(bool momentum) {
  CompressionOptions options;
  options.momentum_correction = momentum;
  options.momentum = 0.9;
  options.dense_below = 0;
  return options;
}

// The k of successive steps: every boundary case of [0, n], in an order
// that leaves a residual behind before the large selections.
std::vector<int64_t> KSweep(int64_t n) {
  const int64_t small = std::min<int64_t>(7, n);
  return {small, 0, n / 2, 1, std::max<int64_t>(n - 1, 0), n, small};
}

// The CPU's candidate hint: the k a policy would give, as in training.
int64_t HintFor(int64_t k, int64_t n) { return k >= 1 && k < n ? k : -1; }

// Accumulate + SelectTopK over the k sweep, one fresh gradient per step.
void RunTopKSweep(ParityHarness& harness, const std::vector<Shape>& shapes,
                  GradientType type, uint64_t seed) {
  const int64_t n = harness.numel();
  const std::vector<int64_t> ks = KSweep(n);
  for (size_t step = 0; step < ks.size(); ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step, ", k ", ks[step]));
    const TestGradient gradient =
        MakeGradient(shapes[step % shapes.size()], n, seed * 1000 + step, type);
    ASSERT_TRUE(harness.Accumulate(gradient, HintFor(ks[step], n)));
    ASSERT_TRUE(
        harness.SelectTopK(ks[step], step, static_cast<double>(ks[step]) / n));
  }
}

// --- Sizes: 1 to 25M, momentum off and on, k from 0 to n. -------------------

struct SizeCase {
  int64_t numel;
  bool momentum;
};

std::string CaseName(const SizeCase& c) {
  return absl::StrCat("n", c.numel, c.momentum ? "_Momentum" : "_Plain");
}
// gtest prints parameters in test listings, and ctest names tests after
// them: print the case name, not the struct's bytes (padding included).
void PrintTo(const SizeCase& c, std::ostream* os) { *os << CaseName(c); }

class SizeParityTest : public CudaDeviceTest,
                       public ::testing::WithParamInterface<SizeCase> {};

TEST_P(SizeParityTest, TopKSweepMatchesCpu) {
  const SizeCase& c = GetParam();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness,
      ParityHarness::Create(c.numel, Options(c.momentum), stream()));
  RunTopKSweep(*harness,
               {Shape::kStudentT, Shape::kNormal, Shape::kFewDistinct},
               GradientType::kFloat32, /*seed=*/1);
}

std::vector<SizeCase> SizeCases() {
  std::vector<SizeCase> cases;
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{255},
                    int64_t{256}, int64_t{257}, int64_t{1000}, int64_t{4097},
                    int64_t{65537}, kMillionPlus3, k25M}) {
    cases.push_back({n, false});
    cases.push_back({n, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Sizes, SizeParityTest,
                         ::testing::ValuesIn(SizeCases()),
                         [](const ::testing::TestParamInfo<SizeCase>& info) {
                           return CaseName(info.param);
                         });

// --- Shapes: heavy tails, ties, zeros, -0.0, denormals, one huge value. ------

struct ShapeCase {
  Shape shape;
  int64_t numel;
  bool momentum;
};

std::string CaseName(const ShapeCase& c) {
  return absl::StrCat(ShapeName(c.shape), "_n", c.numel,
                      c.momentum ? "_Momentum" : "_Plain");
}
void PrintTo(const ShapeCase& c, std::ostream* os) { *os << CaseName(c); }

class ShapeParityTest : public CudaDeviceTest,
                        public ::testing::WithParamInterface<ShapeCase> {};

TEST_P(ShapeParityTest, TopKSweepMatchesCpu) {
  const ShapeCase& c = GetParam();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness,
      ParityHarness::Create(c.numel, Options(c.momentum), stream()));
  RunTopKSweep(*harness, {c.shape}, GradientType::kFloat32, /*seed=*/2);
}

std::vector<ShapeCase> ShapeCases() {
  std::vector<ShapeCase> cases;
  for (Shape shape : {Shape::kNormal, Shape::kStudentT, Shape::kCauchyClipped,
                      Shape::kAllEqual, Shape::kFewDistinct, Shape::kMostlyZero,
                      Shape::kAllZero, Shape::kOneHuge, Shape::kNegativeZero,
                      Shape::kDenormal, Shape::kWideRange}) {
    for (int64_t n : {int64_t{1000}, int64_t{65537}, kMillionPlus3}) {
      cases.push_back({shape, n, false});
      cases.push_back({shape, n, true});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ShapeParityTest,
                         ::testing::ValuesIn(ShapeCases()),
                         [](const ::testing::TestParamInfo<ShapeCase>& info) {
                           return CaseName(info.param);
                         });

// --- Half and bfloat16 gradients: the CPU gets them widened exactly. --------

struct TypeCase {
  GradientType type;
  Shape shape;
  int64_t numel;
  bool momentum;
};

std::string CaseName(const TypeCase& c) {
  return absl::StrCat(TypeName(c.type), "_", ShapeName(c.shape), "_n", c.numel,
                      c.momentum ? "_Momentum" : "_Plain");
}
void PrintTo(const TypeCase& c, std::ostream* os) { *os << CaseName(c); }

class TypeParityTest : public CudaDeviceTest,
                       public ::testing::WithParamInterface<TypeCase> {};

TEST_P(TypeParityTest, TopKSweepMatchesCpu) {
  const TypeCase& c = GetParam();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness,
      ParityHarness::Create(c.numel, Options(c.momentum), stream()));
  RunTopKSweep(*harness, {c.shape}, c.type, /*seed=*/3);
}

std::vector<TypeCase> TypeCases() {
  std::vector<TypeCase> cases;
  for (GradientType type : {GradientType::kFloat16, GradientType::kBFloat16}) {
    // Normal: ordinary values (half subnormals below 6e-5); WideRange:
    // every exponent of the type, saturated at its largest finite value;
    // Denormal: float subnormals (zero in half, subnormal in bfloat16);
    // NegativeZero: -0.0 must arrive as -0.0.
    for (Shape shape :
         {Shape::kNormal, Shape::kStudentT, Shape::kWideRange, Shape::kDenormal,
          Shape::kNegativeZero, Shape::kFewDistinct}) {
      for (int64_t n : {int64_t{3}, int64_t{4097}, kMillionPlus3}) {
        cases.push_back({type, shape, n, false});
        cases.push_back({type, shape, n, true});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Types, TypeParityTest,
                         ::testing::ValuesIn(TypeCases()),
                         [](const ::testing::TestParamInfo<TypeCase>& info) {
                           return CaseName(info.param);
                         });

// --- Policies: entropy, topk, threshold, dense, through Compress and the two
// phases, with dense_below, warm-up and a floor on the keep ratio. ----------

struct PolicyCase {
  std::string name;
  KeepPolicy policy;
  double rho;
  int64_t dense_below;
  int64_t warmup_steps;
  double min_keep_ratio;
  EntropySource entropy_of;
  int64_t share_hold_steps;
  int64_t numel;
  bool momentum;
};

std::string CaseName(const PolicyCase& c) {
  return absl::StrCat(c.name, "_n", c.numel,
                      c.momentum ? "_Momentum" : "_Plain");
}
void PrintTo(const PolicyCase& c, std::ostream* os) { *os << CaseName(c); }

class PolicyParityTest : public CudaDeviceTest,
                         public ::testing::WithParamInterface<PolicyCase> {};

TEST_P(PolicyParityTest, StepsMatchCpu) {
  const PolicyCase& c = GetParam();
  CompressionOptions options = Options(c.momentum);
  options.policy = c.policy;
  options.rho = c.rho;
  options.dense_below = c.dense_below;
  options.warmup_steps = c.warmup_steps;
  options.min_keep_ratio = c.min_keep_ratio;
  options.entropy_of = c.entropy_of;
  options.share_hold_steps = c.share_hold_steps;
  options.threshold = 2e-3;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness, ParityHarness::Create(c.numel, options, stream()));
  const Shape shapes[] = {Shape::kStudentT, Shape::kNormal, Shape::kMostlyZero,
                          Shape::kAllZero, Shape::kCauchyClipped};
  for (int64_t step = 0; step < 6; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    const TestGradient gradient = MakeGradient(
        shapes[step % 5], c.numel, 40 + step, GradientType::kFloat32);
    if (step % 2 == 0) {
      ASSERT_TRUE(harness->Compress(gradient, step));
    } else {
      ASSERT_TRUE(harness->Accumulate(gradient));
      ASSERT_TRUE(harness->SelectWithPolicy(step));
    }
  }
}

std::vector<PolicyCase> PolicyCases() {
  struct Base {
    const char* name;
    KeepPolicy policy;
    double rho;
    int64_t dense_below;
    int64_t warmup;
    double min_keep;
    EntropySource entropy_of = EntropySource::kGradient;
    int64_t share_hold_steps = 1;
  };
  const Base bases[] = {
      {"Entropy", KeepPolicy::kEntropy, 0.01, 0, 0, 0.0},
      {"EntropyRho30", KeepPolicy::kEntropy, 0.3, 0, 0, 0.0},
      {"EntropyWarmupFloor", KeepPolicy::kEntropy, 0.001, 0, 3, 0.0005},
      {"EntropyDenseBelow", KeepPolicy::kEntropy, 0.01, 1024, 0, 0.0},
      {"EntropyOfAccumulated", KeepPolicy::kEntropy, 0.01, 0, 0, 0.0,
       EntropySource::kAccumulated},
      // Windows of 3 steps: steps 1-2 and 4-5 take the share held from
      // steps 0 and 3; without momentum step 3's gradient is all zero, so
      // step 4 takes the window's share afresh.
      {"EntropyShareHeld", KeepPolicy::kEntropy, 0.01, 0, 0, 0.0,
       EntropySource::kGradient, 3},
      {"TopK", KeepPolicy::kTopK, 0.01, 0, 0, 0.0},
      {"TopKWarmup", KeepPolicy::kTopK, 0.001, 0, 4, 0.0},
      {"Threshold", KeepPolicy::kThreshold, 0.01, 0, 0, 0.0},
      {"ThresholdDenseBelow", KeepPolicy::kThreshold, 0.01, 1024, 0, 0.0},
      {"Dense", KeepPolicy::kDense, 0.01, 0, 0, 0.0},
  };
  std::vector<PolicyCase> cases;
  for (const Base& base : bases) {
    for (int64_t n : {int64_t{1000}, int64_t{4097}, kMillionPlus3}) {
      for (bool momentum : {false, true}) {
        cases.push_back({base.name, base.policy, base.rho, base.dense_below,
                         base.warmup, base.min_keep, base.entropy_of,
                         base.share_hold_steps, n, momentum});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Policies, PolicyParityTest,
                         ::testing::ValuesIn(PolicyCases()),
                         [](const ::testing::TestParamInfo<PolicyCase>& info) {
                           return CaseName(info.param);
                         });

// --- Interval counts: m = min(M, n), n not a multiple of m. -----------------

class IntervalParityTest : public CudaDeviceTest,
                           public ::testing::WithParamInterface<int64_t> {};

TEST_P(IntervalParityTest, EntropyPolicyMatchesCpu) {
  for (int64_t n : {int64_t{1000}, int64_t{4097}, int64_t{300007}}) {
    SCOPED_TRACE(absl::StrCat("n ", n));
    CompressionOptions options = Options(/*momentum=*/true);
    options.intervals = GetParam();
    options.dense_below = 0;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto harness,
                                   ParityHarness::Create(n, options, stream()));
    for (int64_t step = 0; step < 3; ++step) {
      const TestGradient gradient =
          MakeGradient(step == 1 ? Shape::kMostlyZero : Shape::kStudentT, n,
                       50 + step, GradientType::kFloat32);
      ASSERT_TRUE(harness->Compress(gradient, step));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Intervals, IntervalParityTest,
                         ::testing::Values(1, 2, 3, 7, 255, 256, 1000, 4096,
                                           100000));

// --- The two phases, state and streams. ------------------------------------

class DevicePhaseTest : public CudaDeviceTest {};

TEST_F(DevicePhaseTest, SecondAccumulateReplacesTheFirst) {
  for (bool momentum : {false, true}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto harness,
        ParityHarness::Create(65537, Options(momentum), stream()));
    const TestGradient first =
        MakeGradient(Shape::kStudentT, 65537, 60, GradientType::kFloat32);
    const TestGradient second =
        MakeGradient(Shape::kNormal, 65537, 61, GradientType::kFloat32);
    ASSERT_TRUE(harness->Accumulate(first));
    ASSERT_TRUE(harness->Accumulate(second));
    ASSERT_TRUE(harness->SelectTopK(655, 0, 0.01));
  }
}

TEST_F(DevicePhaseTest, RestoredStateWithSignedZerosAndDenormalsCarriesOn) {
  const int64_t n = 4097;
  for (bool momentum : {false, true}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto harness, ParityHarness::Create(n, Options(momentum), stream()));
    const std::vector<float> velocity =
        momentum ? MakeValues(Shape::kDenormal, n, 70) : std::vector<float>();
    ASSERT_TRUE(harness->RestoreState(MakeValues(Shape::kNegativeZero, n, 71),
                                      velocity));
    // -0.0 + -0.0 stays -0.0 in A; the sent values must keep the sign.
    RunTopKSweep(*harness, {Shape::kNegativeZero, Shape::kDenormal},
                 GradientType::kFloat32, /*seed=*/72);
  }
}

// ALGORITHM.md 5.1: a layer sent whole sends u itself (-0.0 and denormals
// bitwise), and G and V stay 0, on both; only k = n may be selected.
TEST_F(DevicePhaseTest, LayerSentWholeSendsTheGradientAsTheCpuDoes) {
  const int64_t n = 4097;
  for (bool dense_policy : {false, true}) {
    SCOPED_TRACE(dense_policy ? "dense policy" : "dense_below");
    CompressionOptions options = Options(/*momentum=*/true);
    if (dense_policy) {
      options.policy = KeepPolicy::kDense;
    } else {
      options.dense_below = n + 1;
    }
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto harness, ParityHarness::Create(n, options, stream()));
    const Shape shapes[] = {Shape::kNegativeZero, Shape::kDenormal,
                            Shape::kStudentT};
    for (int64_t step = 0; step < 3; ++step) {
      SCOPED_TRACE(absl::StrCat("step ", step));
      const TestGradient gradient =
          MakeGradient(shapes[step], n, 75 + step, GradientType::kFloat32);
      if (step == 1) {
        ASSERT_TRUE(harness->Accumulate(gradient));
        ASSERT_TRUE(harness->SelectTopK(n / 2, step, 0.5));  // refused alike
        EXPECT_EQ(harness->device_status().code(),
                  absl::StatusCode::kInvalidArgument);
        ASSERT_TRUE(harness->SelectTopK(n, step, 1.0));
      } else {
        ASSERT_TRUE(harness->Compress(gradient, step));
      }
      ENTROGRAD_ASSERT_OK(harness->device_status());
      EXPECT_TRUE(BitwiseEqual(gradient.widened, harness->device_out().values,
                               "sent values"));
      std::vector<float> residual, velocity;
      ENTROGRAD_ASSERT_OK(harness->DeviceState(&residual, &velocity));
      EXPECT_TRUE(BitwiseEqual(std::vector<float>(n, 0.0f), residual, "G"));
      EXPECT_TRUE(BitwiseEqual(std::vector<float>(n, 0.0f), velocity, "V"));
    }
  }
}

TEST_F(DevicePhaseTest, LargestFiniteGradientIsSentBitwise) {
  const int64_t n = 1000;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness, ParityHarness::Create(n, Options(false), stream()));
  TestGradient gradient =
      MakeGradient(Shape::kNormal, n, 80, GradientType::kFloat32);
  gradient.Set(123, 3.4028235e38f);
  gradient.Set(124, -3.4028235e38f);
  ASSERT_TRUE(harness->Accumulate(gradient));
  ASSERT_TRUE(harness->SelectTopK(2, 0, 0.002));
  EXPECT_EQ(harness->device_out().indices, (std::vector<uint32_t>{123, 124}));
}

TEST_F(DevicePhaseTest, DefaultStreamMatchesCpu) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto harness,
      ParityHarness::Create(kMillionPlus3, Options(true), /*stream=*/nullptr));
  RunTopKSweep(*harness, {Shape::kStudentT}, GradientType::kFloat32, 90);
}

TEST_F(DevicePhaseTest, LayersSharingOneWorkspaceMatchCpu) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<cuda::DeviceWorkspace> workspace,
      cuda::DeviceWorkspace::Create(kMillionPlus3, 256));
  const int64_t sizes[] = {1000, 65537, kMillionPlus3, 3};
  std::vector<std::unique_ptr<ParityHarness>> layers;
  for (int64_t n : sizes) {
    CompressionOptions options = Options(/*momentum=*/true);
    options.dense_below = 0;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto harness, ParityHarness::Create(n, options, stream(), workspace));
    layers.push_back(std::move(harness));
  }
  // Interleaved as in a backward pass: each layer in turn, several steps.
  for (int64_t step = 0; step < 4; ++step) {
    for (size_t l = 0; l < layers.size(); ++l) {
      SCOPED_TRACE(absl::StrCat("step ", step, ", layer ", l));
      const TestGradient gradient =
          MakeGradient(Shape::kStudentT, sizes[l], 100 + 10 * step + l,
                       GradientType::kFloat32);
      ASSERT_TRUE(layers[l]->Compress(gradient, step));
    }
  }
}

// --- Determinism: the same inputs give the same bytes. ----------------------

struct DeviceRun {
  std::vector<CompressedLayer> layers;
  std::vector<float> residual;
  std::vector<float> velocity;
};

// Steps of the entropy policy on a fresh device compressor only.
void RunDeviceOnly(int64_t n, cudaStream_t stream, DeviceRun* run) {
  CompressionOptions options = Options(/*momentum=*/true);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto compressor, cuda::DeviceLayerCompressor::Create(n, options));
  DeviceBuffer gradient_buffer;
  for (int64_t step = 0; step < 4; ++step) {
    const TestGradient gradient =
        MakeGradient(step % 2 ? Shape::kFewDistinct : Shape::kStudentT, n,
                     110 + step, GradientType::kFloat32);
    ENTROGRAD_ASSERT_OK(gradient_buffer.Upload(gradient.device_payload(),
                                               gradient.payload_bytes()));
    cuda::DeviceCompressedLayer layer;
    ENTROGRAD_ASSERT_OK(compressor->Compress(
        gradient_buffer.data(), gradient.type, step, stream, &layer));
    run->layers.emplace_back();
    ENTROGRAD_ASSERT_OK(cuda::CopyToHost(layer, stream, &run->layers.back()));
  }
  ENTROGRAD_ASSERT_OK(
      compressor->CopyStateToHost(&run->residual, &run->velocity, stream));
}

class DeviceDeterminismTest : public CudaDeviceTest,
                              public ::testing::WithParamInterface<int64_t> {};

TEST_P(DeviceDeterminismTest, SameInputsGiveIdenticalBytes) {
  DeviceRun first;
  DeviceRun second;
  ASSERT_NO_FATAL_FAILURE(RunDeviceOnly(GetParam(), stream(), &first));
  ASSERT_NO_FATAL_FAILURE(RunDeviceOnly(GetParam(), stream(), &second));
  ASSERT_EQ(first.layers.size(), second.layers.size());
  for (size_t i = 0; i < first.layers.size(); ++i) {
    const CompressedLayer& a = first.layers[i];
    const CompressedLayer& b = second.layers[i];
    EXPECT_EQ(a.k, b.k) << "step " << i;
    EXPECT_EQ(a.indices, b.indices) << "step " << i;
    EXPECT_TRUE(BitwiseEqual(a.values, b.values, "values")) << "step " << i;
    // Bitwise, not to a tolerance: the sums are added in a fixed order.
    EXPECT_EQ(
        std::memcmp(&a.entropy.entropy, &b.entropy.entropy, sizeof(double)), 0)
        << "step " << i << ": H " << a.entropy.entropy << " vs "
        << b.entropy.entropy;
    EXPECT_EQ(a.keep_ratio, b.keep_ratio) << "step " << i;
  }
  EXPECT_TRUE(BitwiseEqual(first.residual, second.residual, "residual"));
  EXPECT_TRUE(BitwiseEqual(first.velocity, second.velocity, "velocity"));
}

INSTANTIATE_TEST_SUITE_P(Sizes, DeviceDeterminismTest,
                         ::testing::Values(65537, kMillionPlus3, k25M),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return absl::StrCat("n", info.param);
                         });

}  // namespace
}  // namespace entrograd::cuda_test
