#include "entrograd/shard_map.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace entrograd {

namespace {

// FNV-1a over the bytes, then a splitmix64 finaliser so that nearby inputs
// spread over the whole 64-bit range.
uint64_t Mix(uint64_t hash) {
  hash ^= hash >> 30;
  hash *= 0xBF58476D1CE4E5B9ull;
  hash ^= hash >> 27;
  hash *= 0x94D049BB133111EBull;
  hash ^= hash >> 31;
  return hash;
}

uint64_t HashBytes(uint64_t hash, absl::string_view bytes) {
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

uint64_t HashUint32(uint64_t hash, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) {
    hash ^= (value >> shift) & 0xFF;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

}  // namespace

ShardMap::ShardMap(std::vector<std::string> shards)
    : shards_(std::move(shards)) {}

absl::StatusOr<ShardMap> ShardMap::Create(std::vector<std::string> shards) {
  if (shards.empty()) {
    return absl::InvalidArgumentError("the shard list is empty");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard ", i, " has an empty address"));
    }
    if (!seen.insert(shards[i]).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shard address \"", shards[i], "\" appears more than once"));
    }
  }
  return ShardMap(std::move(shards));
}

int ShardMap::ShardOf(absl::string_view job_id, uint32_t layer_index) const {
  // The shard's position, not its address, is hashed: workers of a job may
  // reach the same shard by different names (a Kubernetes service name, an
  // IP), and must still agree.
  const uint64_t key =
      HashUint32(HashBytes(0xCBF29CE484222325ull, job_id), layer_index);
  int best = 0;
  uint64_t best_weight = 0;
  for (int shard = 0; shard < size(); ++shard) {
    const uint64_t weight = Mix(HashUint32(key, static_cast<uint32_t>(shard)));
    if (shard == 0 || weight > best_weight) {
      best = shard;
      best_weight = weight;
    }
  }
  return best;
}

}  // namespace entrograd
