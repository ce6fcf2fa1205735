#include "codec/value_encoding.h"

#include <cstddef>
#include <cstdint>

#include "absl/base/casts.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/half_float.h"
#include "codec/little_endian.h"
#include "entrograd/codec.h"

namespace entrograd {
namespace codec_internal {
namespace {

constexpr uint32_t kExponent = 0x7F800000u;  // f32 exponent field

absl::Status NonFiniteError(absl::string_view field, uint64_t position,
                            bool is_nan) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": value at position ", position, " is ", is_nan ? "NaN" : "Inf"));
}

// One value type's conversion to its wire bits, so the write loops below
// are instantiated per type instead of switching per element.
struct F32Writer {
  static constexpr int kBytes = 4;
  static void Write(float value, char* out, int64_t* /*saturated*/) {
    StoreLe32(absl::bit_cast<uint32_t>(value), out);
  }
};
struct F16Writer {
  static constexpr int kBytes = 2;
  static void Write(float value, char* out, int64_t* saturated) {
    bool hit = false;
    StoreLe16(FloatToHalfBits(value, &hit), out);
    *saturated += hit;
  }
};
struct Bf16Writer {
  static constexpr int kBytes = 2;
  static void Write(float value, char* out, int64_t* saturated) {
    bool hit = false;
    StoreLe16(FloatToBfloat16Bits(value, &hit), out);
    *saturated += hit;
  }
};

struct E5M2Writer {
  static constexpr int kBytes = 1;
  static void Write(float value, char* out, int64_t* saturated) {
    bool hit = false;
    *out = static_cast<char>(FloatToE5M2Bits(value, &hit));
    *saturated += hit;
  }
};

template <typename Writer>
int64_t WriteAll(absl::Span<const float> values, char* out) {
  int64_t saturated = 0;
  for (float value : values) {
    Writer::Write(value, out, &saturated);
    out += Writer::kBytes;
  }
  return saturated;
}

template <typename Writer>
int64_t WriteAt(absl::Span<const uint32_t> indices,
                absl::Span<const float> values, char* out) {
  int64_t saturated = 0;
  for (size_t j = 0; j < values.size(); ++j) {
    Writer::Write(values[j],
                  out + static_cast<size_t>(indices[j]) * Writer::kBytes,
                  &saturated);
  }
  return saturated;
}

// Decodes 16-bit values whose exponent field is `exponent_mask`; all-ones
// exponent means NaN (mantissa != 0) or Inf.
template <float (*kToFloat)(uint16_t), uint16_t kExponentMask>
absl::Status Read16(absl::string_view bytes, float* out) {
  const size_t count = bytes.size() / 2;
  const char* p = bytes.data();
  for (size_t j = 0; j < count; ++j, p += 2) {
    const uint16_t bits = LoadLe16(p);
    if ((bits & kExponentMask) == kExponentMask) {
      const bool is_nan = (bits & 0x7FFF) != kExponentMask;
      return NonFiniteError("value_bytes", j, is_nan);
    }
    out[j] = kToFloat(bits);
  }
  return absl::OkStatus();
}

// E5M2: exponent field 0x7C all ones means NaN (mantissa != 0) or Inf.
absl::Status ReadE5M2(absl::string_view bytes, float* out) {
  for (size_t j = 0; j < bytes.size(); ++j) {
    const auto bits = static_cast<uint8_t>(bytes[j]);
    if ((bits & 0x7Cu) == 0x7Cu) {
      return NonFiniteError("value_bytes", j, (bits & 0x03u) != 0);
    }
    out[j] = E5M2BitsToFloat(bits);
  }
  return absl::OkStatus();
}

absl::Status ReadF32(absl::string_view bytes, float* out) {
  const size_t count = bytes.size() / 4;
  const char* p = bytes.data();
  for (size_t j = 0; j < count; ++j, p += 4) {
    const uint32_t bits = LoadLe32(p);
    if ((bits & kExponent) == kExponent) {
      return NonFiniteError("value_bytes", j, (bits & 0x7FFFFFu) != 0);
    }
    out[j] = absl::bit_cast<float>(bits);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckFinite(absl::Span<const float> values,
                         absl::string_view field) {
  // First a branch-free pass the compiler can vectorise (inputs are almost
  // always finite), then a search for the position only on failure.
  uint32_t any_all_ones_exponent = 0;
  for (float value : values) {
    any_all_ones_exponent |= static_cast<uint32_t>(
        (absl::bit_cast<uint32_t>(value) & kExponent) == kExponent);
  }
  if (any_all_ones_exponent == 0) return absl::OkStatus();
  for (size_t j = 0; j < values.size(); ++j) {
    const uint32_t bits = absl::bit_cast<uint32_t>(values[j]);
    if ((bits & kExponent) == kExponent) {
      return NonFiniteError(field, j, (bits & 0x7FFFFFu) != 0);
    }
  }
  return absl::OkStatus();
}

int64_t WriteValues(ValueType type, absl::Span<const float> values, char* out) {
  switch (type) {
    case ValueType::kF32:
      return WriteAll<F32Writer>(values, out);
    case ValueType::kF16:
      return WriteAll<F16Writer>(values, out);
    case ValueType::kBF16:
      return WriteAll<Bf16Writer>(values, out);
    case ValueType::kE5M2:
      return WriteAll<E5M2Writer>(values, out);
  }
  return 0;
}

int64_t WriteValuesAt(ValueType type, absl::Span<const uint32_t> indices,
                      absl::Span<const float> values, char* out) {
  switch (type) {
    case ValueType::kF32:
      return WriteAt<F32Writer>(indices, values, out);
    case ValueType::kF16:
      return WriteAt<F16Writer>(indices, values, out);
    case ValueType::kBF16:
      return WriteAt<Bf16Writer>(indices, values, out);
    case ValueType::kE5M2:
      return WriteAt<E5M2Writer>(indices, values, out);
  }
  return 0;
}

absl::Status CheckValueBytesSize(ValueType type, uint64_t size,
                                 uint64_t count) {
  // count <= kMaxPayloadNumel < 2^32, so this cannot overflow.
  const uint64_t need = count * static_cast<uint64_t>(ValueTypeBytes(type));
  if (size == need) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "value_bytes: ", size < need ? "truncated" : "trailing bytes", ": ", size,
      " bytes, ", count, " ", ValueTypeName(type), " values need ", need));
}

absl::Status ReadValues(ValueType type, absl::string_view bytes, float* out) {
  switch (type) {
    case ValueType::kF32:
      return ReadF32(bytes, out);
    case ValueType::kF16:
      return Read16<HalfBitsToFloat, 0x7C00>(bytes, out);
    case ValueType::kBF16:
      return Read16<Bfloat16BitsToFloat, 0x7F80>(bytes, out);
    case ValueType::kE5M2:
      return ReadE5M2(bytes, out);
  }
  return absl::InternalError("value_bytes: unknown value type");
}

}  // namespace codec_internal
}  // namespace entrograd
