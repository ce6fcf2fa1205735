// ParityHarness: drives the CPU reference (LayerCompressor) and a
// DeviceLayerCompressor through the same calls with the same gradients, and
// checks after each call that they agree as device_compressor.h promises:
// the same status (an error naming the same element), the same k, indices
// and bitwise values, bitwise the same residual G and velocity V, and the
// entropy to within 1e-6 relative.
//
// Every method returns an AssertionResult, so a test reads
//   ASSERT_TRUE(harness->Accumulate(gradient));
//   ASSERT_TRUE(harness->SelectTopK(k, step, ratio));
// and a failure says which call, which field and which element.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_CUDA_PARITY_HARNESS_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_CUDA_PARITY_HARNESS_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client_lib/cuda/cuda_test_support.h"
#include "entrograd/compression_options.h"
#include "entrograd/cuda/device_compressor.h"
#include "entrograd/entropy.h"
#include "entrograd/layer_compressor.h"
#include "gtest/gtest.h"

namespace entrograd::cuda_test {

// Relative tolerance on H, Hn, f and the keep ratio: the device adds the
// interval sums in another (fixed) order. An absolute floor of 1e-12 lets
// H = 0 meet H = 1e-17.
inline constexpr double kEntropyTolerance = 1e-6;

::testing::AssertionResult EntropyAgrees(const EntropyStats& cpu,
                                         const EntropyStats& device);

// Both OK, or the same code; when the CPU's message names an element (a
// NaN/Inf error), the device's names the same one.
::testing::AssertionResult StatusesAgree(const absl::Status& cpu,
                                         const absl::Status& device);

// The element a non-finite error names ("... at element 17"), if any.
std::optional<int64_t> NamedElement(const std::string& message);

// Every field of a device result (copied to the host) against the CPU's.
::testing::AssertionResult LayersAgree(const CompressedLayer& cpu,
                                       const CompressedLayer& device);

class ParityHarness {
 public:
  // Both compressors for a layer of `numel` elements; `workspace` may be
  // null (the device compressor then makes its own).
  static absl::StatusOr<std::unique_ptr<ParityHarness>> Create(
      int64_t numel, const CompressionOptions& options, cudaStream_t stream,
      std::shared_ptr<cuda::DeviceWorkspace> workspace = nullptr);

  // Uploads `gradient` and accumulates it on both. `max_keep` is the CPU's
  // candidate hint (its result is exact whatever the hint).
  ::testing::AssertionResult Accumulate(const TestGradient& gradient,
                                        int64_t max_keep = -1);
  ::testing::AssertionResult SelectTopK(int64_t k, int64_t step,
                                        double keep_ratio);
  ::testing::AssertionResult SelectWithPolicy(int64_t step);
  ::testing::AssertionResult Compress(const TestGradient& gradient,
                                      int64_t step);
  ::testing::AssertionResult RestoreState(const std::vector<float>& residual,
                                          const std::vector<float>& velocity);
  void DiscardPending();

  // G and V of both, bitwise (copied from the device).
  ::testing::AssertionResult StateAgrees();
  // The device's G and V now, copied to the host.
  absl::Status DeviceState(std::vector<float>* residual,
                           std::vector<float>* velocity);

  // Statuses and results of the last call (results only valid when it
  // succeeded).
  const absl::Status& cpu_status() const { return cpu_status_; }
  const absl::Status& device_status() const { return device_status_; }
  const CompressedLayer& cpu_out() const { return cpu_out_; }
  const CompressedLayer& device_out() const { return device_out_; }

  LayerCompressor& cpu() { return *cpu_; }
  cuda::DeviceLayerCompressor& device() { return *device_; }
  cudaStream_t stream() const { return stream_; }
  int64_t numel() const { return numel_; }

 private:
  ParityHarness(int64_t numel, cudaStream_t stream,
                std::unique_ptr<LayerCompressor> cpu,
                std::unique_ptr<cuda::DeviceLayerCompressor> device)
      : numel_(numel),
        stream_(stream),
        cpu_(std::move(cpu)),
        device_(std::move(device)) {}

  // After a select on both: statuses, then (for a top-k selection, not the
  // threshold policy) the device's selection bookkeeping, then results and
  // state.
  ::testing::AssertionResult CheckSelect(
      const std::string& call, const cuda::DeviceCompressedLayer& device_layer,
      bool top_k);

  const int64_t numel_;
  const cudaStream_t stream_;
  std::unique_ptr<LayerCompressor> cpu_;
  std::unique_ptr<cuda::DeviceLayerCompressor> device_;
  DeviceBuffer gradient_buffer_;
  absl::Status cpu_status_;
  absl::Status device_status_;
  CompressedLayer cpu_out_;
  CompressedLayer device_out_;
};

}  // namespace entrograd::cuda_test

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_CUDA_PARITY_HARNESS_H_
