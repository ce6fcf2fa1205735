// Test-set metrics of a FashionCnn.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_EVALUATE_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_EVALUATE_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "workers/fashion_mnist/cnn_model.h"

namespace entrograd::workers {

inline constexpr int64_t kDefaultEvalBatchSize = 1000;

struct EvalResult {
  int64_t num_samples = 0;
  int64_t num_correct = 0;
  double accuracy = 0.0;   // num_correct / num_samples, in [0, 1].
  double mean_loss = 0.0;  // Mean cross-entropy of the logits, in nats.
};

// Runs `model` over `images` (float32 [N, 1, 28, 28]) and `labels` (int64
// [N], values in [0, 9]) in batches of `batch_size`, without autograd and in
// eval mode; the model's train/eval mode is restored afterwards, also on
// error. The metrics are summed in a fixed batch order, so one model and
// dataset give the same numbers on every run.
//
// Errors: InvalidArgument for N == 0, mismatched or wrong shapes/dtypes,
// or batch_size < 1; Internal when LibTorch throws (c10::Error).
// Not thread-safe with other users of `model`.
absl::StatusOr<EvalResult> Evaluate(FashionCnn& model,
                                    const torch::Tensor& images,
                                    const torch::Tensor& labels,
                                    int64_t batch_size = kDefaultEvalBatchSize);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_EVALUATE_H_
