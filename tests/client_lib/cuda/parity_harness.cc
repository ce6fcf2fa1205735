#include "client_lib/cuda/parity_harness.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace entrograd::cuda_test {

namespace {

bool Close(double a, double b) {
  return std::fabs(a - b) <=
         kEntropyTolerance * std::max(std::fabs(a), std::fabs(b)) + 1e-12;
}

::testing::AssertionResult Prefixed(const std::string& prefix,
                                    ::testing::AssertionResult result) {
  if (result) return result;
  return ::testing::AssertionFailure() << prefix << ": " << result.message();
}

}  // namespace

::testing::AssertionResult EntropyAgrees(const EntropyStats& cpu,
                                         const EntropyStats& device) {
  if (cpu.intervals != device.intervals || cpu.all_zero != device.all_zero ||
      !Close(cpu.entropy, device.entropy) ||
      !Close(cpu.normalized_entropy, device.normalized_entropy) ||
      !Close(cpu.effective_fraction, device.effective_fraction)) {
    return ::testing::AssertionFailure() << absl::StrCat(
               "entropy differs: cpu {m ", cpu.intervals, ", H ", cpu.entropy,
               ", Hn ", cpu.normalized_entropy, ", f ", cpu.effective_fraction,
               ", all_zero ", cpu.all_zero, "} device {m ", device.intervals,
               ", H ", device.entropy, ", Hn ", device.normalized_entropy,
               ", f ", device.effective_fraction, ", all_zero ",
               device.all_zero, "}");
  }
  return ::testing::AssertionSuccess();
}

std::optional<int64_t> NamedElement(const std::string& message) {
  const std::string marker = "at element ";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const size_t digits = at + marker.size();
  if (digits >= message.size() ||
      !std::isdigit(static_cast<unsigned char>(message[digits]))) {
    return std::nullopt;
  }
  return std::strtoll(message.c_str() + digits, nullptr, 10);
}

