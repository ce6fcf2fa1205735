#include "transport/layer_partition.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace entrograd {

namespace {

uint64_t PartBoundary(uint64_t numel, uint64_t part, uint64_t parts) {
  // floor(part * numel / parts), exact: the product is taken in 128 bits.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(part) * numel) /
                               parts);
}

}  // namespace

absl::StatusOr<LayerPartition> LayerPartition::Create(
    const std::vector<LayerSpecification>& layers, uint64_t max_part_numel) {
  if (max_part_numel == 0) {
    return absl::InvalidArgumentError(
        "the largest part of a layer must be at least 1 element");
  }
  LayerPartition partition;
  partition.first_part_.reserve(layers.size() + 1);
  for (const LayerSpecification& layer : layers) {
    partition.numel_.push_back(layer.numel);
    partition.first_part_.push_back(
        static_cast<uint32_t>(partition.parts_.size()));
    const uint64_t count =
        layer.numel <= max_part_numel
            ? 1
            : (layer.numel + max_part_numel - 1) / max_part_numel;
    if (partition.parts_.size() + count >
        std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cutting the layers into parts of at most ", max_part_numel,
          " elements makes more than 2^32 - 1 wire layers"));
    }
    for (uint64_t i = 0; i < count; ++i) {
      Part part;
      part.wire_layer = static_cast<uint32_t>(partition.parts_.size());
      part.begin = PartBoundary(layer.numel, i, count);
      part.end = PartBoundary(layer.numel, i + 1, count);
      partition.parts_.push_back(part);
      partition.wire_layers_.push_back(
          {count == 1 ? layer.name : absl::StrCat(layer.name, "#", i, "/", count),
           part.end - part.begin});
    }
  }
  partition.first_part_.push_back(
      static_cast<uint32_t>(partition.parts_.size()));
  return partition;
}

absl::Span<const LayerPartition::Part> LayerPartition::parts(
    uint32_t layer) const {
  return absl::MakeConstSpan(parts_).subspan(
      first_part_[layer], first_part_[layer + 1] - first_part_[layer]);
}

absl::StatusOr<std::vector<LayerContribution>> LayerPartition::Split(
    const LayerContribution& contribution) const {
  const uint32_t layer = contribution.layer;
  if (layer >= layer_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown layer ", layer, " (the table has ", layer_count(), ")"));
  }
  const uint64_t numel = numel_[layer];
  if (contribution.numel != numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", layer, ": numel ", contribution.numel,
                     " is not the layer's ", numel));
  }
  if (contribution.dense) {
    if (contribution.values.size() != numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", layer, ": a dense contribution has ",
                       contribution.values.size(), " values for numel ", numel));
    }
  } else {
    if (contribution.indices.size() != contribution.values.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", layer, ": ", contribution.indices.size(), " indices but ",
          contribution.values.size(), " values"));
    }
    for (size_t j = 0; j < contribution.indices.size(); ++j) {
      const uint32_t index = contribution.indices[j];
      if (index >= numel ||
          (j > 0 && index <= contribution.indices[j - 1])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layer ", layer, ": index ", index, " at position ", j,
            index >= numel ? " is not below numel "
                           : " is not above the one before it; numel ",
            numel));
      }
    }
  }

  std::vector<LayerContribution> out;
  const absl::Span<const Part> layer_parts = parts(layer);
  out.reserve(layer_parts.size());
  auto next_index = contribution.indices.begin();
  for (const Part& part : layer_parts) {
    LayerContribution piece;
    piece.step = contribution.step;
    piece.layer = part.wire_layer;
    piece.numel = part.end - part.begin;
    piece.dense = contribution.dense;
    piece.entropy = contribution.entropy;
    piece.keep_ratio = contribution.keep_ratio;
    piece.merged_keep_factor = contribution.merged_keep_factor;
    if (contribution.dense) {
      piece.values.assign(contribution.values.begin() + part.begin,
                          contribution.values.begin() + part.end);
    } else {
      const auto end = std::lower_bound(next_index, contribution.indices.end(),
                                        part.end);
      const size_t from = next_index - contribution.indices.begin();
      const size_t to = end - contribution.indices.begin();
      piece.indices.reserve(to - from);
      for (auto it = next_index; it != end; ++it) {
        piece.indices.push_back(static_cast<uint32_t>(*it - part.begin));
      }
      piece.values.assign(contribution.values.begin() + from,
                          contribution.values.begin() + to);
      next_index = end;
    }
    out.push_back(std::move(piece));
  }
  return out;
}

