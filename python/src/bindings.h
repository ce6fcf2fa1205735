// The parts of the entrograd._C extension module, each registered by its own
// function from module.cc.
#ifndef ENTROGRAD_PYTHON_SRC_BINDINGS_H_
#define ENTROGRAD_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace entrograd::python {

// CompressionOptions and ClientOptions as plain attribute classes.
void RegisterOptions(pybind11::module_& module);
// Client: entrograd::Client::Connect and the connected client.
void RegisterClient(pybind11::module_& module);
// DistributedOptimizer and its StepStats.
void RegisterDistributedOptimizer(pybind11::module_& module);
// LayerCompressor (the compression core on one tensor) and hash_parameters.
void RegisterCompressor(pybind11::module_& module);
// send_compressed, wait_merged_into, mark_applied: one layer's round at a
// time, for entrograd.comm_hook.
void RegisterLayerExchange(pybind11::module_& module);
// save_module_archive / load_module_archive: LibTorch C++ module files.
void RegisterModuleArchive(pybind11::module_& module);

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_BINDINGS_H_
