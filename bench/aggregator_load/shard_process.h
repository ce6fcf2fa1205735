// One entrograd-aggregator process of the load harness, on 127.0.0.1 port
// 0, its output in a log file (a pipe nobody drains would stall it), its
// ports read from the "serving on port P, metrics on port M" line.
//
// No orphans: the launcher's ChildProcess gives it PR_SET_PDEATHSIG=SIGKILL
// and kills its group when destroyed.
//
// Thread safety: start, stop and destroy on one thread (the one that
// started it: PR_SET_PDEATHSIG follows the spawning thread); pid() and the
// ports may be read from any thread.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_SHARD_PROCESS_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_SHARD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "workers/launcher/child_process.h"

namespace entrograd::bench {

class ShardProcess {
 public:
  // Starts `binary` with `flags` plus --listen and --metrics_listen on
  // 127.0.0.1:0, output to `log_path`. Waits up to `timeout` for the port
  // line. INTERNAL when it cannot start or exits first (its log attached);
  // DEADLINE_EXCEEDED when the line does not come (the process is killed).
  static absl::StatusOr<std::unique_ptr<ShardProcess>> Start(
      const std::string& binary, const std::vector<std::string>& flags,
      const std::string& log_path, absl::Duration timeout = absl::Seconds(20));

  pid_t pid() const { return process_->pid(); }
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const;
  // Whether the process still runs (reaps it if it exited).
  bool Running();

  // SIGTERM (the shard drains and exits 0), then up to `timeout` for the
  // exit; SIGKILL after that. Returns how it ended, e.g. "exited with
  // status 0".
  std::string Stop(absl::Duration timeout = absl::Seconds(10));

 private:
  ShardProcess(std::unique_ptr<launcher::ChildProcess> process,
               std::string log_path)
      : process_(std::move(process)), log_path_(std::move(log_path)) {}

  std::unique_ptr<launcher::ChildProcess> process_;
  std::string log_path_;
  int port_ = 0;
  int metrics_port_ = 0;
};

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_SHARD_PROCESS_H_
