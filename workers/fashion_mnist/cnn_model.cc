#include "workers/fashion_mnist/cnn_model.h"

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace entrograd::workers {
namespace {

namespace nn = torch::nn;

// 28 -> 14 -> 7 after the two poolings, with 64 channels.
constexpr int64_t kFlatFeatures = 64 * 7 * 7;

}  // namespace

absl::StatusOr<ModelKind> ParseModelKind(absl::string_view name) {
  if (name == "cnn") return ModelKind::kCnn;
  if (name == "wide") return ModelKind::kWide;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model \"", name, "\" (expected cnn or wide)"));
}

absl::string_view ModelKindName(ModelKind kind) {
  return kind == ModelKind::kWide ? "wide" : "cnn";
}

int64_t HiddenWidthOf(ModelKind kind) {
  return kind == ModelKind::kWide ? 8192 : 128;
}

FashionCnnImpl::FashionCnnImpl(int64_t hidden_width) {
  // Registration order fixes named_parameters() order; keep it in forward
  // order.
  conv1_ = register_module("conv1",
                           nn::Conv2d(nn::Conv2dOptions(1, 32, 5).padding(2)));
  conv2_ = register_module("conv2",
                           nn::Conv2d(nn::Conv2dOptions(32, 64, 5).padding(2)));
  fc1_ = register_module("fc1", nn::Linear(kFlatFeatures, hidden_width));
  fc2_ = register_module("fc2", nn::Linear(hidden_width, 10));
}

torch::Tensor FashionCnnImpl::forward(torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(conv1_->forward(x)), 2);
  x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
  x = x.flatten(1);
  x = torch::relu(fc1_->forward(x));
  return fc2_->forward(x);
}

absl::StatusOr<FashionCnn> MakeFashionCnn(uint64_t seed, ModelKind kind) {
  try {
    torch::manual_seed(seed);
    return FashionCnn(HiddenWidthOf(kind));
  } catch (const c10::Error& error) {
    return absl::InternalError(absl::StrCat("MakeFashionCnn: LibTorch: ",
                                            error.what_without_backtrace()));
  }
}

}  // namespace entrograd::workers
