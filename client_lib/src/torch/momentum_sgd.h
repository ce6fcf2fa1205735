// The apply step of a layer sent whole under momentum correction
// (ALGORITHM.md 7): such a layer took no part in the local momentum of 5.1,
// so it takes ordinary momentum SGD on the merged gradient. Private to the
// LibTorch adapter.
#ifndef ENTROGRAD_TORCH_MOMENTUM_SGD_H_
#define ENTROGRAD_TORCH_MOMENTUM_SGD_H_

#include "torch/torch.h"

namespace entrograd {

// velocity <- momentum * velocity + merged; parameter <- parameter -
// learning_rate * velocity. `velocity` and `merged` are flat float32 tensors
// of parameter.numel() elements on the parameter's device; `velocity` and
// `parameter` are updated in place. Throws c10::Error as LibTorch does.
//
// Bitwise: each operation rounds once in float32 (LibTorch rounds a double
// scalar to float before multiplying a float tensor), and learning_rate *
// velocity is a tensor of its own, never the alpha of sub_, which may be a
// fused multiply-add in vectorised code and a separate multiply in the tail.
// So every rank computes the same bits, and so does a reference written as
// these same three formulas.
void MomentumSgdStep(const torch::Tensor& merged, double momentum,
                     double learning_rate, torch::Tensor& velocity,
                     torch::Tensor& parameter);

}  // namespace entrograd

#endif  // ENTROGRAD_TORCH_MOMENTUM_SGD_H_
