// Blocked dense accumulation. The index range is cut into blocks of
// kBlockElements; for each block, every rank in rank order scatter-adds its
// run of indices inside the block (contiguous, since indices ascend) into a
// cache-resident block of sums and marks a touched bitmap; a scan of the
// bitmap then emits the block's indices in ascending order and resets the
// scratch. Inputs are read sequentially once and the random accesses stay in
// L2, which a single numel-sized buffer (100 MB for 25M elements) would not.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "aggregator/merge/float_bits.h"
#include "aggregator/merge/merge_strategies.h"
#include "aggregator/merge/merged_sum.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator::merge_internal {
namespace {

void AddSparseRun(const uint32_t* indices, const float* values, size_t count,
                  uint32_t block_start, float* sums, uint64_t* touched) {
  for (size_t j = 0; j < count; ++j) {
    const uint32_t local = indices[j] - block_start;
    sums[local] += values[j];
    touched[local >> 6] |= uint64_t{1} << (local & 63);
  }
}

// A dense rank carries the elements that are not +0.0; the others add
// kEmptySum (x + -0.0 == x bitwise) and leave the bitmap alone, branch-free.
void AddDenseRun(const float* values, size_t count, float* sums,
                 uint64_t* touched) {
  for (size_t local = 0; local < count; ++local) {
    const float value = values[local];
    const bool carried = !IsPositiveZero(value);
    sums[local] += carried ? value : kEmptySum;
    touched[local >> 6] |= uint64_t{carried} << (local & 63);
  }
}

// Emits the touched elements of one block in ascending order, each sum
// divided by `divisor`, and resets the scratch. Returns how many were
// emitted. An overflowed sum stays non-finite after the division (W >= 1),
// so overflow is found on the output afterwards.
size_t EmitBlock(uint32_t block_start, uint64_t words, float divisor,
                 float* sums, uint64_t* touched, uint32_t* out_indices,
                 float* out_values) {
  size_t emitted = 0;
  for (uint64_t w = 0; w < words; ++w) {
    uint64_t bits = touched[w];
    if (bits == 0) continue;
    touched[w] = 0;
    do {
      const uint32_t local =
          static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
      bits &= bits - 1;
      out_indices[emitted] = block_start + local;
      out_values[emitted] = sums[local] / divisor;
      sums[local] = kEmptySum;
      ++emitted;
    } while (bits != 0);
  }
  return emitted;
}

bool AllFinite(const float* values, size_t count) {
  uint32_t non_finite = 0;
  for (size_t j = 0; j < count; ++j) {
    non_finite |= static_cast<uint32_t>(IsNonFinite(values[j]));
  }
  return non_finite == 0;
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
  if (block_touched->size() < block / 64) block_touched->resize(block / 64, 0);
  float* const sums = block_sums->data();
  uint64_t* const touched = block_touched->data();

  out->indices.resize(max_output);
  out->values.resize(max_output);
  uint32_t* out_indices = out->indices.data();
  float* out_values = out->values.data();
  size_t emitted = 0;

  const float divisor = static_cast<float>(contributions.size());
  std::vector<size_t> cursor(contributions.size(), 0);
  for (uint64_t start = 0; start < numel; start += block) {
    const uint64_t end = std::min(start + block, numel);
    for (size_t rank = 0; rank < contributions.size(); ++rank) {
      const RankContribution& c = contributions[rank];
      if (c.dense) {
        AddDenseRun(c.values.data() + start, end - start, sums, touched);
        continue;
      }
      const uint32_t* first = c.indices.data() + cursor[rank];
      const uint32_t* last = std::lower_bound(
          first, c.indices.data() + c.indices.size(), end,
          [](uint32_t index, uint64_t bound) { return index < bound; });
      const size_t count = static_cast<size_t>(last - first);
      AddSparseRun(first, c.values.data() + cursor[rank], count,
                   static_cast<uint32_t>(start), sums, touched);
      cursor[rank] += count;
    }
    emitted += EmitBlock(static_cast<uint32_t>(start), (end - start + 63) / 64,
                         divisor, sums, touched, out_indices + emitted,
                         out_values + emitted);
  }
  // One sequential pass over the output, after the scratch is clean again.
  if (!AllFinite(out_values, emitted)) {
    for (size_t j = 0; j < emitted; ++j) {
      if (IsNonFinite(out_values[j])) return SumOverflowError(out_indices[j]);
    }
  }
  out->indices.resize(emitted);
  out->values.resize(emitted);
  return absl::OkStatus();
}

}  // namespace entrograd::aggregator::merge_internal
