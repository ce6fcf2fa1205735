// entrograd._C: the C++ client library (entrograd::Client,
// DistributedOptimizer, the compression core) for Python. Tensors cross as
// the same LibTorch tensors the Python torch uses, without copies; the
// Python API around it is python/entrograd/.
#include <torch/extension.h>

#include "entrograd/torch/retain_freed_memory.h"
#include "python/src/bindings.h"
#include "python/src/status_error.h"

PYBIND11_MODULE(_C, module) {
  module.doc() = "entrograd C++ client library (use the entrograd package)";
  entrograd::python::RegisterStatusErrors();
  entrograd::python::RegisterOptions(module);
  entrograd::python::RegisterClient(module);
  entrograd::python::RegisterDistributedOptimizer(module);
  entrograd::python::RegisterCompressor(module);
  entrograd::python::RegisterLayerExchange(module);
  entrograd::python::RegisterModuleArchive(module);
  module.def(
      "retain_freed_memory",
      [] { entrograd::python::ThrowIfError(entrograd::RetainFreedMemory()); },
      "glibc keeps freed blocks up to 32 MiB for reuse (RetainFreedMemory)");
}
