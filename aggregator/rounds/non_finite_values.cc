#include "aggregator/rounds/non_finite_values.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace entrograd::aggregator {

namespace {

// True when a value of `width` bytes has every bit of `exponent_mask` set:
// the IEEE encoding of NaN and Inf in each value type.
bool AnyExponentAllOnes(const std::string& bytes, size_t width,
                        uint32_t exponent_mask) {
  for (size_t at = 0; at + width <= bytes.size(); at += width) {
    uint32_t bits = 0;
    for (size_t b = 0; b < width; ++b) {
      bits |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + b]))
              << (8 * b);
    }
    if ((bits & exponent_mask) == exponent_mask) return true;
  }
  return false;
}

}  // namespace

bool HoldsNonFiniteValue(const v1::SparsePayload& payload) {
  switch (payload.value_type()) {
    case v1::VALUE_TYPE_F32:
      return AnyExponentAllOnes(payload.value_bytes(), 4, 0x7f800000u);
    case v1::VALUE_TYPE_F16:
      return AnyExponentAllOnes(payload.value_bytes(), 2, 0x7c00u);
    case v1::VALUE_TYPE_BF16:
      return AnyExponentAllOnes(payload.value_bytes(), 2, 0x7f80u);
    case v1::VALUE_TYPE_E5M2:
      return AnyExponentAllOnes(payload.value_bytes(), 1, 0x7cu);
    default:
      return false;
  }
}

}  // namespace entrograd::aggregator
