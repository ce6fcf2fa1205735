#include "workers/fashion_mnist/evaluate.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace entrograd::workers {
namespace {

// Puts the model in eval mode and restores its mode on every exit path,
// including a c10::Error thrown mid-evaluation.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(FashionCnn& model)
      : model_(model), was_training_(model->is_training()) {
    model_->eval();
  }
  ~EvalModeGuard() { model_->train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  FashionCnn& model_;
  bool was_training_;
};

absl::Status CheckInputs(const torch::Tensor& images,
                         const torch::Tensor& labels, int64_t batch_size) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size: ", batch_size, " must be at least 1"));
  }
  if (!images.defined() || !labels.defined()) {
    return absl::InvalidArgumentError("images or labels: undefined tensor");
  }
  if (images.dim() != 4 || images.size(1) != 1 || images.size(2) != 28 ||
      images.size(3) != 28 || images.scalar_type() != torch::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat("images: expected float32 [N, 1, 28, 28], got ",
                     c10::toString(images.scalar_type()), " [",
                     absl::StrJoin(images.sizes(), ", "), "]"));
  }
  if (labels.dim() != 1 || labels.scalar_type() != torch::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels: expected int64 [N], got ", c10::toString(labels.scalar_type()),
        " [", absl::StrJoin(labels.sizes(), ", "), "]"));
  }
  if (images.size(0) != labels.size(0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "images has ", images.size(0), " samples, labels ", labels.size(0)));
  }
  if (images.size(0) == 0) {
    return absl::InvalidArgumentError("images: no samples");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EvalResult> Evaluate(FashionCnn& model,
                                    const torch::Tensor& images,
                                    const torch::Tensor& labels,
                                    int64_t batch_size) {
  try {
    if (absl::Status status = CheckInputs(images, labels, batch_size);
        !status.ok()) {
      return status;
    }
    torch::NoGradGuard no_grad;
    EvalModeGuard eval_mode(model);
    EvalResult result;
    result.num_samples = images.size(0);
    // Per-batch sums are added in double so the mean does not drift with N.
    double loss_sum = 0.0;
    for (int64_t begin = 0; begin < result.num_samples; begin += batch_size) {
      const int64_t end = std::min(begin + batch_size, result.num_samples);
      const torch::Tensor batch_labels = labels.slice(0, begin, end);
      const torch::Tensor logits = model->forward(images.slice(0, begin, end));
      loss_sum +=
          torch::nn::functional::cross_entropy(
              logits, batch_labels,
              torch::nn::functional::CrossEntropyFuncOptions().reduction(
                  torch::kSum))
              .item<double>();
      result.num_correct +=
          logits.argmax(1).eq(batch_labels).sum().item<int64_t>();
    }
    result.accuracy = static_cast<double>(result.num_correct) /
                      static_cast<double>(result.num_samples);
    result.mean_loss = loss_sum / static_cast<double>(result.num_samples);
    return result;
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat("Evaluate: LibTorch: ", error.what_without_backtrace()));
  }
}

}  // namespace entrograd::workers
