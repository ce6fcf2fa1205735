// The CNNs trained on Fashion-MNIST. `cnn` (head width 128, 454,922
// parameters: two 5x5 conv/ReLU/max-pool stages and two fully connected
// layers) is compute-bound everywhere; `wide` (head width 8192, 25,832,330
// parameters) has the same trunk and a dense gradient of 103 MB, so on a
// slow network its exchange dominates the step: the model that shows what
// compression buys. `vgg` (three stages of three 3x3 convolutions, 777,930
// parameters) has 10 layers large enough to compress, where `cnn` has 4,
// so that a per-layer share (the entropy policy) has something to allocate.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_CNN_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::workers {

// The models --model selects.
enum class ModelKind { kCnn, kWide, kVgg };

// "cnn", "wide" or "vgg"; INVALID_ARGUMENT naming the text otherwise.
absl::StatusOr<ModelKind> ParseModelKind(absl::string_view name);
absl::string_view ModelKindName(ModelKind kind);
// Width of the hidden fully connected layer: 128 (cnn), 8192 (wide) or 256
// (vgg).
int64_t HiddenWidthOf(ModelKind kind);

// Layers of cnn and wide, in forward order:
//   conv1  1 -> 32 channels, 5x5, padding 2   [B,32,28,28], ReLU, max-pool 2
//   conv2 32 -> 64 channels, 5x5, padding 2   [B,64,14,14], ReLU, max-pool 2
//   flatten                                   [B,3136]
//   fc1   3136 -> H, ReLU                     (H: the hidden width)
//   fc2   H -> 10                             logits [B,10]
// Layers of vgg: conv<s>_<i> for stage s = 1..3 and i = 1..3, 3x3 with
// padding 1 and ReLU, channels 32, 64, 128 per stage, max-pool 2 after each
// stage (28 -> 14 -> 7 -> 3); flatten [B,1152]; fc1 1152 -> 256, ReLU; fc2
// 256 -> 10.
// named_parameters() lists each layer's weight then bias, in forward order
// (registration order): ranks flatten gradients in this order, so it is
// part of the wire contract.
class FashionCnnImpl : public torch::nn::Module {
 public:
  // Initialises from LibTorch's global generator: LibTorch's default
  // Kaiming-uniform init for cnn and wide; for vgg, He's normal init
  // (variance 2/fan_in, zero bias) on every layer followed by a ReLU, so
  // the signal survives its depth. Use MakeFashionCnn for a seeded model.
  explicit FashionCnnImpl(ModelKind kind = ModelKind::kCnn);

  // x: float32 [B, 1, 28, 28]; returns logits [B, 10]. Throws c10::Error on
  // a wrong shape or dtype, as LibTorch modules do.
  torch::Tensor forward(torch::Tensor x);

 private:
  // He init on the layers followed by a ReLU (vgg only; see the .cc).
  void InitialiseForReluDepth();

  // Convolutions in forward order; a stage ends (ReLU, then max-pool 2)
  // after the ones marked.
  std::vector<torch::nn::Conv2d> convs_;
  std::vector<bool> pool_after_;
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
