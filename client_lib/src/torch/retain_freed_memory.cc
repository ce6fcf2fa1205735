#include "entrograd/torch/retain_freed_memory.h"

#include <malloc.h>

#include "absl/status/status.h"

namespace entrograd {
namespace {

// glibc refuses an mmap threshold above half its maximum heap size, which
// is 32 MiB on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX).
constexpr int kMmapThresholdBytes = 32 << 20;
// The heap top is given back only when this much is free there: never, in
// practice (mallopt takes an int).
constexpr int kTrimThresholdBytes = 1 << 30;

}  // namespace

absl::Status RetainFreedMemory() {
  if (mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) != 1) {
    return absl::FailedPreconditionError(
        "RetainFreedMemory: the C library refused mallopt(M_MMAP_THRESHOLD, "
        "32 MiB)");
  }
  if (mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) != 1) {
    return absl::FailedPreconditionError(
        "RetainFreedMemory: the C library refused mallopt(M_TRIM_THRESHOLD, "
        "1 GiB)");
  }
  return absl::OkStatus();
}

}  // namespace entrograd
