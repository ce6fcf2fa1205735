#include "codec/encoding_choice.h"

#include <cstdint>
#include <optional>

#include "codec/index_encoding.h"
#include "entrograd/codec.h"

namespace entrograd::codec_internal {

std::optional<int64_t> WireBytesFor(IndexEncoding encoding,
                                    const SparseShape& shape, ValueType type) {
  const std::optional<int64_t> index_bytes = IndexBytesFor(encoding, shape);
  if (!index_bytes.has_value()) return std::nullopt;
  const uint64_t values =
      encoding == IndexEncoding::kDense ? shape.numel : shape.count;
  return *index_bytes + static_cast<int64_t>(values) * ValueTypeBytes(type);
}

IndexEncoding ChooseIndexEncoding(const SparseShape& shape, ValueType type) {
  IndexEncoding best = kAllIndexEncodings[0];
  int64_t best_bytes = *WireBytesFor(best, shape, type);
  for (IndexEncoding candidate : kAllIndexEncodings) {
    const std::optional<int64_t> bytes = WireBytesFor(candidate, shape, type);
    if (bytes.has_value() && *bytes < best_bytes) {  // strict: earlier wins ties
      best = candidate;
      best_bytes = *bytes;
    }
  }
  return best;
}

bool WorthCostingGapRange(IndexEncoding choice_without_it) {
  return choice_without_it == IndexEncoding::kDeltaVarint;
}

}  // namespace entrograd::codec_internal
