// What a JobRegistry is configured with: the round timeout, the memory quota
// and the counts that bound what a client can make a shard hold, and the
// limits on steps and layer names that every Join and LayerUpdate is checked
// against.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_REGISTRY_OPTIONS_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_REGISTRY_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace entrograd::aggregator {

struct RegistryOptions {
  // A round not complete this long after its first contribution is aborted.
  absl::Duration round_timeout = absl::Seconds(60);
  // Bytes held at once (see job_registry.h for what counts); beyond it a
  // contribution is refused with a RESOURCE_EXHAUSTED RoundError
  // (retryable) and a Join creating a job with RESOURCE_EXHAUSTED. Default
  // 4 GiB.
  int64_t memory_quota_bytes = int64_t{4} << 30;
  // Jobs at once; a Join of a further job gets RESOURCE_EXHAUSTED.
  int max_jobs = 64;
  // Largest world size a Join may declare.
  uint32_t max_world_size = 4096;
  // Largest layer table a Join may declare. Flag --max_layers.
  int max_layers = 100000;
  // Rounds in flight per job: a contribution that would start one more is
  // refused with RESOURCE_EXHAUSTED naming --max_rounds_per_job (retryable:
  // rounds complete or time out). Also the most aborted-round records a job
  // keeps; beyond it the oldest is forgotten (a late resend of that round
  // then starts it again, and the round timeout ends it again).
  int max_rounds_per_job = 65536;
  // How far a Join's incarnation may be ahead of this shard's clock, read as
  // microseconds since the Unix epoch (the client's documented choice). A
  // Join beyond it gets FAILED_PRECONDITION. Bounds how long a token holder
  // who joins with a huge incarnation can lock out the rank's own restarts.
  // Flag --max_incarnation_lead.
  absl::Duration max_incarnation_lead = absl::Hours(1);
  // How many steps beyond the slowest rank's applied step a contribution
  // may be (OUT_OF_RANGE beyond).
  uint32_t max_steps_ahead = 4;
  // Reported in JoinAck.
  std::string shard_name = "aggregator";
  // Largest message a stream may carry, in bytes (reported in JoinAck). A
  // merged update that encodes larger aborts its round with
  // RESOURCE_EXHAUSTED instead of breaking every rank's stream on write.
  uint64_t max_message_bytes = uint64_t{256} << 20;
};

// Steps (and applied steps) above this are refused with INVALID_ARGUMENT:
// far beyond any training run, and low enough that the step-window
// arithmetic (applied step + 1 + max_steps_ahead) cannot overflow.
inline constexpr int64_t kMaxStep = int64_t{1} << 62;

// Longest layer name a Join may declare, in bytes. Names are 1 to this many
// printable ASCII bytes (0x20-0x7e); they are stored per job and named in
// logs and errors, so they are untrusted input with a bound.
inline constexpr size_t kMaxLayerNameBytes = 256;

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_REGISTRY_OPTIONS_H_
