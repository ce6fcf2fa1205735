// The shuffle and its random draws are spelled out rather than taken from
// <algorithm>/<random>: only the raw engine output is pinned by the
// standard, and ranks on different machines must agree bit for bit.

#include "workers/fashion_mnist/shard_sampler.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace entrograd::workers {
namespace {

// SplitMix64's finaliser: spreads nearby (seed, epoch) pairs over the whole
// 64-bit seed space, so epoch 1 of seed 0 is unrelated to epoch 0 of seed 1.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw from [0, bound), bound >= 1, without modulo bias: rejects
// the lowest 2^64 mod bound engine outputs (the arc4random_uniform method).
uint64_t UniformBelow(std::mt19937_64& engine, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t x = engine();
    if (x >= threshold) return x % bound;
  }
}

}  // namespace

int64_t StepsPerEpoch(int64_t num_samples, int world_size, int64_t batch_size) {
  if (num_samples <= 0 || world_size <= 0 || batch_size <= 0) return 0;
  // floor(floor(N / W) / B) == floor(N / (W * B)), without the product's
  // overflow.
  return num_samples / world_size / batch_size;
}

std::vector<int64_t> EpochPermutation(int64_t num_samples, uint64_t seed,
                                      int64_t epoch) {
  std::vector<int64_t> permutation(
      static_cast<size_t>(num_samples > 0 ? num_samples : 0));
  for (size_t i = 0; i < permutation.size(); ++i) {
    permutation[i] = static_cast<int64_t>(i);
  }
  std::mt19937_64 engine(Mix64(Mix64(seed) ^ static_cast<uint64_t>(epoch)));
  // Fisher-Yates, high to low: position i takes a uniform pick of [0, i].
  for (size_t i = permutation.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(UniformBelow(engine, i));
    std::swap(permutation[i - 1], permutation[j]);
  }
  return permutation;
}

absl::StatusOr<ShardSampler> ShardSampler::Create(int64_t num_samples,
                                                  int world_size,
                                                  int64_t batch_size,
                                                  uint64_t seed) {
  if (num_samples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_samples: ", num_samples, " is negative"));
  }
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size: ", world_size, " must be at least 1"));
  }
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size: ", batch_size, " must be at least 1"));
  }
  if (StepsPerEpoch(num_samples, world_size, batch_size) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_samples: ", num_samples, " is less than one global batch (",
        world_size, " ranks x ", batch_size, ")"));
  }
  return ShardSampler(num_samples, world_size, batch_size, seed);
}

ShardSampler::ShardSampler(int64_t num_samples, int world_size,
                           int64_t batch_size, uint64_t seed)
    : num_samples_(num_samples),
      world_size_(world_size),
      batch_size_(batch_size),
      seed_(seed),
      steps_per_epoch_(StepsPerEpoch(num_samples, world_size, batch_size)) {}

absl::StatusOr<std::vector<int64_t>> ShardSampler::Batch(int64_t epoch,
                                                         int64_t step,
                                                         int rank) {
  if (epoch < 0) {
    return absl::OutOfRangeError(
        absl::StrCat("epoch: ", epoch, " is negative"));
  }
  if (step < 0 || step >= steps_per_epoch_) {
    return absl::OutOfRangeError(
        absl::StrCat("step: ", step, " outside [0, ", steps_per_epoch_, ")"));
  }
  if (rank < 0 || rank >= world_size_) {
    return absl::OutOfRangeError(
        absl::StrCat("rank: ", rank, " outside [0, ", world_size_, ")"));
  }
  if (epoch != cached_epoch_) {
    cached_permutation_ = EpochPermutation(num_samples_, seed_, epoch);
    cached_epoch_ = epoch;
  }
  const int64_t begin = (step * world_size_ + rank) * batch_size_;
  return std::vector<int64_t>(
      cached_permutation_.begin() + begin,
      cached_permutation_.begin() + begin + batch_size_);
}

}  // namespace entrograd::workers
