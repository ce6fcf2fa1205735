// _C.LayerCompressor: the compression core (entrograd/layer_compressor.h)
// on one float32 CPU tensor, read in place. It is what the optimizer's
// hooks run per layer, exposed so that a gradient's compression can be
// inspected (and checked against the C++ core) from Python.
// _C.hash_parameters: the Join's parameter hash (HashOfParameters).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include <cstring>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "entrograd/layer_compressor.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "python/src/bindings.h"
#include "python/src/status_error.h"
#include "python/src/tensor_checks.h"

namespace entrograd::python {

namespace py = pybind11;

namespace {

torch::Tensor FloatTensorOf(absl::Span<const float> values) {
  torch::Tensor tensor =
      torch::empty({static_cast<int64_t>(values.size())}, torch::kFloat32);
  if (!values.empty()) {
    std::memcpy(tensor.data_ptr<float>(), values.data(),
                values.size() * sizeof(float));
  }
  return tensor;
}

// Indices as int64 (LibTorch has no uint32 tensors).
torch::Tensor IndexTensorOf(const std::vector<uint32_t>& indices) {
  torch::Tensor tensor =
      torch::empty({static_cast<int64_t>(indices.size())}, torch::kInt64);
  int64_t* out = tensor.data_ptr<int64_t>();
  for (size_t i = 0; i < indices.size(); ++i) out[i] = indices[i];
  return tensor;
}

std::unique_ptr<LayerCompressor> CreateCompressor(
    int64_t numel, const CompressionOptions& options) {
  absl::StatusOr<std::unique_ptr<LayerCompressor>> compressor =
      LayerCompressor::Create(numel, options);
  ThrowIfError(compressor.status());
  return std::move(*compressor);
}

py::dict Compress(LayerCompressor& self, const torch::Tensor& gradient,
                  int64_t step) {
  CheckCpuFloat32("gradient", gradient);
  CompressedLayer out;
  ThrowIfError(self.Compress(
      absl::MakeConstSpan(gradient.data_ptr<float>(), gradient.numel()), step,
      &out));
  py::dict result;
  result["step"] = out.step;
  result["numel"] = out.numel;
  result["k"] = out.k;
  result["dense"] = out.dense;
  result["indices"] = IndexTensorOf(out.indices);
  result["values"] = FloatTensorOf(out.values);
  result["entropy"] = out.entropy.entropy;
  result["effective_fraction"] = out.entropy.effective_fraction;
  result["keep_ratio"] = out.keep_ratio;
  return result;
}

}  // namespace

void RegisterCompressor(py::module_& module) {
  py::class_<LayerCompressor>(module, "LayerCompressor")
      .def(py::init(&CreateCompressor), py::arg("numel"), py::arg("options"))
      .def("compress", &Compress, py::arg("gradient"), py::arg("step"))
      .def_property_readonly("numel", &LayerCompressor::numel)
      .def_property_readonly("sent_whole", &LayerCompressor::sent_whole)
      .def_property_readonly("residual",
                             [](const LayerCompressor& self) {
                               return FloatTensorOf(self.residual());
                             })
      .def_property_readonly("velocity", [](const LayerCompressor& self) {
        return FloatTensorOf(self.velocity());
      });

  module.def(
      "hash_parameters",
      [](const std::vector<torch::Tensor>& tensors) {
        for (size_t i = 0; i < tensors.size(); ++i) {
          CheckParameter(std::to_string(i), tensors[i]);
        }
        return HashOfParameters(tensors);
      },
      py::arg("tensors"));
}

}  // namespace entrograd::python
