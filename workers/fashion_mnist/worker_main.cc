// entrograd-worker: flags -> config -> one rank of the training job. Errors
// are printed and emitted as an "error" event; the exit status is non-zero.
#include <iostream>
#include <string>

#include "workers/fashion_mnist/training_job.h"
#include "workers/fashion_mnist/worker_flags.h"
#include "workers/run_format/worker_event.h"

int main(int argc, char** argv) {
  absl::StatusOr<entrograd::workers::WorkerConfig> config =
      entrograd::workers::WorkerConfigFromFlags(argc, argv);
  if (!config.ok()) {
    std::cerr << "entrograd-worker: " << config.status().message() << "\n";
    return 2;
  }
  absl::Status status = entrograd::workers::RunTrainingJob(*config);
  if (!status.ok()) {
    entrograd::run_format::ErrorEvent error;
    error.rank = static_cast<int>(config->rank);
    error.code = absl::StatusCodeToString(status.code());
    error.message = std::string(status.message());
    entrograd::run_format::EmitWorkerEvent(error);
    std::cerr << "entrograd-worker rank " << config->rank << ": " << status
              << "\n";
    return 1;
  }
  return 0;
}
