// The small shared pieces of the codec API: enum names, value sizes,
// ViewOf and ScatterInto. Encoding and decoding live in payload_encoder.cc
// and payload_decoder.cc.

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"

namespace entrograd {

absl::string_view IndexEncodingName(IndexEncoding encoding) {
  switch (encoding) {
    case IndexEncoding::kRawU32:
      return "raw_u32";
    case IndexEncoding::kDeltaVarint:
      return "delta_varint";
    case IndexEncoding::kBitmap:
      return "bitmap";
    case IndexEncoding::kDense:
      return "dense";
    case IndexEncoding::kGapRange:
      return "gap_range";
  }
  return "unknown";
}

absl::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kF32:
      return "f32";
    case ValueType::kF16:
      return "f16";
    case ValueType::kBF16:
      return "bf16";
    case ValueType::kE5M2:
      return "e5m2";
  }
  return "unknown";
}

absl::StatusOr<ValueType> ParseValueType(absl::string_view name) {
  for (ValueType type : kAllValueTypes) {
    if (name == ValueTypeName(type)) return type;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value type \"", name, "\"; expected f32, f16, bf16 or e5m2"));
}

int64_t ValueTypeBytes(ValueType type) {
  switch (type) {
    case ValueType::kF32:
      return 4;
    case ValueType::kF16:
    case ValueType::kBF16:
      return 2;
    case ValueType::kE5M2:
      return 1;
  }
  return 4;
}

PayloadView ViewOf(const EncodedPayload& payload) {
  PayloadView view;
  view.numel = payload.numel;
  view.count = payload.count;
  view.index_encoding = static_cast<int>(payload.index_encoding);
  view.value_type = static_cast<int>(payload.value_type);
  view.index_bytes = payload.index_bytes;
  view.value_bytes = payload.value_bytes;
  return view;
}

absl::Status ScatterInto(const DecodedPayload& payload,
                         absl::Span<float> dense) {
  if (dense.size() != payload.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("dense: size ", dense.size(),
                     " does not match payload numel ", payload.numel));
  }
  // DecodedPayload is a plain struct callers may fill by hand, so its
  // invariants are rechecked rather than trusted, all before the first
  // write so that `dense` is untouched on error.
  if (payload.dense) {
    if (payload.values.size() != dense.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("payload: dense with ", payload.values.size(),
                       " values for numel ", payload.numel));
    }
    std::copy(payload.values.begin(), payload.values.end(), dense.begin());
    return absl::OkStatus();
  }
  if (payload.indices.size() != payload.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload: ", payload.indices.size(), " indices but ",
                     payload.values.size(), " values"));
  }
  for (size_t j = 0; j < payload.indices.size(); ++j) {
    if (payload.indices[j] >= dense.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("payload: index ", payload.indices[j], " at position ",
                       j, " is >= numel ", payload.numel));
    }
  }
  for (size_t j = 0; j < payload.indices.size(); ++j) {
    dense[payload.indices[j]] = payload.values[j];
  }
  return absl::OkStatus();
}

}  // namespace entrograd
