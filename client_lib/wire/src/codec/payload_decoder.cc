// DecodePayload: validates a received payload field by field, sizes before
// contents, so a hostile header cannot make it allocate more than a small
// multiple of the bytes actually received.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codec/index_encoding.h"
#include "codec/value_encoding.h"
#include "entrograd/common/status_macros.h"
#include "entrograd/codec.h"

namespace entrograd {
namespace {

absl::Status CheckHeader(const PayloadView& payload) {
  if (payload.numel == 0) {
    return absl::InvalidArgumentError("numel: must not be 0");
  }
  if (payload.numel > kMaxPayloadNumel) {
    return absl::InvalidArgumentError(absl::StrCat("numel: ", payload.numel,
                                                   " exceeds kMaxPayloadNumel ",
                                                   kMaxPayloadNumel));
  }
  if (payload.index_encoding < static_cast<int>(IndexEncoding::kRawU32) ||
      payload.index_encoding > static_cast<int>(IndexEncoding::kGapRange)) {
    return absl::InvalidArgumentError(
        absl::StrCat("index_encoding: unknown value ", payload.index_encoding));
  }
  if (payload.value_type < static_cast<int>(ValueType::kF32) ||
      payload.value_type > static_cast<int>(ValueType::kE5M2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("value_type: unknown value ", payload.value_type));
  }
  if (payload.count > payload.numel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "count: ", payload.count, " exceeds numel ", payload.numel));
  }
  if (payload.index_encoding == static_cast<int>(IndexEncoding::kDense)) {
    if (payload.count != payload.numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("count: ", payload.count, " must equal numel ",
                       payload.numel, " for dense"));
    }
    if (!payload.index_bytes.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index_bytes: trailing bytes: ", payload.index_bytes.size(),
          " bytes, dense needs 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DecodedPayload> DecodePayload(const PayloadView& payload) {
  ENTROGRAD_RETURN_IF_ERROR(CheckHeader(payload));
  const auto encoding = static_cast<IndexEncoding>(payload.index_encoding);
  const auto type = static_cast<ValueType>(payload.value_type);

  DecodedPayload decoded;
  decoded.numel = payload.numel;
  decoded.dense = encoding == IndexEncoding::kDense;
  decoded.value_type = type;
  // The value bytes are sized first: at least one received byte per value
  // bounds count, and so every allocation below, by what actually arrived
  // (a gap_range stream can hold ~150 indices a byte). ReadIndices also
  // checks index_bytes' size against count before sizing its output.
  ENTROGRAD_RETURN_IF_ERROR(codec_internal::CheckValueBytesSize(
      type, payload.value_bytes.size(), payload.count));
  if (!decoded.dense) {
    ENTROGRAD_RETURN_IF_ERROR(
        codec_internal::ReadIndices(encoding, payload.numel, payload.count,
                                    payload.index_bytes, &decoded.indices));
  }
  decoded.values.resize(payload.count);
  ENTROGRAD_RETURN_IF_ERROR(codec_internal::ReadValues(
      type, payload.value_bytes, decoded.values.data()));
  return decoded;
}

}  // namespace entrograd
