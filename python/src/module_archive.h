// The file torch::save(module, path) writes and torch::load(module, path)
// reads in C++ (a LibTorch serialize archive: one nested archive per
// submodule, one entry per parameter and buffer). Python's torch.save writes
// a different (pickle) format, so a Python job that shares weights with C++
// workers (entrograd-worker resumes from <out>/checkpoint/model.pt) writes
// and reads this one.
#ifndef ENTROGRAD_PYTHON_SRC_MODULE_ARCHIVE_H_
#define ENTROGRAD_PYTHON_SRC_MODULE_ARCHIVE_H_

#include <string>

#include "python/src/named_tensors.h"

namespace entrograd::python {

// Writes `tensors`, named by dotted paths as named_parameters() /
// named_buffers() give them ("conv1.weight"), as torch::save of the module
// would. Buffers are `buffers`. Throws StatusError INVALID_ARGUMENT for an
// empty name or one that is both a tensor and a submodule, INTERNAL on I/O
// failure.
void SaveModuleArchive(const std::string& path, const NamedTensors& parameters,
                       const NamedTensors& buffers);

// Copies every named tensor's value from the archive at `path` into that
// tensor in place (shapes must match), as torch::load of the module would.
// Throws StatusError INVALID_ARGUMENT when the file does not load, an entry
// is missing, or a shape differs (naming it).
void LoadModuleArchive(const std::string& path, const NamedTensors& parameters,
                       const NamedTensors& buffers);

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_MODULE_ARCHIVE_H_
