// Checks on tensors that come from Python, before the C++ API sees them:
// entrograd's CPU paths read a float32 tensor's memory in place (no copy),
// so a tensor of another dtype, device or layout is refused here with a
// message naming it, instead of being converted behind the caller's back.
#ifndef ENTROGRAD_PYTHON_SRC_TENSOR_CHECKS_H_
#define ENTROGRAD_PYTHON_SRC_TENSOR_CHECKS_H_

#include <torch/torch.h>

#include <string>

namespace entrograd::python {

// Throws StatusError INVALID_ARGUMENT naming `what` unless `tensor` is a
// defined, dense, contiguous float32 tensor on the CPU.
void CheckCpuFloat32(const std::string& what, const torch::Tensor& tensor);

// Throws StatusError INVALID_ARGUMENT naming the parameter unless it is a
// defined, dense float32 tensor on the CPU or a CUDA device (the devices
// DistributedOptimizer applies updates on).
void CheckParameter(const std::string& name, const torch::Tensor& tensor);

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_TENSOR_CHECKS_H_
