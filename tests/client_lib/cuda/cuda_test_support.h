// Shared pieces of the CUDA tests: the fixture that skips without a device,
// an owning device buffer, and the gradients the parity tests feed to both
// the CPU reference and the device compressor.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_CUDA_CUDA_TEST_SUPPORT_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_CUDA_CUDA_TEST_SUPPORT_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "entrograd/cuda/device_compressor.h"
#include "gtest/gtest.h"

namespace entrograd::cuda_test {

// OK when a CUDA device can be used, else why not. Asked once per process:
// the answer does not change and the first CUDA call is slow.
const absl::Status& CudaDeviceStatus();

// Base of every CUDA test. SetUp skips the test, with the device check's
// message as the reason, when there is no usable device; otherwise it makes
// a non-blocking stream, so that work the library wrongly puts on the legacy
// default stream is not silently ordered with ours.
class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  cudaStream_t stream() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// "what: CUDA error name (message)" as INTERNAL, or OK for cudaSuccess.
absl::Status CudaStatus(cudaError_t error, const char* what);

// Device memory owned by the test: freed on destruction, move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Makes the buffer exactly `bytes` long (contents unspecified).
  absl::Status Resize(size_t bytes);
  // Resizes to `bytes` and copies them from host memory (synchronous).
  absl::Status Upload(const void* host, size_t bytes);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void Free();
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The inputs the parity tests use. Every shape is finite; the error tests
// plant NaN/Inf themselves.
enum class Shape {
  kNormal,         // N(0, 1e-3)
  kStudentT,       // 1e-3 * Student-t, 2 degrees of freedom: heavy tails
  kCauchyClipped,  // Cauchy, scale 1e-4, clipped to +-1e3 (no Inf)
  kAllEqual,       // every element 1e-3: one tie over the whole layer
  kFewDistinct,    // {-0.5, -0.25, 0, 0.25, 0.5}: ties that survive sums
  kMostlyZero,     // 98% +0.0, the rest normal
  kAllZero,        // +0.0 everywhere: nothing to send
  kOneHuge,        // 1e30 at n/3, 1e-6-scale noise elsewhere
  kNegativeZero,   // -0.0 and +0.0 mixed with a few tiny values
  kDenormal,       // subnormal magnitudes only, both signs
  kWideRange,      // random exponents from subnormal to 2^73, both signs
};
const char* ShapeName(Shape shape);

// n elements of `shape`, deterministic in (shape, n, seed) whatever the
// number of threads that fill it (chunks have their own generators).
std::vector<float> MakeValues(Shape shape, int64_t n, uint64_t seed);

// A gradient as the device gets it (float, half or bfloat16 bits) and as the
// CPU reference gets it (the same values widened to float, exactly).
struct TestGradient {
  cuda::GradientType type = cuda::GradientType::kFloat32;
  std::vector<float> widened;         // the CPU reference's input
  std::vector<uint16_t> narrow_bits;  // the device's input unless float32

  int64_t numel() const { return static_cast<int64_t>(widened.size()); }
  const void* device_payload() const;  // host memory to upload
  size_t payload_bytes() const;
  // Sets element i from a float (rounded to the type), e.g. to plant NaN.
  void Set(int64_t i, float value);
};

// Values of `shape` rounded to `type` (to nearest even; what does not fit
// becomes the largest finite value of the type, keeping shapes finite).
TestGradient MakeGradient(Shape shape, int64_t n, uint64_t seed,
                          cuda::GradientType type);

// Bitwise equality of two float arrays; on mismatch names the first
// differing element with both bit patterns.
::testing::AssertionResult BitwiseEqual(absl::Span<const float> expected,
                                        absl::Span<const float> actual,
                                        const std::string& what);

// True when `message` names element `index` ("element 17", not "element
// 170"), as the non-finite errors of the compressors do.
bool NamesElement(const std::string& message, int64_t index);

}  // namespace entrograd::cuda_test

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_CUDA_CUDA_TEST_SUPPORT_H_
