// The public scalar conversions; the implementation is inline in
// half_float.h so the codec's value loops share it.

#include "codec/half_float.h"

#include <cstdint>

#include "entrograd/codec.h"

namespace entrograd {

uint16_t FloatToHalf(float value, bool* saturated) {
  return codec_internal::FloatToHalfBits(value, saturated);
}

float HalfToFloat(uint16_t bits) {
  return codec_internal::HalfBitsToFloat(bits);
}

uint16_t FloatToBfloat16(float value, bool* saturated) {
  return codec_internal::FloatToBfloat16Bits(value, saturated);
}

float Bfloat16ToFloat(uint16_t bits) {
  return codec_internal::Bfloat16BitsToFloat(bits);
}

}  // namespace entrograd