absl::StatusOr<MergedLayerUpdate> LayerPartition::Assemble(
    uint32_t layer, int64_t step,
    const std::vector<MergedLayerUpdate>& parts_merged) const {
  if (layer >= layer_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown layer ", layer, " (the table has ", layer_count(), ")"));
  }
  const absl::Span<const Part> layer_parts = parts(layer);
  if (parts_merged.size() != layer_parts.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", layer, " has ", layer_parts.size(),
                     " parts, got ", parts_merged.size()));
  }
  const uint64_t numel = numel_[layer];
  MergedLayerUpdate whole;
  whole.step = step;
  whole.layer = layer;
  uint64_t carried = 0;
  bool all_dense = true;
  for (size_t i = 0; i < parts_merged.size(); ++i) {
    const MergedLayerUpdate& piece = parts_merged[i];
    const Part& part = layer_parts[i];
    if (piece.step != step || piece.layer != part.wire_layer ||
        piece.payload.numel != part.end - part.begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", layer, " part ", i, ": got step ", piece.step,
          ", wire layer ", piece.layer, ", numel ", piece.payload.numel,
          "; expected step ", step, ", wire layer ", part.wire_layer,
          ", numel ", part.end - part.begin));
    }
    whole.wire_bytes += piece.wire_bytes;
    all_dense = all_dense && piece.payload.dense;
    carried += piece.payload.dense ? piece.payload.numel
                                   : piece.payload.indices.size();
  }

  DecodedPayload& payload = whole.payload;
  payload.numel = numel;
  // Dense only when every part came dense: a part's sparse payload may have
  // left entries out (global top-k), and the optimizer reads an index a
  // payload carries as applied, so a sparse part must stay sparse.
  if (all_dense) {
    payload.dense = true;
    payload.values.assign(numel, 0.0f);
    for (size_t i = 0; i < parts_merged.size(); ++i) {
      const Part& part = layer_parts[i];
      absl::Status status = ScatterInto(
          parts_merged[i].payload,
          absl::MakeSpan(payload.values).subspan(part.begin,
                                                 part.end - part.begin));
      if (!status.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layer ", layer, " part ", i, ": ", status.message()));
      }
    }
    return whole;
  }
  payload.dense = false;
  payload.indices.reserve(carried);
  payload.values.reserve(carried);
  for (size_t i = 0; i < parts_merged.size(); ++i) {
    const DecodedPayload& piece = parts_merged[i].payload;
    const uint64_t begin = layer_parts[i].begin;
    if (piece.dense) {
      if (piece.values.size() != piece.numel) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layer ", layer, " part ", i, ": a dense payload has ",
            piece.values.size(), " values for numel ", piece.numel));
      }
      for (uint64_t j = 0; j < piece.numel; ++j) {
        payload.indices.push_back(static_cast<uint32_t>(begin + j));
      }
    } else {
      if (piece.indices.size() != piece.values.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("layer ", layer, " part ", i, ": ",
                         piece.indices.size(), " indices but ",
                         piece.values.size(), " values"));
      }
      for (size_t j = 0; j < piece.indices.size(); ++j) {
        if (piece.indices[j] >= piece.numel ||
            (j > 0 && piece.indices[j] <= piece.indices[j - 1])) {
          return absl::InvalidArgumentError(
              absl::StrCat("layer ", layer, " part ", i, ": index ",
                           piece.indices[j], " at position ", j,
                           " is out of order or not below ", piece.numel));
        }
        payload.indices.push_back(static_cast<uint32_t>(begin + piece.indices[j]));
      }
    }
    payload.values.insert(payload.values.end(), piece.values.begin(),
                          piece.values.end());
  }
  return whole;
}

}  // namespace entrograd
