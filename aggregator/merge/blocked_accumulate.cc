// Blocked dense accumulation. The index range is cut into blocks of
// kBlockElements; for each block, every rank in rank order scatter-adds its
// run of indices inside the block (contiguous, since indices ascend) into a
// cache-resident block of sums and marks a touched bitmap; a scan of the
// bitmap then emits the block's indices in ascending order and resets the
// scratch. Inputs are read sequentially once and the random accesses stay in
// L2, which a single numel-sized buffer (100 MB for 25M elements) would not.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "aggregator/merge/float_bits.h"
#include "aggregator/merge/merge_checks.h"
#include "aggregator/merge/merge_strategies.h"
#include "aggregator/merge/merge_validation.h"
#include "aggregator/merge/merged_sum.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator::merge_internal {
namespace {

// The touched bitmap has one bit per element of the block; the summary, one
// bit per bitmap word (set when the word is nonzero). A sparse round sets
// both, so that the emit visits only the nonzero words: scanning every word
// of a block where most are zero costs a load and a badly predicted branch
// per word, more than the extra OR per scattered pair.
inline constexpr int kWordShift = 6;      // elements per bitmap word: 64
inline constexpr int kSummaryShift = 12;  // elements per summary word: 4096

template <bool kWithSummary>
void AddSparseRun(const uint32_t* indices, const float* values, size_t count,
                  uint32_t block_start, float* sums, uint64_t* touched,
                  uint64_t* summary) {
  for (size_t j = 0; j < count; ++j) {
    const uint32_t local = indices[j] - block_start;
    sums[local] += values[j];
    touched[local >> kWordShift] |= uint64_t{1} << (local & 63);
    if constexpr (kWithSummary) {
      summary[local >> kSummaryShift] |= uint64_t{1}
                                         << ((local >> kWordShift) & 63);
    }
  }
}

// A dense rank carries the elements that are not +0.0; the others add
// kEmptySum (x + -0.0 == x bitwise) and leave the bitmap alone, branch-free.
// (A round with a dense rank is never sparse: no summary.)
void AddDenseRun(const float* values, size_t count, float* sums,
                 uint64_t* touched) {
  for (size_t local = 0; local < count; ++local) {
    const float value = values[local];
    const bool carried = !IsPositiveZero(value);
    sums[local] += carried ? value : kEmptySum;
    touched[local >> kWordShift] |= uint64_t{carried} << (local & 63);
  }
}

// Emits the elements of bitmap word `w` (`bits`, nonzero) in ascending
// order, each sum undivided, and resets their sums. Returns how many.
inline size_t EmitWord(uint32_t block_start, uint64_t w, uint64_t bits,
                       float* sums, uint32_t* out_indices, float* out_values) {
  size_t emitted = 0;
  do {
    const uint32_t local =
        static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
    bits &= bits - 1;
    out_indices[emitted] = block_start + local;
    out_values[emitted] = sums[local];
    sums[local] = kEmptySum;
    ++emitted;
  } while (bits != 0);
  return emitted;
}

// Emits the touched elements of one block in ascending order and resets the
// scratch, by scanning every bitmap word. Returns how many were emitted.
size_t EmitBlock(uint32_t block_start, uint64_t words, float* sums,
                 uint64_t* touched, uint32_t* out_indices, float* out_values) {
  size_t emitted = 0;
  for (uint64_t w = 0; w < words; ++w) {
    const uint64_t bits = touched[w];
    if (bits == 0) continue;
    touched[w] = 0;
    emitted += EmitWord(block_start, w, bits, sums, out_indices + emitted,
                        out_values + emitted);
  }
  return emitted;
}

// As EmitBlock, visiting only the words the summary marks (and resetting
// the summary too).
size_t EmitBlockWithSummary(uint32_t block_start, uint64_t words, float* sums,
                            uint64_t* touched, uint64_t* summary,
                            uint32_t* out_indices, float* out_values) {
  size_t emitted = 0;
  const uint64_t summary_words = (words + 63) / 64;
  for (uint64_t s = 0; s < summary_words; ++s) {
    uint64_t marked = summary[s];
    summary[s] = 0;
    while (marked != 0) {
      const uint64_t w = s * 64 + __builtin_ctzll(marked);
      marked &= marked - 1;
      emitted += EmitWord(block_start, w, touched[w], sums,
                          out_indices + emitted, out_values + emitted);
      touched[w] = 0;
    }
  }
  return emitted;
}

// First position in [first, last) whose index is >= bound (`last` when
// none). A rank's run in one block is short next to its whole list, so the
// search gallops forward from `first` (probes 1, 2, 4, ... ahead, all near
// data the scatter reads next) and then bisects the last step, instead of
// bisecting the whole remaining list with cache misses far ahead. On input
// that is not ascending the answer is still inside [first, last]; the
// caller's checks then reject the round.
const uint32_t* FindRunEnd(const uint32_t* first, const uint32_t* last,
                           uint64_t bound) {
  const size_t size = static_cast<size_t>(last - first);
  size_t below = 0;  // first[0, below) are < bound
  size_t probe = 1;
  while (probe <= size && first[probe - 1] < bound) {
    below = probe;
    probe *= 2;
  }
  return std::lower_bound(
      first + below, first + std::min(probe, size), bound,
      [](uint32_t index, uint64_t b) { return index < b; });
}

// Resets the scratch an aborted block left behind (sums, bitmap, summary).
void ClearBlock(uint64_t words, float* sums, uint64_t* touched,
                uint64_t* summary) {
  std::fill(summary, summary + (words + 63) / 64, uint64_t{0});
  for (uint64_t w = 0; w < words; ++w) {
    uint64_t bits = touched[w];
    touched[w] = 0;
    while (bits != 0) {
      sums[w * 64 + __builtin_ctzll(bits)] = kEmptySum;
      bits &= bits - 1;
    }
  }
}

// Adds one sparse rank's pairs that fall below `end` (all >= block_start,
// since the round is validated and ascending), starting at *cursor, marking
// the bitmap (and, with kWithSummary, its summary). No per-pair bounds check where the rank's last
// index is >= end: that index then stops the walk, as a sentinel would.
template <bool kWithSummary>
inline void AddRunUpTo(const RankContribution& c, uint64_t end,
                       uint32_t block_start, size_t* cursor, float* sums,
                       uint64_t* touched, uint64_t* summary) {
  const uint32_t* const indices = c.indices.data();
  const float* const values = c.values.data();
  const size_t size = c.indices.size();
  size_t j = *cursor;
  if (j == size) return;
  const auto add = [&](size_t k) {
    const uint32_t local = indices[k] - block_start;
    sums[local] += values[k];
    touched[local >> kWordShift] |= uint64_t{1} << (local & 63);
    if constexpr (kWithSummary) {
      summary[local >> kSummaryShift] |= uint64_t{1}
                                         << ((local >> kWordShift) & 63);
    }
  };
  if (indices[size - 1] >= end) {
    for (; indices[j] < end; ++j) add(j);
  } else {
    for (; j < size; ++j) add(j);  // the rank's last run
  }
  *cursor = j;
}

// Writes the set bits of the bitmap as ascending indices and clears the
// bitmap (and summary). Returns how many. With kWithSummary only the words
// the summary marks (nonzero) are visited, else every word. In a very sparse
// block a word holds 0, 1 or 2 bits, so a loop over its bits would
// mispredict about once per word; instead each word unconditionally writes
// kSlots slots (junk past its real bits) and advances by the real count,
// looping only for the rare word with more (2 slots measured best, 3 and 4
// slower). Needs kSlots slots of slack past the real output. Gathering the
// sums in the same loop (junk slots reading a dummy sum) measured slower.
inline constexpr int kSlots = 2;
template <bool kWithSummary>
size_t FlattenBitmap(uint32_t block_start, uint64_t words, uint64_t* touched,
                     uint64_t* summary, uint32_t* out_indices) {
  size_t emitted = 0;
  for (uint64_t s = 0; s < (words + 63) / 64; ++s) {
    uint64_t marked = ~uint64_t{0};
    if constexpr (kWithSummary) {
      marked = summary[s];
      summary[s] = 0;
    }
    const uint64_t last = std::min<uint64_t>(64, words - s * 64);
    for (uint64_t i = 0; kWithSummary ? marked != 0 : i < last; ++i) {
      uint64_t w = s * 64 + i;
      if constexpr (kWithSummary) {
        w = s * 64 + __builtin_ctzll(marked);
        marked &= marked - 1;
      }
      uint64_t bits = touched[w];
      touched[w] = 0;
      const uint32_t base = block_start + static_cast<uint32_t>(w * 64);
      uint32_t* const o = out_indices + emitted;
      size_t count = 0;
      for (int k = 0; k < kSlots; ++k) {
        // | bit 63 keeps ctz defined on a spent word; that slot is junk.
        o[k] = base + static_cast<uint32_t>(
                          __builtin_ctzll(bits | (uint64_t{1} << 63)));
        count += bits != 0;
        bits &= bits - 1;
      }
      while (bits != 0) {  // more than kSlots bits: rare in a sparse block
        o[count++] = base + static_cast<uint32_t>(__builtin_ctzll(bits));
        bits &= bits - 1;
      }
      emitted += count;
    }
  }
  return emitted;
}

}  // namespace

