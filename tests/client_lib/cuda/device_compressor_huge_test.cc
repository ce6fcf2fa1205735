// Parity on layers as large as real models' embedding tables. In their own
// suite so that a run can pick them (--gtest_filter='HugeLayerTest.*') or not:
// each needs gigabytes on the device and tens of seconds of CPU reference
// time. They skip without a device, or without the device memory.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "client_lib/cuda/cuda_test_support.h"
#include "client_lib/cuda/parity_harness.h"
#include "entrograd/compression_options.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::cuda_test {
namespace {

using cuda::GradientType;

// Why the device cannot hold `bytes` more, or "" when it can.
std::string DeviceMemoryShortfall(int64_t bytes) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return "cudaMemGetInfo failed";
  }
  if (static_cast<int64_t>(free_bytes) >= bytes) return "";
  return absl::StrCat("needs ", bytes >> 20, " MiB of device memory; ",
                      free_bytes >> 20, " MiB free");
}

// Bytes a parity run of n float32 elements takes on the device: G, A, the
// outputs and the candidates (20 n), the gradient (4 n), CUB's scratch and
// slack (4 n); 8 n more with momentum correction.
int64_t DeviceBytesFor(int64_t n, bool momentum) {
  return n * (momentum ? 36 : 28);
}

class HugeLayerTest : public CudaDeviceTest {};

TEST_F(HugeLayerTest, FourHundredMillionElements) {
  const int64_t n = 400000000;
  if (std::string why = DeviceMemoryShortfall(DeviceBytesFor(n, false));
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  CompressionOptions options;
  options.rho = 0.001;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto harness,
                                 ParityHarness::Create(n, options, stream()));
  // Top-k at the densities the benchmark uses, the entropy policy, then a
  // median selection: indices up to 4e8 through every pass.
  ASSERT_TRUE(harness->Accumulate(
      MakeGradient(Shape::kStudentT, n, 900, GradientType::kFloat32),
      n / 1000));
  ASSERT_TRUE(harness->SelectTopK(n / 1000, 0, 0.001));
  ASSERT_TRUE(harness->Compress(
      MakeGradient(Shape::kCauchyClipped, n, 901, GradientType::kFloat32), 1));
  ASSERT_TRUE(harness->Accumulate(
      MakeGradient(Shape::kFewDistinct, n, 902, GradientType::kFloat32)));
  ASSERT_TRUE(harness->SelectTopK(n / 2, 2, 0.5));
}

// Indices past 2^31: what a signed 32-bit index would get wrong. Opt-in
// (ENTROGRAD_CUDA_TEST_2G=1): 50 GB on the device, 45 GB of host memory and
// about a minute of CPU reference time.
TEST_F(HugeLayerTest, BeyondTwoToThe31Elements) {
  const char* enabled = std::getenv("ENTROGRAD_CUDA_TEST_2G");
  if (enabled == nullptr || std::string(enabled) != "1") {
    GTEST_SKIP() << "opt-in: set ENTROGRAD_CUDA_TEST_2G=1";
  }
  const int64_t n = (int64_t{1} << 31) + 1000003;
  if (std::string why = DeviceMemoryShortfall(DeviceBytesFor(n, false));
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  CompressionOptions options;
  options.rho = 0.001;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto harness,
                                 ParityHarness::Create(n, options, stream()));
  TestGradient gradient =
      MakeGradient(Shape::kStudentT, n, 910, GradientType::kFloat32);
  gradient.Set(n - 2, 1e3f);  // the largest entry sits past 2^31
  ASSERT_TRUE(harness->Accumulate(gradient, 1 << 20));
  ASSERT_TRUE(harness->SelectTopK(1 << 20, 0, 0.0005));
  EXPECT_EQ(harness->device_out().indices.back(), n - 2);
  ASSERT_TRUE(harness->Compress(
      MakeGradient(Shape::kNormal, n, 911, GradientType::kFloat32), 1));
}

}  // namespace
}  // namespace entrograd::cuda_test
