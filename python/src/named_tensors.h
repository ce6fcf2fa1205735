// (name, tensor) pairs in a fixed order: named_parameters() as it crosses
// from Python.
#ifndef ENTROGRAD_PYTHON_SRC_NAMED_TENSORS_H_
#define ENTROGRAD_PYTHON_SRC_NAMED_TENSORS_H_

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace entrograd::python {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_NAMED_TENSORS_H_
