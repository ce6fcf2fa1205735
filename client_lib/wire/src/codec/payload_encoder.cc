// EncodeSparse and EncodeDense: validate the input, pick the index encoding
// (encoding_choice.h) and write index and value bytes into buffers sized
// up front.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "codec/encoding_choice.h"
#include "codec/gap_range_coder.h"
#include "codec/index_encoding.h"
#include "codec/little_endian.h"
#include "codec/value_encoding.h"
#include "entrograd/common/status_macros.h"
#include "entrograd/codec.h"

namespace entrograd {
namespace {

using codec_internal::SparseShape;

absl::Status CheckNumel(uint64_t numel, absl::string_view what) {
  if (numel == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": must not be 0"));
  }
  if (numel > kMaxPayloadNumel) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", numel, " exceeds kMaxPayloadNumel ", kMaxPayloadNumel));
  }
  return absl::OkStatus();
}

// Options can hold any integer cast to the enums; reject those up front so
// the switches below only ever see known values.
absl::Status CheckOptions(const EncodeOptions& options) {
  const int type = static_cast<int>(options.value_type);
  if (type < static_cast<int>(ValueType::kF32) ||
      type > static_cast<int>(ValueType::kE5M2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.value_type: unknown value ", type));
  }
  if (options.index_encoding.has_value()) {
    const int encoding = static_cast<int>(*options.index_encoding);
    if (encoding < static_cast<int>(IndexEncoding::kRawU32) ||
        encoding > static_cast<int>(IndexEncoding::kGapRange)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.index_encoding: unknown value ", encoding));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckIndices(uint64_t numel, absl::Span<const uint32_t> indices) {
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j] >= numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("indices: index ", indices[j], " at position ", j,
                       " is >= numel ", numel));
    }
    if (j > 0 && indices[j] <= indices[j - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "indices: index ", indices[j], " at position ", j,
          " is not greater than previous index ", indices[j - 1],
          indices[j] == indices[j - 1] ? " (repeated)" : " (descending)"));
    }
  }
  return absl::OkStatus();
}

// Writes validated (indices, values) of a numel-element vector with a known
// encoding; kDense writes the zeros in between explicitly. `index_bytes`,
// when given, already holds the encoding's index bytes (the choice ran the
// gap_range coder to cost it) and is moved in instead of written again.
EncodedPayload WriteSparsePayload(uint64_t numel, IndexEncoding encoding,
                                  ValueType type,
                                  absl::Span<const uint32_t> indices,
                                  absl::Span<const float> values,
                                  std::string* index_bytes = nullptr) {
  const auto value_size = static_cast<size_t>(ValueTypeBytes(type));
  EncodedPayload payload;
  payload.numel = numel;
  payload.index_encoding = encoding;
  payload.value_type = type;
  if (encoding == IndexEncoding::kDense) {
    payload.count = numel;
    // +0 is all-zero bits in f32, f16 and bf16 alike.
    payload.value_bytes.assign(static_cast<size_t>(numel) * value_size, '\0');
    payload.saturated_values = codec_internal::WriteValuesAt(
        type, indices, values, payload.value_bytes.data());
    return payload;
  }
  payload.count = indices.size();
  if (index_bytes != nullptr) {
    payload.index_bytes = std::move(*index_bytes);
  } else {
    codec_internal::WriteIndices(encoding, numel, indices, &payload.index_bytes);
  }
  payload.value_bytes.resize(values.size() * value_size);
  payload.saturated_values =
      codec_internal::WriteValues(type, values, payload.value_bytes.data());
  return payload;
}

// The automatic choice for validated `indices` described by `shape`, given
// `without`, the choice among the encodings other than kGapRange. When
// kGapRange is costed, its bytes are left in *gap_range_bytes, so that a
// payload that chooses it need not run the coder twice.
IndexEncoding ChooseWithGapRange(SparseShape shape, ValueType type,
                                 IndexEncoding without, bool consider_gap_range,
                                 absl::Span<const uint32_t> indices,
                                 std::string* gap_range_bytes) {
  if (!consider_gap_range || !codec_internal::WorthCostingGapRange(without)) {
    return without;
  }
  codec_internal::WriteGapRange(indices, gap_range_bytes);
  shape.gap_range_bytes = static_cast<int64_t>(gap_range_bytes->size());
  return codec_internal::ChooseIndexEncoding(shape, type);
}

