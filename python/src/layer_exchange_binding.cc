// Layer-by-layer exchange for Python code that drives the rounds itself
// (entrograd.comm_hook for DistributedDataParallel): compress a gradient
// with a LayerCompressor and send it, wait for a merged layer and write it
// into a tensor, mark a step applied. DistributedOptimizer does the same
// inside its hooks and Step; these take the parts one at a time.
//
// Each call releases the GIL while it compresses, sends or waits.
#include <pybind11/pybind11.h>
#include <torch/extension.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "entrograd/client.h"
#include "entrograd/client_metrics.h"
#include "entrograd/layer_compressor.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "python/src/bindings.h"
#include "python/src/py_client.h"
#include "python/src/status_error.h"
#include "python/src/tensor_checks.h"

namespace entrograd::python {

namespace py = pybind11;

namespace {

// Compresses `gradient` (float32, contiguous, CPU, read in place) as step
// `step` of layer `layer` and sends it. Throws StatusError: the errors of
// LayerCompressor::Compress and Client::SendLayer; FAILED_PRECONDITION when
// the client is not connected.
void SendCompressed(PyClient& client, int64_t step, uint32_t layer,
                    LayerCompressor& compressor,
                    const torch::Tensor& gradient) {
  CheckCpuFloat32("gradient", gradient);
  Client* connected = client.Connected("send_compressed");
  ClientMetrics* metrics = client.metrics();
  const std::string& name = client.LayerName(layer);
  absl::Status status;
  {
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    CompressedLayer compressed;
    status = compressor.Compress(
        absl::MakeConstSpan(gradient.data_ptr<float>(), gradient.numel()), step,
        &compressed);
    if (status.ok()) {
      LayerContribution contribution =
          ContributionOf(std::move(compressed), layer);
      // The metrics DistributedOptimizer's hooks report, for the DDP hook.
      if (metrics != nullptr) {
        metrics->ObserveCompress(std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - start)
                                     .count());
        metrics->ObserveLayer(name, contribution.entropy,
                              contribution.keep_ratio);
      }
      status = connected->SendLayer(std::move(contribution));
      if (metrics != nullptr) metrics->UpdateTraffic(connected->traffic());
    }
  }
  if (!status.ok()) {
    throw StatusError(absl::Status(
        status.code(), absl::StrCat("step ", step, ", layer ", layer, ": ",
                                    status.message())));
  }
}

// Waits for the merged update of (step, layer) and writes it into `out`
// (float32, contiguous, CPU, numel of the layer): zeros where the merge
// has no entry. Returns its wire bytes. Throws StatusError: the errors of
// Client::WaitMerged and ScatterInto (`out` unchanged then).
int64_t WaitMergedInto(PyClient& client, int64_t step, uint32_t layer,
                       torch::Tensor& out) {
  CheckCpuFloat32("out", out);
  Client* connected = client.Connected("wait_merged_into");
  absl::StatusOr<MergedLayerUpdate> merged;
  absl::Status status;
  {
    py::gil_scoped_release release;
    merged = connected->WaitMerged(step, layer);
    if (ClientMetrics* metrics = client.metrics(); metrics != nullptr) {
      metrics->UpdateTraffic(connected->traffic());
    }
    if (merged.ok()) {
      std::vector<float> dense(static_cast<size_t>(out.numel()), 0.0f);
      status = ScatterInto(merged->payload, absl::MakeSpan(dense));
      if (status.ok()) {
        std::copy(dense.begin(), dense.end(), out.data_ptr<float>());
      }
    } else {
      status = merged.status();
    }
  }
  if (!status.ok()) {
    throw StatusError(absl::Status(
        status.code(), absl::StrCat("step ", step, ", layer ", layer, ": ",
                                    status.message())));
  }
  return merged->wire_bytes;
}

}  // namespace

void RegisterLayerExchange(py::module_& module) {
  module.def("send_compressed", &SendCompressed, py::arg("client"),
             py::arg("step"), py::arg("layer"), py::arg("compressor"),
             py::arg("gradient"));
  module.def("wait_merged_into", &WaitMergedInto, py::arg("client"),
             py::arg("step"), py::arg("layer"), py::arg("out"));
  module.def(
      "mark_applied",
      [](PyClient& client, int64_t step) {
        client.Connected("mark_applied")->MarkApplied(step);
      },
      py::arg("client"), py::arg("step"));
}

}  // namespace entrograd::python