absl::Status BlockedAccumulate(uint64_t numel,
                               absl::Span<const RankContribution> contributions,
                               uint64_t max_output,
                               std::vector<float>* block_sums,
                               std::vector<uint64_t>* block_touched,
                               MergedUpdate* out) {
  const uint64_t block = std::min(kBlockElements, (numel + 63) & ~uint64_t{63});
  if (block_sums->size() < block) block_sums->resize(block, kEmptySum);
  // The bitmap, then the summary, share one scratch vector.
  const uint64_t bitmap_words = block / 64;
  if (block_touched->size() < bitmap_words + (bitmap_words + 63) / 64) {
    block_touched->resize(bitmap_words + (bitmap_words + 63) / 64, 0);
  }
  float* const sums = block_sums->data();
  uint64_t* const touched = block_touched->data();
  uint64_t* const summary = touched + bitmap_words;

  // Sparse round: under 2 pairs per bitmap word on average, so many words
  // stay zero and the summary pays. Measured (bench/merge_bench.cc): W=16
  // at 0.1% (1 pair/word) gains ~25% with it, W=4 at 1% (2.6) loses ~10%.
  bool sparse = max_output * 32 < numel;
  for (const RankContribution& c : contributions) sparse = sparse && !c.dense;

  out->indices.resize(max_output);
  out->values.resize(max_output);
  uint32_t* out_indices = out->indices.data();
  float* out_values = out->values.data();
  size_t emitted = 0;

  const int world_size = static_cast<int>(contributions.size());
  const float divisor = static_cast<float>(world_size);
  // Where the first overflowed sum was emitted; reported only once the rest
  // of the round has been checked, as an input error takes precedence.
  size_t first_overflow = SIZE_MAX;
  // The contents of the round are checked here, run by run, while the run
  // is hot in L1 and just before it is scattered (so nothing out of range is
  // ever written), rather than in a separate pass over all the inputs. A
  // failed check only tells that the round is bad: ValidateRound then
  // rescans it to name the first error in rank order.
  bool valid = true;
  std::vector<size_t> cursor(contributions.size(), 0);
  for (uint64_t start = 0; start < numel && valid; start += block) {
    const uint64_t end = std::min(start + block, numel);
    const uint64_t words = (end - start + 63) / 64;
    for (size_t rank = 0; rank < contributions.size(); ++rank) {
      const RankContribution& c = contributions[rank];
      if (c.dense) {
        const float* values = c.values.data() + start;
        if (!AllFinite(values, end - start)) {
          valid = false;
          break;
        }
        AddDenseRun(values, end - start, sums, touched);
        continue;
      }
      const uint32_t* const indices = c.indices.data();
      const size_t position = cursor[rank];
      const uint32_t* first = indices + position;
      const uint32_t* last = FindRunEnd(first, indices + c.indices.size(), end);
      const size_t count = static_cast<size_t>(last - first);
      if (count == 0) continue;
      const float* values = c.values.data() + position;
      // Each run ascending and inside [start, end) (so above the rank's
      // earlier runs, which lie in earlier blocks); with every index consumed
      // (checked after the loop) that is exactly "strictly ascending and
      // < numel" for the whole list. The range check also keeps the scatter
      // inside the block on any input.
      valid = first[0] >= start && last[-1] < end &&
              StrictlyAscending(first, count) && AllFinite(values, count);
      if (!valid) break;
      if (sparse) {
        AddSparseRun<true>(first, values, count, static_cast<uint32_t>(start),
                           sums, touched, summary);
      } else {
        AddSparseRun<false>(first, values, count,
                            static_cast<uint32_t>(start), sums, touched,
                            summary);
      }
      cursor[rank] = position + count;
    }
    if (!valid) {
      ClearBlock(words, sums, touched, summary);
      break;
    }
    const size_t block_emitted =
        sparse ? EmitBlockWithSummary(static_cast<uint32_t>(start), words,
                                      sums, touched, summary,
                                      out_indices + emitted,
                                      out_values + emitted)
               : EmitBlock(static_cast<uint32_t>(start), words, sums, touched,
                           out_indices + emitted, out_values + emitted);
    // Divided here, vectorised, while the block's output is still in L1,
    // with the overflow check in the same pass.
    if (!DivideAllFinite(out_values + emitted, block_emitted, divisor) &&
        first_overflow == SIZE_MAX) {
      first_overflow = emitted;
      while (!IsNonFinite(out_values[first_overflow])) ++first_overflow;
    }
    emitted += block_emitted;
  }
  for (size_t rank = 0; rank < contributions.size() && valid; ++rank) {
    const RankContribution& c = contributions[rank];
    valid = c.dense || cursor[rank] == c.indices.size();
  }
  if (!valid) {
    uint64_t total_nonzeros = 0;
    absl::Status status =
        ValidateRound(numel, world_size, contributions, &total_nonzeros);
    if (status.ok()) {
      // Unreachable: the checks above fail only on input ValidateRound
      // rejects. Never merge a round the two disagree on.
      status = absl::InternalError("merge: inconsistent input checks");
    }
    return status;
  }
  if (first_overflow != SIZE_MAX) {
    return SumOverflowError(out_indices[first_overflow]);
  }
  out->indices.resize(emitted);
  out->values.resize(emitted);
  return absl::OkStatus();
}

