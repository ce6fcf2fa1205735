// Deterministic data-parallel sampling: every rank derives the same epoch
// order from (seed, epoch) alone, so no order is ever exchanged, and each
// rank takes its own disjoint part of it.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_SHARD_SAMPLER_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_SHARD_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace entrograd::workers {

// floor(num_samples / (world_size * batch_size)): the steps every rank runs
// in an epoch. All ranks run the same number, so none waits on a round the
// others never start; the num_samples mod (world_size * batch_size) samples
// left over are skipped that epoch (different ones each epoch). Returns 0
// when an argument is not positive.
int64_t StepsPerEpoch(int64_t num_samples, int world_size, int64_t batch_size);

// The permutation of [0, num_samples) for `epoch`: Fisher-Yates driven by a
// std::mt19937_64 seeded from (seed, epoch). The engine's output sequence
// is fixed by the C++ standard; the shuffle and the bounded draws are
// written out here (std::shuffle and std::uniform_int_distribution are
// implementation-defined), so the order is the same on every machine and
// standard library. Requires num_samples >= 0 and epoch >= 0.
std::vector<int64_t> EpochPermutation(int64_t num_samples, uint64_t seed,
                                      int64_t epoch);

// Hands out batches of training indices.
//
// Layout: step s of an epoch consumes the block
// perm[s * W * B, (s + 1) * W * B) of that epoch's permutation, and rank r
// takes the r-th B-slice of the block. The ranks' batches are therefore
// disjoint, an epoch covers StepsPerEpoch * W * B distinct samples, and the
// global batch of a step is what one process with batch W * B would see.
//
// Not thread-safe: Batch caches the current epoch's permutation. Each
// rank's training loop owns one sampler.
class ShardSampler {
 public:
  // Errors (InvalidArgument): num_samples < 0, world_size < 1,
  // batch_size < 1, or num_samples < world_size * batch_size (no step).
  static absl::StatusOr<ShardSampler> Create(int64_t num_samples,
                                             int world_size, int64_t batch_size,
                                             uint64_t seed);

  int64_t num_samples() const { return num_samples_; }
  int world_size() const { return world_size_; }
  int64_t batch_size() const { return batch_size_; }
  uint64_t seed() const { return seed_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

  // The batch_size sample indices rank `rank` trains on at `step` of
  // `epoch`. Errors (OutOfRange): epoch < 0, step outside
  // [0, steps_per_epoch), rank outside [0, world_size).
  absl::StatusOr<std::vector<int64_t>> Batch(int64_t epoch, int64_t step,
                                             int rank);

 private:
  ShardSampler(int64_t num_samples, int world_size, int64_t batch_size,
               uint64_t seed);

  int64_t num_samples_;
  int world_size_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t steps_per_epoch_;
  // EpochPermutation(num_samples_, seed_, cached_epoch_); -1 = none yet.
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> cached_permutation_;
};

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_SHARD_SAMPLER_H_
