// The small CNN trained on Fashion-MNIST: two 5x5 conv/ReLU/max-pool stages
// and two fully connected layers, 454,922 parameters.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace entrograd::workers {

// Layers, in forward order:
//   conv1  1 -> 32 channels, 5x5, padding 2   [B,32,28,28], ReLU, max-pool 2
//   conv2 32 -> 64 channels, 5x5, padding 2   [B,64,14,14], ReLU, max-pool 2
//   flatten                                   [B,3136]
//   fc1   3136 -> 128, ReLU
//   fc2   128 -> 10                           logits [B,10]
// named_parameters() lists conv1.weight, conv1.bias, conv2.weight,
// conv2.bias, fc1.weight, fc1.bias, fc2.weight, fc2.bias, always in that
// order (registration order): ranks flatten gradients in this order, so it
// is part of the wire contract.
class FashionCnnImpl : public torch::nn::Module {
 public:
  // Initialises from LibTorch's global generator (LibTorch's default
  // Kaiming-uniform init). Use MakeFashionCnn for a seeded model.
  FashionCnnImpl();

  // x: float32 [B, 1, 28, 28]; returns logits [B, 10]. Throws c10::Error on
  // a wrong shape or dtype, as LibTorch modules do.
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
};
TORCH_MODULE(FashionCnn);

// A FashionCnn whose initial parameters depend only on `seed` (and the
// LibTorch build): the same seed gives bitwise identical parameters, so all
// ranks start from one model without broadcasting it.
//
// Side effect: calls torch::manual_seed(seed), which resets LibTorch's
// global generator; hence not thread-safe with other users of it.
// Errors: Internal when LibTorch throws (c10::Error).
absl::StatusOr<FashionCnn> MakeFashionCnn(uint64_t seed);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_