// SmallBlockAccumulate: at ~1 pair per bitmap word BlockedAccumulate spends
// most of its time on per-run work (galloping search, vectorised checks of
// runs of a few pairs) and on an emit that branches on every word and bit.
// Here the round is validated once up front by ValidateRound, so each run is
// a plain cursor walk; blocks are smaller (kSmallBlockElements); and the
// bitmap is flattened with few data-dependent branches. Same order of
// additions per index as BlockedAccumulate: ranks in order within each
// block, each sum starting at kEmptySum.
absl::Status SmallBlockAccumulate(
    uint64_t numel, absl::Span<const RankContribution> contributions,
    uint64_t max_output, std::vector<float>* block_sums,
    std::vector<uint64_t>* block_touched, MergedUpdate* out) {
  const uint64_t block =
      std::min(kSmallBlockElements, (numel + 63) & ~uint64_t{63});
  if (block_sums->size() < block) block_sums->resize(block, kEmptySum);
  // The bitmap, then the summary, share one scratch vector (as in
  // BlockedAccumulate, whose layout may differ: both leave it all 0).
  const uint64_t bitmap_words = block / 64;
  if (block_touched->size() < bitmap_words + (bitmap_words + 63) / 64) {
    block_touched->resize(bitmap_words + (bitmap_words + 63) / 64, 0);
  }
  float* const sums = block_sums->data();
  uint64_t* const touched = block_touched->data();
  uint64_t* const summary = touched + bitmap_words;

  // Slack for FlattenBitmap's junk writes; trimmed at the end.
  out->indices.resize(max_output + kSlots);
  out->values.resize(max_output);
  uint32_t* const out_indices = out->indices.data();
  float* const out_values = out->values.data();
  size_t emitted = 0;

  const float divisor = static_cast<float>(contributions.size());
  size_t first_overflow = SIZE_MAX;
  // Under 0.5 merged pairs per bitmap word most words are zero and the
  // summary pays for its extra OR per pair: W=4 at 0.1% (0.26 pairs/word)
  // is ~1.5x faster with it; W=16 at 0.1% (1 pair/word, 37% of words zero)
  // ~10% faster without (bench/merge_bench.cc).
  const bool with_summary = max_output * 128 < numel;
  std::vector<size_t> cursor(contributions.size(), 0);
  for (uint64_t start = 0; start < numel; start += block) {
    const uint64_t end = std::min(start + block, numel);
    const uint32_t block_start = static_cast<uint32_t>(start);
    for (size_t rank = 0; rank < contributions.size(); ++rank) {
      const RankContribution& c = contributions[rank];
      if (c.dense) {
        // Not a round this strategy is chosen for, but it must merge any.
        // (A dense rank makes max_output == numel: never with_summary.)
        AddDenseRun(c.values.data() + start, end - start, sums, touched);
      } else if (with_summary) {
        AddRunUpTo<true>(c, end, block_start, &cursor[rank], sums, touched,
                         summary);
      } else {
        AddRunUpTo<false>(c, end, block_start, &cursor[rank], sums, touched,
                          summary);
      }
    }
    const uint64_t words = (end - start + 63) / 64;
    const size_t count =
        with_summary ? FlattenBitmap<true>(block_start, words, touched,
                                           summary, out_indices + emitted)
                     : FlattenBitmap<false>(block_start, words, touched,
                                            summary, out_indices + emitted);
    // Gathers the sums in index order and resets them (separate from the
    // flatten, whose junk slots must not touch the sums).
    for (size_t k = emitted; k < emitted + count; ++k) {
      const uint32_t local = out_indices[k] - block_start;
      out_values[k] = sums[local];
      sums[local] = kEmptySum;
    }
    if (!DivideAllFinite(out_values + emitted, count, divisor) &&
        first_overflow == SIZE_MAX) {
      first_overflow = emitted;
      while (!IsNonFinite(out_values[first_overflow])) ++first_overflow;
    }
    emitted += count;
  }
  if (first_overflow != SIZE_MAX) {
    return SumOverflowError(out_indices[first_overflow]);
  }
  out->indices.resize(emitted);
  out->values.resize(emitted);
  return absl::OkStatus();
}

}  // namespace entrograd::aggregator::merge_internal
