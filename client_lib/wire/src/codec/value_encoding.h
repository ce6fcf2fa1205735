// Writing and reading the value_bytes of a SparsePayload: count values of
// one ValueType, little-endian, in index order.
#ifndef ENTROGRAD_CODEC_VALUE_ENCODING_H_
#define ENTROGRAD_CODEC_VALUE_ENCODING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"

namespace entrograd::codec_internal {

// INVALID_ARGUMENT "<field>: value at position j is NaN|Inf" for the first
// non-finite value, OK when there is none.
absl::Status CheckFinite(absl::Span<const float> values,
                         absl::string_view field);

// Writes values[j] to out + j * ValueTypeBytes(type). `out` must have room
// for values.size() values; values must be finite. Returns how many values
// saturated to the type's largest finite magnitude.
int64_t WriteValues(ValueType type, absl::Span<const float> values, char* out);

// Writes values[j] to out + indices[j] * ValueTypeBytes(type), leaving the
// bytes in between untouched (callers zero them first: +0 is all-zero bits
// in every type). Same preconditions and return as WriteValues.
int64_t WriteValuesAt(ValueType type, absl::Span<const uint32_t> indices,
                      absl::Span<const float> values, char* out);

// INVALID_ARGUMENT "value_bytes: truncated|trailing bytes ..." unless
// `size` is exactly count values of `type`. Cheap: callers run it before
// allocating anything for `count`.
absl::Status CheckValueBytesSize(ValueType type, uint64_t size, uint64_t count);

// Decodes bytes (size already checked) into out[0 .. size / value size).
// INVALID_ARGUMENT naming the position of the first NaN or Inf.
absl::Status ReadValues(ValueType type, absl::string_view bytes, float* out);

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_VALUE_ENCODING_H_
