// The state a JobRegistry keeps per job and per round in flight: plain
// structs, no locking of their own. The registry guards every instance with
// its mutex; the pure parts of the round logic (admission.h) read them, and
// tests build them by hand.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_JOB_STATE_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_JOB_STATE_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "aggregator/rounds/stream_sink.h"
#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// (step, layer index): a round of one job. Ordered by step first, so the
// rounds of released steps are a prefix of each map below.
using RoundKey = std::pair<int64_t, uint32_t>;

// The global top-k factor of a round (LayerUpdate.merged_keep_factor): the
// largest the ranks asked for, or 0 (the whole union) when any rank asked for
// 0. Both folds are commutative, so the arrival order cannot change it.
class MergedKeepFactor {
 public:
  void Add(double factor) {
    any_union_ = any_union_ || factor == 0.0;
    largest_ = std::max(largest_, factor);
  }
  double factor() const { return any_union_ ? 0.0 : largest_; }

 private:
  bool any_union_ = false;
  double largest_ = 0.0;
};

// A round in flight: the contributions received so far, by rank.
struct RoundState {
  absl::Time started;
  absl::Time deadline;  // started + the round timeout
  // by_rank[r] is rank r's decoded contribution once it arrived; the merge
  // reads them in this (rank) order, never in arrival order.
  std::vector<std::optional<DecodedPayload>> by_rank;
  int contributed = 0;
  // Counted against the quota: RoundOverheadBytes plus the decoded
  // contributions.
  int64_t bytes = 0;
  // Entries of the decoded contributions, for MergeBytesBound.
  uint64_t entries = 0;
  // The contributions' merged_keep_factor, folded as they arrive.
  MergedKeepFactor keep_factor;
};

// One job: its layer table, its ranks' streams and progress, and its
// rounds in flight, merged and aborted.
struct JobState {
  struct Member {
    uint64_t incarnation = 0;
    bool ever_joined = false;
    std::shared_ptr<StreamSink> sink;  // null while disconnected
    int64_t applied_step = -1;
    // Join.accepted_value_types of its last join, what it can decode: bit
    // 1 << t for ValueType t. Fixed-size, however long the list it sent.
    uint32_t accepted_value_type_bits = 0;
    // Whether its last Join listed INDEX_ENCODING_GAP_RANGE in
    // accepted_index_encodings.
    bool accepts_gap_range = false;
  };
  // A complete round's merged update, kept until every rank applied it.
  struct Completed {
    // Null while the round is being merged: a duplicate then is dropped
    // without an answer (the merge delivers to every live rank).
    std::shared_ptr<const v1::AggregatorMessage> message;
    int64_t bytes = 0;
  };

  std::string id;
  // Which instance of the job (MemberId::job_generation).
  uint64_t generation = 0;
  uint32_t world_size = 0;
  std::vector<v1::LayerInfo> layers;
  uint64_t params_hash = 0;
  std::vector<Member> members;  // by rank
  std::map<RoundKey, std::unique_ptr<RoundState>> rounds;
  std::map<RoundKey, Completed> completed;
  std::map<RoundKey, absl::Status> aborted;  // why, kept like completed
  // Counted against the quota: JobTableBytes, and the aborted records.
  int64_t table_bytes = 0;
  int64_t aborted_bytes = 0;

  // Every rank applied every layer of steps <= this.
  int64_t MinAppliedStep() const;
  // The slowest rank among those that joined since the shard started (-1
  // when none did).
  int64_t MinJoinedAppliedStep() const;
  // The value types every member that ever joined accepts (kF32 always: a
  // worker that lists none predates the field and reads float32).
  std::vector<ValueType> ValueTypesEveryMemberAccepts() const;
  // Whether every member that ever joined decodes INDEX_ENCODING_GAP_RANGE
  // (false for one that predates it), so that a merged update may use it.
  bool EveryMemberAcceptsGapRange() const;
  bool HasLiveStream() const;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_JOB_STATE_H_
