// Which aggregator shard owns a layer: a consistent hash of (job, layer) over
// an ordered shard list that every worker of a job shares (docs/DESIGN.md
// "Sharding"). Rendezvous (highest random weight) hashing: each layer goes to
// the shard with the highest hash of (job, layer, shard position), so adding
// or removing a shard moves only the layers it gains or loses, and replicas
// need no coordination. The hash is a fixed 64-bit function of the bytes, so
// every platform and build agrees.
//
// Thread safety: immutable after Create; all methods are const and safe to
// call concurrently.
#ifndef ENTROGRAD_SHARD_MAP_H_
#define ENTROGRAD_SHARD_MAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd {

class ShardMap {
 public:
  // `shards` are the shard addresses in the order every worker uses.
  // Errors: INVALID_ARGUMENT for an empty list, an empty address or a
  // repeated address (naming it).
  static absl::StatusOr<ShardMap> Create(std::vector<std::string> shards);

  // The position in the shard list of the shard that owns `layer_index` of
  // job `job_id`.
  int ShardOf(absl::string_view job_id, uint32_t layer_index) const;

  int size() const { return static_cast<int>(shards_.size()); }
  const std::string& address(int shard) const { return shards_[shard]; }
  const std::vector<std::string>& addresses() const { return shards_; }

 private:
  explicit ShardMap(std::vector<std::string> shards);
  std::vector<std::string> shards_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_SHARD_MAP_H_
