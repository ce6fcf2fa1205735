// entrograd-worker: flags -> config -> one rank of the training job. Errors
// are printed and emitted as an "error" event; the exit status is non-zero.
#include <iostream>

#include "workers/fashion_mnist/training_job.h"
#include "workers/fashion_mnist/worker_events.h"
#include "workers/fashion_mnist/worker_flags.h"

int main(int argc, char** argv) {
  absl::StatusOr<entrograd::workers::WorkerConfig> config =
      entrograd::workers::WorkerConfigFromFlags(argc, argv);
  if (!config.ok()) {
    std::cerr << "entrograd-worker: " << config.status().message() << "\n";
    return 2;
  }
  absl::Status status = entrograd::workers::RunTrainingJob(*config);
  if (!status.ok()) {
    entrograd::workers::EventLine("error")
        .Add("rank", static_cast<int64_t>(config->rank))
        .Add("code", absl::StatusCodeToString(status.code()))
        .Add("message", status.message())
        .Emit();
    std::cerr << "entrograd-worker rank " << config->rank << ": " << status
              << "\n";
    return 1;
  }
  return 0;
}
