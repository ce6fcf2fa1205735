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

uint8_t FloatToE5M2(float value, bool* saturated) {
  return codec_internal::FloatToE5M2Bits(value, saturated);
}

float E5M2ToFloat(uint8_t bits) {
  return codec_internal::E5M2BitsToFloat(bits);
}

float RoundToValueType(ValueType type, float value) {
  switch (type) {
    case ValueType::kF32:
      return value;
    case ValueType::kF16:
      return HalfToFloat(FloatToHalf(value));
    case ValueType::kBF16:
      return Bfloat16ToFloat(FloatToBfloat16(value));
    case ValueType::kE5M2:
      return E5M2ToFloat(FloatToE5M2(value));
  }
  return value;
}

}  // namespace entrograd
