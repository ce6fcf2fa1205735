// The checks a Join passes before it touches a JobRegistry: its own shape,
// its match with the job it joins, and its incarnation's bound. Each returns
// the precise status the stream is ended with; none changes any state.
// Layer names and job ids appear in messages escaped and cut (LogText).
// Thread safety: all functions are thread-safe (they read only their
// arguments and, for the incarnation, the clock).
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_JOIN_VALIDATION_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_JOIN_VALIDATION_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "aggregator/rounds/job_state.h"
#include "aggregator/rounds/registry_options.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// OK, or INVALID_ARGUMENT naming the first bad field: the job id, the world
// size (1 to options.max_world_size), the rank (below the world size),
// applied_step (-1 to below kMaxStep), the number of layers (1 to
// options.max_layers), a layer name (1 to kMaxLayerNameBytes printable ASCII
// bytes; names the layer's index) or a layer's numel.
absl::Status ValidateJoinShape(const v1::Join& join,
                               const RegistryOptions& options);

// OK when `join` declares what `job` is, else FAILED_PRECONDITION naming the
// first difference: world size, layer table (count, then each name and
// numel), initial parameter hash.
absl::Status CompareJoinWithJob(const JobState& job, const v1::Join& join);

// OK when join.incarnation is at most this shard's clock (microseconds since
// the Unix epoch) plus `max_lead`, else FAILED_PRECONDITION naming
// --max_incarnation_lead.
absl::Status CheckIncarnationLead(const v1::Join& join,
                                  absl::Duration max_lead);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_JOIN_VALIDATION_H_
