// entrograd-worker's command line (absl flags) -> a validated WorkerConfig.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_FLAGS_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_FLAGS_H_

#include "absl/status/statusor.h"
#include "workers/fashion_mnist/worker_config.h"

namespace entrograd::workers {

// Parses argv (exits with usage on --help or an unknown flag). Errors:
// INVALID_ARGUMENT naming the flag.
absl::StatusOr<WorkerConfig> WorkerConfigFromFlags(int argc, char** argv);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_FLAGS_H_
