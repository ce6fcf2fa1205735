#include "client_lib/cuda/cuda_test_support.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <utility>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client_lib/cuda/half_bits.h"

namespace entrograd::cuda_test {

const absl::Status& CudaDeviceStatus() {
  static const absl::Status* const status =
      new absl::Status(cuda::CheckCudaDeviceAvailable());
  return *status;
}

void CudaDeviceTest::SetUp() {
  const absl::Status& status = CudaDeviceStatus();
  if (!status.ok()) {
    GTEST_SKIP() << "needs a CUDA device: " << status.message();
  }
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
            cudaSuccess);
}

void CudaDeviceTest::TearDown() {
  if (stream_ != nullptr) {
    // A failing test may leave work queued; finish it before freeing.
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    stream_ = nullptr;
  }
}

absl::Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorName(error),
                                          " (", cudaGetErrorString(error),
                                          ")"));
}

DeviceBuffer::~DeviceBuffer() { Free(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::Free() {
  if (data_ != nullptr) cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

absl::Status DeviceBuffer::Resize(size_t bytes) {
  if (bytes == bytes_ && data_ != nullptr) return absl::OkStatus();
  Free();
  // cudaMalloc(0) gives no pointer; keep one byte so data() is never null.
  const absl::Status status =
      CudaStatus(cudaMalloc(&data_, std::max<size_t>(bytes, 1)), "cudaMalloc");
  if (!status.ok()) {
    data_ = nullptr;
    return status;
  }
  bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status DeviceBuffer::Upload(const void* host, size_t bytes) {
  if (absl::Status status = Resize(bytes); !status.ok()) return status;
  if (absl::Status status =
          CudaStatus(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice),
                     "cudaMemcpy to device");
      !status.ok()) {
    return status;
  }
  // A copy from pageable memory may return before the DMA has finished, and
  // the tests' non-blocking streams do not wait for the legacy stream.
  return CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

const char* ShapeName(Shape shape) {
  switch (shape) {
    case Shape::kNormal:
      return "Normal";
    case Shape::kStudentT:
      return "StudentT";
    case Shape::kCauchyClipped:
      return "CauchyClipped";
    case Shape::kAllEqual:
      return "AllEqual";
    case Shape::kFewDistinct:
      return "FewDistinct";
    case Shape::kMostlyZero:
      return "MostlyZero";
    case Shape::kAllZero:
      return "AllZero";
    case Shape::kOneHuge:
      return "OneHuge";
    case Shape::kNegativeZero:
      return "NegativeZero";
    case Shape::kDenormal:
      return "Denormal";
    case Shape::kWideRange:
      return "WideRange";
  }
  return "?";
}

namespace {

constexpr int64_t kChunk = int64_t{1} << 20;

uint64_t Mix(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float RandomSign(std::mt19937_64& rng, float magnitude) {
  return (rng() & 1) ? -magnitude : magnitude;
}

void FillChunk(Shape shape, int64_t n, int64_t begin, int64_t end,
               std::mt19937_64& rng, float* out) {
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::student_t_distribution<float> student_t(2.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1e-4f);
  for (int64_t i = begin; i < end; ++i) {
    float x = 0.0f;
    switch (shape) {
      case Shape::kNormal:
        x = normal(rng);
        break;
      case Shape::kStudentT:
        x = 1e-3f * student_t(rng);
        break;
      case Shape::kCauchyClipped:
        x = cauchy(rng);
        if (!std::isfinite(x) || std::fabs(x) > 1e3f)
          x = std::copysign(1e3f, x);
        break;
      case Shape::kAllEqual:
        x = 1e-3f;
        break;
      case Shape::kFewDistinct:
        x = 0.25f * static_cast<float>(static_cast<int>(rng() % 5) - 2);
        break;
      case Shape::kMostlyZero:
        x = (rng() % 50 == 0) ? normal(rng) : 0.0f;
        break;
      case Shape::kAllZero:
        x = 0.0f;
        break;
      case Shape::kOneHuge:
        x = (i == n / 3) ? 1e30f : 1e-3f * normal(rng);
        break;
      case Shape::kNegativeZero: {
        const uint64_t r = rng() % 16;
        x = r == 0 ? RandomSign(rng, 1e-30f) : (r < 8 ? -0.0f : 0.0f);
        break;
      }
      case Shape::kDenormal:
        // Magnitudes (0, 1000) * 2^-(140..148): subnormal (below 2^-126).
        x = RandomSign(rng, std::ldexp(static_cast<float>(rng() % 1000),
                                       -140 - static_cast<int>(rng() % 9)));
        break;
      case Shape::kWideRange: {
        // Exponent field 0..200: subnormals up to 2^73, never near overflow
        // even after many steps of accumulation.
        const uint32_t exponent = static_cast<uint32_t>(rng() % 201);
        const uint32_t mantissa = static_cast<uint32_t>(rng()) & 0x7FFFFFu;
        x = RandomSign(rng, absl::bit_cast<float>((exponent << 23) | mantissa));
        break;
      }
    }
    out[i] = x;
  }
}

}  // namespace

std::vector<float> MakeValues(Shape shape, int64_t n, uint64_t seed) {
  std::vector<float> values(n);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int64_t threads = std::clamp<int64_t>(
      std::thread::hardware_concurrency(), 1, std::min<int64_t>(chunks, 16));
  auto fill = [&](int64_t first_chunk) {
    for (int64_t c = first_chunk; c < chunks; c += threads) {
      std::mt19937_64 rng(Mix(seed * 0x9E3779B97F4A7C15ull +
                              static_cast<uint64_t>(shape) * 0x100000001ull +
                              static_cast<uint64_t>(c)));
      FillChunk(shape, n, c * kChunk, std::min(n, (c + 1) * kChunk), rng,
                values.data());
    }
  };
  std::vector<std::thread> workers;
  for (int64_t t = 1; t < threads; ++t) workers.emplace_back(fill, t);
  fill(0);
  for (std::thread& worker : workers) worker.join();
  return values;
}

const void* TestGradient::device_payload() const {
  if (type == cuda::GradientType::kFloat32) return widened.data();
  return narrow_bits.data();
}

size_t TestGradient::payload_bytes() const {
  return widened.size() * static_cast<size_t>(cuda::GradientTypeSize(type));
}

void TestGradient::Set(int64_t i, float value) {
  switch (type) {
    case cuda::GradientType::kFloat32:
      widened[i] = value;
      return;
    case cuda::GradientType::kFloat16:
      narrow_bits[i] = FloatToHalfBits(value);
      widened[i] = HalfBitsToFloat(narrow_bits[i]);
      return;
    case cuda::GradientType::kBFloat16:
      narrow_bits[i] = FloatToBFloat16Bits(value);
      widened[i] = BFloat16BitsToFloat(narrow_bits[i]);
      return;
  }
}

TestGradient MakeGradient(Shape shape, int64_t n, uint64_t seed,
                          cuda::GradientType type) {
  TestGradient gradient;
  gradient.type = type;
  gradient.widened = MakeValues(shape, n, seed);
  if (type == cuda::GradientType::kFloat32) return gradient;
  const bool half = type == cuda::GradientType::kFloat16;
  const uint16_t max_finite = half ? 0x7BFFu : 0x7F7Fu;
  gradient.narrow_bits.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const float x = gradient.widened[i];
    uint16_t bits = half ? FloatToHalfBits(x) : FloatToBFloat16Bits(x);
    if ((bits & 0x7FFFu) > (max_finite & 0x7FFFu)) {  // rounded to Inf
      bits = static_cast<uint16_t>((bits & 0x8000u) | max_finite);
    }
    gradient.narrow_bits[i] = bits;
    gradient.widened[i] =
        half ? HalfBitsToFloat(bits) : BFloat16BitsToFloat(bits);
  }
  return gradient;
}

::testing::AssertionResult BitwiseEqual(absl::Span<const float> expected,
                                        absl::Span<const float> actual,
                                        const std::string& what) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << what << ": expected " << expected.size() << " elements, got "
           << actual.size();
  }
  if (expected.empty() || std::memcmp(expected.data(), actual.data(),
                                      expected.size() * sizeof(float)) == 0) {
    return ::testing::AssertionSuccess();
  }
  size_t first = 0;
  size_t count = 0;
  for (size_t i = expected.size(); i-- > 0;) {
    if (absl::bit_cast<uint32_t>(expected[i]) !=
        absl::bit_cast<uint32_t>(actual[i])) {
      first = i;
      ++count;
    }
  }
  return ::testing::AssertionFailure() << absl::StrFormat(
             "%s: %d of %d elements differ; first at %d: expected %g "
             "(0x%08x), got %g (0x%08x)",
             what, count, expected.size(), first, expected[first],
             absl::bit_cast<uint32_t>(expected[first]), actual[first],
             absl::bit_cast<uint32_t>(actual[first]));
}

bool NamesElement(const std::string& message, int64_t index) {
  const std::string needle = absl::StrCat("element ", index);
  for (size_t at = message.find(needle); at != std::string::npos;
       at = message.find(needle, at + 1)) {
    const size_t after = at + needle.size();
    if (after == message.size() ||
        !std::isdigit(static_cast<unsigned char>(message[after]))) {
      return true;
    }
  }
  return false;
}

}  // namespace entrograd::cuda_test
