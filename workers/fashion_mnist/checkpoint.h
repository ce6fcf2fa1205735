// A worker's checkpoint: model parameters, the DistributedOptimizer's state
// (step, residuals, velocities, and the momentum buffers of layers sent whole)
// and, without momentum correction, the inner optimizer. Written to a temporary directory and renamed into place, so a
// crash mid-write leaves the previous checkpoint intact.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_CHECKPOINT_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_CHECKPOINT_H_

#include <string>

#include "absl/status/status.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "workers/fashion_mnist/cnn_model.h"

namespace entrograd::workers {

// `dir`/checkpoint holds the latest checkpoint.
absl::Status SaveCheckpoint(const std::string& dir, FashionCnn& model,
                            const DistributedOptimizer& optimizer,
                            torch::optim::Optimizer* inner);
// True and restores when `dir`/checkpoint exists; false when there is none.
// Errors: INVALID_ARGUMENT for a checkpoint that does not fit this model or
// these options, e.g. one written before layers sent whole kept a momentum
// buffer (DistributedOptimizer::LoadState names the missing entry).
absl::StatusOr<bool> LoadCheckpoint(const std::string& dir, FashionCnn& model,
                                    DistributedOptimizer& optimizer,
                                    torch::optim::Optimizer* inner);
// The step stored in `dir`'s checkpoint, or -1 when there is none (read
// before the client connects: the Join carries the applied step).
int64_t CheckpointStep(const std::string& dir);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_CHECKPOINT_H_