EncodedPayload WriteDensePayload(ValueType type,
                                 absl::Span<const float> values) {
  EncodedPayload payload;
  payload.numel = values.size();
  payload.count = values.size();
  payload.index_encoding = IndexEncoding::kDense;
  payload.value_type = type;
  payload.value_bytes.resize(values.size() *
                             static_cast<size_t>(ValueTypeBytes(type)));
  payload.saturated_values =
      codec_internal::WriteValues(type, values, payload.value_bytes.data());
  return payload;
}

// A dense element is left out of a sparse encoding only when it is +0.0
// (all bits zero): -0.0 is kept so that f32 payloads round-trip bitwise.
bool IsOmittable(float value) { return absl::bit_cast<uint32_t>(value) == 0; }

// Count and delta-varint size of the kept elements in one pass, without
// materialising their indices (a dense layer may have 25M elements).
SparseShape ScanKeptElements(absl::Span<const float> values) {
  SparseShape shape;
  shape.numel = values.size();
  uint32_t next = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (IsOmittable(values[i])) continue;
    const auto index = static_cast<uint32_t>(i);
    ++shape.count;
    shape.delta_varint_bytes += codec_internal::VarintBytes(index - next);
    next = index + 1;
  }
  return shape;
}

}  // namespace

absl::StatusOr<EncodedPayload> EncodeSparse(uint64_t numel,
                                            absl::Span<const uint32_t> indices,
                                            absl::Span<const float> values,
                                            const EncodeOptions& options) {
  ENTROGRAD_RETURN_IF_ERROR(CheckOptions(options));
  ENTROGRAD_RETURN_IF_ERROR(CheckNumel(numel, "numel"));
  if (indices.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("indices and values differ in size: ", indices.size(),
                     " vs ", values.size()));
  }
  ENTROGRAD_RETURN_IF_ERROR(CheckIndices(numel, indices));
  ENTROGRAD_RETURN_IF_ERROR(codec_internal::CheckFinite(values, "values"));

  if (options.index_encoding.has_value()) {
    return WriteSparsePayload(numel, *options.index_encoding,
                              options.value_type, indices, values);
  }
  SparseShape shape;
  shape.numel = numel;
  shape.count = indices.size();
  shape.delta_varint_bytes = codec_internal::DeltaVarintBytes(indices);
  std::string gap_range_bytes;
  const IndexEncoding encoding = ChooseWithGapRange(
      shape, options.value_type,
      codec_internal::ChooseIndexEncoding(shape, options.value_type),
      options.consider_gap_range, indices, &gap_range_bytes);
  return WriteSparsePayload(
      numel, encoding, options.value_type, indices, values,
      encoding == IndexEncoding::kGapRange ? &gap_range_bytes : nullptr);
}

absl::StatusOr<EncodedPayload> EncodeDense(absl::Span<const float> values,
                                           const EncodeOptions& options) {
  ENTROGRAD_RETURN_IF_ERROR(CheckOptions(options));
  ENTROGRAD_RETURN_IF_ERROR(CheckNumel(values.size(), "values.size()"));
  ENTROGRAD_RETURN_IF_ERROR(codec_internal::CheckFinite(values, "values"));

  const ValueType type = options.value_type;
  if (options.index_encoding == IndexEncoding::kDense) {
    return WriteDensePayload(type, values);
  }
  const SparseShape shape = ScanKeptElements(values);
  IndexEncoding encoding =
      options.index_encoding.has_value()
          ? *options.index_encoding
          : codec_internal::ChooseIndexEncoding(shape, type);
  if (encoding == IndexEncoding::kDense) {
    return WriteDensePayload(type, values);
  }
  std::vector<uint32_t> kept_indices;
  std::vector<float> kept_values;
  kept_indices.reserve(shape.count);
  kept_values.reserve(shape.count);
  for (size_t i = 0; i < values.size(); ++i) {
    if (IsOmittable(values[i])) continue;
    kept_indices.push_back(static_cast<uint32_t>(i));
    kept_values.push_back(values[i]);
  }
  std::string gap_range_bytes;
  if (!options.index_encoding.has_value()) {
    // `encoding` is already the choice without kGapRange.
    encoding = ChooseWithGapRange(shape, type, encoding,
                                  options.consider_gap_range, kept_indices,
                                  &gap_range_bytes);
  }
  return WriteSparsePayload(
      values.size(), encoding, type, kept_indices, kept_values,
      encoding == IndexEncoding::kGapRange && !options.index_encoding.has_value()
          ? &gap_range_bytes
          : nullptr);
}

}  // namespace entrograd
