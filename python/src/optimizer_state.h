// DistributedOptimizer state as a Python dict, and back.
//
// The C++ optimizer checkpoints to a file (SaveState/LoadState: a LibTorch
// archive with "step", "layers", "residual_<i>", "velocity_<i>" and, for
// layers sent whole under momentum correction, "momentum_buffer_<i>"). The
// dict holds exactly those entries ("step" and "layers" as ints, the rest
// as float32 CPU tensors), so the file stays the one format: a dict saved
// with torch.save and a file written by SaveState (the C++ worker's
// optimizer.pt) carry the same state, and LoadState alone validates what
// is loaded.
#ifndef ENTROGRAD_PYTHON_SRC_OPTIMIZER_STATE_H_
#define ENTROGRAD_PYTHON_SRC_OPTIMIZER_STATE_H_

#include <pybind11/pybind11.h>

#include <string>

namespace entrograd::python {

// A fresh, empty file in the temporary directory, removed on destruction.
class TemporaryFile {
 public:
  TemporaryFile();  // throws StatusError INTERNAL when none can be created
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The entries of the archive at `path` (written by SaveState). Throws
// StatusError INVALID_ARGUMENT when it does not load or lacks "step" or
// "layers".
pybind11::dict ReadStateFile(const std::string& path);

// Writes `state` (ReadStateFile's shape) as an archive LoadState reads.
// Throws StatusError INVALID_ARGUMENT naming an entry that is not a tensor
// (or an int for "step" and "layers"), INTERNAL on I/O failure.
void WriteStateFile(const pybind11::dict& state, const std::string& path);

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_OPTIMIZER_STATE_H_