::testing::AssertionResult StatusesAgree(const absl::Status& cpu,
                                         const absl::Status& device) {
  if (cpu.code() != device.code()) {
    return ::testing::AssertionFailure()
           << "status differs: cpu " << cpu << "; device " << device;
  }
  const std::optional<int64_t> element =
      NamedElement(std::string(cpu.message()));
  if (element.has_value() &&
      !NamesElement(std::string(device.message()), *element)) {
    return ::testing::AssertionFailure()
           << "the device error does not name element " << *element << ": cpu "
           << cpu << "; device " << device;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult LayersAgree(const CompressedLayer& cpu,
                                       const CompressedLayer& device) {
  if (cpu.step != device.step || cpu.numel != device.numel ||
      cpu.k != device.k || cpu.dense != device.dense) {
    return ::testing::AssertionFailure() << absl::StrCat(
               "header differs: cpu {step ", cpu.step, ", numel ", cpu.numel,
               ", k ", cpu.k, ", dense ", cpu.dense, "} device {step ",
               device.step, ", numel ", device.numel, ", k ", device.k,
               ", dense ", device.dense, "}");
  }
  if (!Close(cpu.keep_ratio, device.keep_ratio)) {
    return ::testing::AssertionFailure()
           << "keep_ratio differs: cpu " << cpu.keep_ratio << ", device "
           << device.keep_ratio;
  }
  if (auto entropy = EntropyAgrees(cpu.entropy, device.entropy); !entropy) {
    return entropy;
  }
  if (cpu.indices != device.indices) {
    size_t first = 0;
    while (first < cpu.indices.size() && first < device.indices.size() &&
           cpu.indices[first] == device.indices[first]) {
      ++first;
    }
    auto at = [first](const std::vector<uint32_t>& v) {
      return first < v.size() ? absl::StrCat(v[first]) : std::string("end");
    };
    return ::testing::AssertionFailure() << absl::StrCat(
               "indices differ (cpu ", cpu.indices.size(), ", device ",
               device.indices.size(), "); first at position ", first, ": cpu ",
               at(cpu.indices), ", device ", at(device.indices));
  }
  return BitwiseEqual(cpu.values, device.values, "values");
}

absl::StatusOr<std::unique_ptr<ParityHarness>> ParityHarness::Create(
    int64_t numel, const CompressionOptions& options, cudaStream_t stream,
    std::shared_ptr<cuda::DeviceWorkspace> workspace) {
  absl::StatusOr<std::unique_ptr<LayerCompressor>> cpu =
      LayerCompressor::Create(numel, options);
  if (!cpu.ok()) return cpu.status();
  absl::StatusOr<std::unique_ptr<cuda::DeviceLayerCompressor>> device =
      cuda::DeviceLayerCompressor::Create(numel, options, std::move(workspace));
  if (!device.ok()) return device.status();
  return std::unique_ptr<ParityHarness>(new ParityHarness(
      numel, stream, std::move(cpu).value(), std::move(device).value()));
}

::testing::AssertionResult ParityHarness::Accumulate(
    const TestGradient& gradient, int64_t max_keep) {
  const std::string call = absl::StrCat("Accumulate(n ", numel_, ")");
  if (absl::Status upload = gradient_buffer_.Upload(gradient.device_payload(),
                                                    gradient.payload_bytes());
      !upload.ok()) {
    return ::testing::AssertionFailure() << call << ": " << upload;
  }
  absl::StatusOr<EntropyStats> cpu =
      cpu_->Accumulate(gradient.widened, max_keep);
  absl::StatusOr<EntropyStats> device =
      device_->Accumulate(gradient_buffer_.data(), gradient.type, stream_);
  cpu_status_ = cpu.status();
  device_status_ = device.status();
  if (auto agree = StatusesAgree(cpu_status_, device_status_); !agree) {
    return Prefixed(call, agree);
  }
  if (cpu.ok()) {
    if (auto agree = EntropyAgrees(*cpu, *device); !agree) {
      return Prefixed(call, agree);
    }
  }
  // Accumulate must not touch G or V, on success or error.
  return Prefixed(call, StateAgrees());
}

::testing::AssertionResult ParityHarness::SelectTopK(int64_t k, int64_t step,
                                                     double keep_ratio) {
  cpu_status_ = cpu_->SelectTopK(k, step, keep_ratio, &cpu_out_);
  cuda::DeviceCompressedLayer layer;
  device_status_ = device_->SelectTopK(k, step, keep_ratio, stream_, &layer);
  return CheckSelect(
      absl::StrCat("SelectTopK(k ", k, ", step ", step, ", n ", numel_, ")"),
      layer, /*top_k=*/true);
}

::testing::AssertionResult ParityHarness::SelectWithPolicy(int64_t step) {
  cpu_status_ = cpu_->SelectWithPolicy(step, &cpu_out_);
  cuda::DeviceCompressedLayer layer;
  device_status_ = device_->SelectWithPolicy(step, stream_, &layer);
  return CheckSelect(
      absl::StrCat("SelectWithPolicy(step ", step, ", n ", numel_, ")"), layer,
      device_->options().policy != KeepPolicy::kThreshold);
}

::testing::AssertionResult ParityHarness::Compress(const TestGradient& gradient,
                                                   int64_t step) {
  const std::string call =
      absl::StrCat("Compress(step ", step, ", n ", numel_, ")");
  if (absl::Status upload = gradient_buffer_.Upload(gradient.device_payload(),
                                                    gradient.payload_bytes());
      !upload.ok()) {
    return ::testing::AssertionFailure() << call << ": " << upload;
  }
  cpu_status_ = cpu_->Compress(gradient.widened, step, &cpu_out_);
  cuda::DeviceCompressedLayer layer;
  device_status_ = device_->Compress(gradient_buffer_.data(), gradient.type,
                                     step, stream_, &layer);
  return CheckSelect(call, layer,
                     device_->options().policy != KeepPolicy::kThreshold);
}

::testing::AssertionResult ParityHarness::CheckSelect(
    const std::string& call, const cuda::DeviceCompressedLayer& layer,
    bool top_k) {
  if (auto agree = StatusesAgree(cpu_status_, device_status_); !agree) {
    return Prefixed(call, agree);
  }
  if (cpu_status_.ok()) {
    if (layer.dense != (layer.indices == nullptr) && layer.k > 0) {
      return ::testing::AssertionFailure()
             << call << ": dense " << layer.dense << " but indices "
             << (layer.indices == nullptr ? "null" : "set");
    }
    if (layer.k > 0 && layer.values == nullptr) {
      return ::testing::AssertionFailure()
             << call << ": k = " << layer.k << " but values are null";
    }
    // The radix select's own bookkeeping: points at the failing stage
    // before the comparison below says only that the indices differ.
    if (top_k && !layer.dense && layer.k > 0 && layer.k < numel_) {
      if (absl::Status check =
              device_->workspace()->CheckLastSelection(layer.k, stream_);
          !check.ok()) {
        return ::testing::AssertionFailure() << call << ": " << check;
      }
    }
    device_out_ = CompressedLayer();
    if (absl::Status copy = cuda::CopyToHost(layer, stream_, &device_out_);
        !copy.ok()) {
      return ::testing::AssertionFailure() << call << ": CopyToHost: " << copy;
    }
    if (auto agree = LayersAgree(cpu_out_, device_out_); !agree) {
      return Prefixed(call, agree);
    }
  }
  // On success G and V moved on; on error both must be as before.
  return Prefixed(call, StateAgrees());
}

::testing::AssertionResult ParityHarness::RestoreState(
    const std::vector<float>& residual, const std::vector<float>& velocity) {
  cpu_status_ = cpu_->RestoreState(residual, velocity);
  device_status_ = device_->RestoreState(residual, velocity, stream_);
  if (auto agree = StatusesAgree(cpu_status_, device_status_); !agree) {
    return Prefixed("RestoreState", agree);
  }
  return Prefixed("RestoreState", StateAgrees());
}

void ParityHarness::DiscardPending() {
  cpu_->DiscardPending();
  device_->DiscardPending();
}

absl::Status ParityHarness::DeviceState(std::vector<float>* residual,
                                        std::vector<float>* velocity) {
  return device_->CopyStateToHost(residual, velocity, stream_);
}

::testing::AssertionResult ParityHarness::StateAgrees() {
  std::vector<float> residual;
  std::vector<float> velocity;
  if (absl::Status copy = DeviceState(&residual, &velocity); !copy.ok()) {
    return ::testing::AssertionFailure() << "CopyStateToHost: " << copy;
  }
  if (auto agree = BitwiseEqual(cpu_->residual(), residual, "residual G");
      !agree) {
    return agree;
  }
  return BitwiseEqual(cpu_->velocity(), velocity, "velocity V");
}

}  // namespace entrograd::cuda_test
