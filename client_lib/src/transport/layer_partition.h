// How a model's large layers are cut into parts on the wire, as BytePS
// partitions large tensors: a layer of more than `max_part_numel` elements
// travels as k = ceil(n / max_part_numel) parts, each a layer of its own in
// the Join's table, its own round, and (by the shard map's hash of its wire
// index) possibly its own shard. Part i covers the elements
// [floor(i*n/k), floor((i+1)*n/k)), so the parts differ in size by at most
// one.
//
// Why it is exact: the aggregator merges element by element (ALGORITHM.md
// step 6), so merging the parts separately and putting them back together
// gives the same floats, bit for bit, as merging the whole layer. The
// compression itself (entropy, keep count, selection) still sees the whole
// layer: parts are cut after it.
//
// Thread safety: immutable after Create; every method is const.
#ifndef ENTROGRAD_CLIENT_LIB_SRC_TRANSPORT_LAYER_PARTITION_H_
#define ENTROGRAD_CLIENT_LIB_SRC_TRANSPORT_LAYER_PARTITION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/client.h"

namespace entrograd {

class LayerPartition {
 public:
  // One part of a layer: its index in the wire table and the elements
  // [begin, end) of the layer it carries.
  struct Part {
    uint32_t wire_layer = 0;
    uint64_t begin = 0;
    uint64_t end = 0;
  };

  // Cuts every layer larger than `max_part_numel` (>= 1). Parts are named
  // "<layer name>#<i>/<k>". The layer table must already be valid
  // (ValidateLayerTable). INVALID_ARGUMENT when max_part_numel is 0 or the
  // wire table would exceed 2^32 - 1 layers.
  static absl::StatusOr<LayerPartition> Create(
      const std::vector<LayerSpecification>& layers, uint64_t max_part_numel);

  // The table the shards see (parts in layer order).
  const std::vector<LayerSpecification>& wire_layers() const {
    return wire_layers_;
  }
  // Whether any layer is cut (false: the wire table is the model's).
  bool cuts_any_layer() const { return wire_layers_.size() != numel_.size(); }
  uint32_t layer_count() const { return static_cast<uint32_t>(numel_.size()); }
  // The parts of `layer` (< layer_count()), in element order.
  absl::Span<const Part> parts(uint32_t layer) const;

  // One contribution per part of contribution.layer, indices made relative
  // to the part; every field but layer, numel, dense, indices and values is
  // copied. A dense contribution gives dense parts; a sparse one gives
  // sparse parts (possibly empty). INVALID_ARGUMENT, naming the layer, for
  // an unknown layer, a numel that is not the layer's, values that do not
  // match the indices (or numel when dense), or indices that are not
  // strictly ascending or not below numel; nothing is returned then.
  absl::StatusOr<std::vector<LayerContribution>> Split(
      const LayerContribution& contribution) const;

  // The merged update of `layer` from its parts' merged updates (in part
  // order, one per part): the same values at the same elements as the
  // merge of the whole layer. Dense when every part came dense, sparse
  // otherwise (carrying every element of a dense part), so the result
  // carries exactly the elements the parts carried: under global top-k an
  // element left out of a part stays out; wire_bytes is the parts' sum. INVALID_ARGUMENT when a part's step or
  // numel is not the expected one or a payload breaks its invariants.
  absl::StatusOr<MergedLayerUpdate> Assemble(
      uint32_t layer, int64_t step,
      const std::vector<MergedLayerUpdate>& parts) const;

 private:
  LayerPartition() = default;

  std::vector<LayerSpecification> wire_layers_;
  std::vector<uint64_t> numel_;         // per model layer
  std::vector<uint32_t> first_part_;    // per model layer, into parts_
  std::vector<Part> parts_;             // all parts, in wire order
};

}  // namespace entrograd

#endif  // ENTROGRAD_CLIENT_LIB_SRC_TRANSPORT_LAYER_PARTITION_H_
