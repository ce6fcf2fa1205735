// One rank of the Fashion-MNIST training job on entrograd: the CNN trained
// with data parallelism, its gradients compressed by entropy and merged by
// the aggregator shards. Emits JSON-line events on stdout
// (workers/run_format/worker_event.h) and, every checkpoint_interval steps,
// a checkpoint it resumes from after a restart.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_TRAINING_JOB_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_TRAINING_JOB_H_

#include "absl/status/status.h"
#include "workers/fashion_mnist/worker_config.h"

namespace entrograd::workers {

// Trains to the end (epochs, or max_steps). Errors: the data's, the
// client's (ABORTED when another rank died, UNAVAILABLE when the aggregator
// is gone for good) and the optimizer's, with context.
absl::Status RunTrainingJob(const WorkerConfig& config);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_TRAINING_JOB_H_
