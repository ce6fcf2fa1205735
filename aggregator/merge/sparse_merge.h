// The aggregator's merge core (ALGORITHM.md step 6): the contributions of the
// W ranks of one round (job, step, layer) become one merged update,
//   merged[i] = (sum over ranks r = 0..W-1 that carry i, of value_r[i]) / W,
// summed in float32 in ascending rank order, then divided by float(W).
// Pure C++ on spans: no gRPC, no protobuf.
//
// Determinism: contributions are passed indexed by rank, so arrival order
// cannot reach the result, and every strategy adds in rank order per index
// without threads or atomics. Same inputs -> same bits out.
//
// Absent indices and -0.0: a rank that does not carry index i contributes
// nothing (it is not "+0.0 added"). Implementation: each sum starts at -0.0,
// the exact additive identity of IEEE 754 (-0.0 + x == x bitwise for every
// x, +0.0 included), so the first contribution is in effect assigned. The
// visible consequence: an index carried only as -0.0 merges to -0.0, where
// adding +0.0 for absent ranks would have given +0.0; every other value is
// the same either way.
//
// Dense contributions: a rank may send its update dense (all numel values).
// It then carries exactly the elements whose bits are not +0.0, the rule
// EncodeDense (entrograd/codec.h) uses to turn a dense vector into a sparse
// one, so a rank's update merges to the same bits whichever encoding the
// codec picked for it.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_SPARSE_MERGE_H_
#define ENTROGRAD_AGGREGATOR_MERGE_SPARSE_MERGE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"

namespace entrograd::aggregator {

// One rank's contribution to a round. Borrowed: the spans must stay valid for
// the duration of the merge call only.
struct RankContribution {
  // Sparse: `indices` strictly ascending, each < numel, values[j] belongs to
  // indices[j]. Dense: `indices` empty and `values` holds all numel elements.
  bool dense = false;
  absl::Span<const uint32_t> indices;
  absl::Span<const float> values;

  static RankContribution Sparse(absl::Span<const uint32_t> indices,
                                 absl::Span<const float> values) {
    return RankContribution{false, indices, values};
  }
  static RankContribution Dense(absl::Span<const float> values) {
    return RankContribution{true, {}, values};
  }
};

// The merged update of a round: indices strictly ascending (the union of the
// ranks' indices), values[j] belongs to indices[j], every value finite.
struct MergedUpdate {
  uint64_t numel = 0;
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

// How the merge walks the inputs. All give bitwise identical results.
enum class MergeStrategy {
  // Scatter-add each rank's run of indices into a cache-sized block of sums
  // plus a "touched" bitmap, then scan the bitmap to emit ascending indices.
  // O(nonzeros + numel / 64); the default.
  kBlockedAccumulate,
  // k-way merge of the ranks' sorted lists through a binary heap keyed by
  // (index, rank). O(nonzeros * log W), nothing proportional to numel:
  // wins only when the whole round holds very few nonzeros.
  kKWayMerge,
  // As kBlockedAccumulate, for very sparse rounds (under 2 pairs per bitmap
  // word): validates the whole round first (so the runs need no checks),
  // uses smaller blocks (32K elements), walks each rank's run with a plain
  // cursor and flattens the bitmap with few data-dependent branches.
  kSmallBlockAccumulate,
};

// The strategy Merge uses for a round of `world_size` ranks carrying
// `total_nonzeros` (input pairs; numel for each dense rank) over `numel`
// elements. The one place the choice is made; see merge_strategy.cc for the
// measurements behind it.
MergeStrategy ChooseMergeStrategy(uint64_t numel, uint64_t total_nonzeros,
                                  int world_size);

// Merges rounds, reusing scratch memory between calls (a block of numel-sized
// sums is allocated on first use and kept).
//
// Thread safety: a SparseMerger is not thread-safe (its scratch is mutable);
// use one per thread. Distinct objects may be used concurrently.
class SparseMerger {
 public:
  SparseMerger();
  ~SparseMerger();
  SparseMerger(const SparseMerger&) = delete;
  SparseMerger& operator=(const SparseMerger&) = delete;

  // Merges `contributions` (contributions[r] is rank r's) of a round of
  // `contributions.size() == world_size` ranks over `numel` elements into
  // `*out`, whose vectors are overwritten (their capacity is reused).
  // Errors, all INVALID_ARGUMENT, checked before anything is merged; the
  // message names the rank and, where there is one, the position:
  //   numel == 0 or > kMaxPayloadNumel; world_size < 1;
  //   contributions.size() != world_size;
  //   a sparse rank with indices.size() != values.size(), an index >= numel
  //   or indices not strictly ascending; a dense rank without exactly numel
  //   values or with indices; a NaN or Inf value;
  //   a merged sum that overflows float32 (names the index).
  // On error `*out` is left empty (numel 0, no indices): the round is
  // rejected and no non-finite value is ever produced.
  absl::Status Merge(uint64_t numel, int world_size,
                     absl::Span<const RankContribution> contributions,
                     MergedUpdate* out);

  // As Merge, with the strategy forced (tests and benchmarks).
  absl::Status MergeWith(MergeStrategy strategy, uint64_t numel, int world_size,
                         absl::Span<const RankContribution> contributions,
                         MergedUpdate* out);

 private:
  // Runs `strategy` on a round whose shape (sizes, numel, world_size) is
  // checked; the contents are checked on the way (merge_validation.h).
  absl::Status MergeValidated(MergeStrategy strategy, uint64_t numel,
                              uint64_t total_nonzeros,
                              absl::Span<const RankContribution> contributions,
                              MergedUpdate* out);

  std::vector<float> block_sums_;        // -0.0 between calls
  std::vector<uint64_t> block_touched_;  // 0 between calls
};

// Convenience: a one-off merge with a fresh SparseMerger. Errors as Merge.
// Thread-safe.
absl::StatusOr<MergedUpdate> MergeContributions(
    uint64_t numel, int world_size,
    absl::Span<const RankContribution> contributions);

// Encodes a merged update for sending back to the ranks. With
// options.index_encoding unset the codec picks the encoding with the fewest
// wire bytes, so an update that is smaller sent dense comes back kDense.
// Errors: as EncodeSparse (INVALID_ARGUMENT for a hand-built update that
// breaks MergedUpdate's invariants). Thread-safe.
absl::StatusOr<EncodedPayload> EncodeMerged(const MergedUpdate& merged,
                                            const EncodeOptions& options = {});

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_MERGE_SPARSE_MERGE_H_
