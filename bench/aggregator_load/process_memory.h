// A process's resident memory from /proc/<pid>/status: the peak (VmHWM)
// and the current (VmRSS) resident set, for the load harness's flat-RSS
// check of each shard.
//
// Thread safety: thread-safe.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_PROCESS_MEMORY_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_PROCESS_MEMORY_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace entrograd::bench {

struct ProcessMemory {
  int64_t peak_rss_bytes = 0;  // VmHWM
  int64_t rss_bytes = 0;       // VmRSS
};

// NOT_FOUND when the process is gone; INTERNAL when the file lacks a field.
absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_PROCESS_MEMORY_H_
