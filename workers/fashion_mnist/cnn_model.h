// The CNNs trained on Fashion-MNIST: two 5x5 conv/ReLU/max-pool stages and
// two fully connected layers. `cnn` (head width 128, 454,922 parameters) is
// compute-bound everywhere; `wide` (head width 8192, 25,832,330 parameters)
// has the same trunk and a dense gradient of 103 MB, so on a slow network
// its exchange dominates the step: the model that shows what compression
// buys.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::workers {

// The models --model selects.
enum class ModelKind { kCnn, kWide };

// "cnn" or "wide"; INVALID_ARGUMENT naming the text otherwise.
absl::StatusOr<ModelKind> ParseModelKind(absl::string_view name);
absl::string_view ModelKindName(ModelKind kind);
// Width of the hidden fully connected layer: 128 (cnn) or 8192 (wide).
int64_t HiddenWidthOf(ModelKind kind);

// Layers, in forward order:
//   conv1  1 -> 32 channels, 5x5, padding 2   [B,32,28,28], ReLU, max-pool 2
//   conv2 32 -> 64 channels, 5x5, padding 2   [B,64,14,14], ReLU, max-pool 2
//   flatten                                   [B,3136]
//   fc1   3136 -> H, ReLU                     (H: the hidden width)
//   fc2   H -> 10                             logits [B,10]
// named_parameters() lists conv1.weight, conv1.bias, conv2.weight,
// conv2.bias, fc1.weight, fc1.bias, fc2.weight, fc2.bias, always in that
// order (registration order): ranks flatten gradients in this order, so it
// is part of the wire contract.
class FashionCnnImpl : public torch::nn::Module {
 public:
  // Initialises from LibTorch's global generator (LibTorch's default
  // Kaiming-uniform init). Use MakeFashionCnn for a seeded model.
  explicit FashionCnnImpl(int64_t hidden_width = 128);

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
absl::StatusOr<FashionCnn> MakeFashionCnn(uint64_t seed,
                                          ModelKind kind = ModelKind::kCnn);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_
