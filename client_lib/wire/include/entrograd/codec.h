// Codec for sparse layer updates: index encodings and value types of the
// entrograd.v1 SparsePayload, with no dependency on protobuf (the transport
// copies an EncodedPayload into the proto message and back).
//
// Thread safety: all functions are pure and may be called concurrently.
// Ownership: outputs are returned by value; inputs are borrowed for the
// duration of the call only.
#ifndef ENTROGRAD_CODEC_H_
#define ENTROGRAD_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace entrograd {

// How the indices of a payload are laid out. Values equal the proto's
// entrograd.v1.IndexEncoding numbers.
enum class IndexEncoding : int {
  kRawU32 = 1,       // count little-endian uint32, strictly ascending
  kDeltaVarint = 2,  // LEB128 varints: first index, then gap - 1
  kBitmap = 3,       // ceil(numel/8) bytes, bit i (LSB first) = index i present
  kDense = 4,        // no index bytes; values hold all numel elements
  // The gaps range coded with an adaptive model (the proto's
  // INDEX_ENCODING_GAP_RANGE gives the format): fewer bytes than
  // kDeltaVarint where the gaps cluster, as a 1000x top-k's do.
  kGapRange = 5,
};

// How each value is stored. Values equal the proto's entrograd.v1.ValueType.
enum class ValueType : int {
  kF32 = 1,   // IEEE binary32, little-endian, exact
  kF16 = 2,   // IEEE binary16, round to nearest even, saturating
  kBF16 = 3,  // bfloat16, round to nearest even, saturating
  kE5M2 = 4,  // FP8 E5M2 (top byte of binary16), nearest even, saturating
};

// Every encoding and value type, in the fixed order the automatic choice
// breaks ties with (earlier wins).
inline constexpr IndexEncoding kAllIndexEncodings[] = {
    IndexEncoding::kRawU32, IndexEncoding::kDeltaVarint,
    IndexEncoding::kBitmap, IndexEncoding::kDense, IndexEncoding::kGapRange};
inline constexpr ValueType kAllValueTypes[] = {
    ValueType::kF32, ValueType::kF16, ValueType::kBF16, ValueType::kE5M2};

// "raw_u32", "delta_varint", "bitmap", "dense", "gap_range".
absl::string_view IndexEncodingName(IndexEncoding encoding);
// "f32", "f16", "bf16", "e5m2".
absl::string_view ValueTypeName(ValueType type);
// The inverse of ValueTypeName. INVALID_ARGUMENT naming the accepted names
// for any other text.
absl::StatusOr<ValueType> ParseValueType(absl::string_view name);
// Bytes one value takes on the wire: 4, 2, 2, 1.
int64_t ValueTypeBytes(ValueType type);

// The largest numel a payload may have: indices travel as uint32.
inline constexpr uint64_t kMaxPayloadNumel = 0xFFFFFFFFull;

// A payload as it travels: the fields of entrograd.v1.SparsePayload.
struct EncodedPayload {
  uint64_t numel = 0;  // length of the vector
  uint64_t count = 0;  // (index, value) pairs carried; numel when dense
  IndexEncoding index_encoding = IndexEncoding::kRawU32;
  ValueType value_type = ValueType::kF32;
  std::string index_bytes;
  std::string value_bytes;
  // Values whose magnitude exceeded the value type's largest finite value
  // and were stored as that value with the same sign (never inf). Not on the
  // wire: for the sender's metrics.
  int64_t saturated_values = 0;

  // index_bytes.size() + value_bytes.size(): what the payload costs on the
  // wire, not counting the message framing.
  int64_t WireBytes() const {
    return static_cast<int64_t>(index_bytes.size() + value_bytes.size());
  }
};

struct EncodeOptions {
  // Value type of the payload. Default: exact float32.
  ValueType value_type = ValueType::kF32;
  // Index encoding. std::nullopt (default) picks the encoding with the fewest
  // wire bytes (index + value bytes) for this input, ties broken by the
  // order of kAllIndexEncodings. kGapRange's size is known only by running
  // its coder, so the choice costs it only where it can win, when
  // kDeltaVarint is the smallest of the others (then count < numel / 8),
  // and only with consider_gap_range.
  std::optional<IndexEncoding> index_encoding;
  // Whether the automatic choice may pick kGapRange. False for a receiver
  // that does not decode it (an older peer; Join.accepted_index_encodings).
  bool consider_gap_range = true;
};

// Index bytes that `encoding` needs for these indices (strictly ascending,
// each < numel) of a vector of `numel` elements; 0 for kDense. Does not
// validate. O(count) for kDeltaVarint and kGapRange (which runs its coder),
// O(1) otherwise.
int64_t IndexBytes(IndexEncoding encoding, uint64_t numel,
                   absl::Span<const uint32_t> indices);

// Encodes the sparse vector of `numel` elements that is zero except at
// `indices` (strictly ascending) where it holds `values`.
// Errors (INVALID_ARGUMENT, naming the problem and position):
//   numel == 0 or numel > kMaxPayloadNumel; indices.size() != values.size();
//   an index >= numel; indices not strictly ascending; a NaN or Inf value;
//   an options enum holding a value outside the declared enumerators.
// With kDense the zeros between the indices are written out explicitly.
absl::StatusOr<EncodedPayload> EncodeSparse(uint64_t numel,
                                            absl::Span<const uint32_t> indices,
                                            absl::Span<const float> values,
                                            const EncodeOptions& options = {});

// Encodes a dense vector (every element). With options.index_encoding unset
// the automatic choice also considers the sparse encodings of its nonzeros
// (a mostly-zero "dense" vector is sent sparse when that is smaller).
// A sparse encoding (chosen or explicit) carries every element whose bits
// are not +0.0; -0.0 is kept so that f32 round-trips bitwise.
// Errors: as EncodeSparse (empty or too long input, NaN or Inf).
absl::StatusOr<EncodedPayload> EncodeDense(absl::Span<const float> values,
                                           const EncodeOptions& options = {});

// A payload as received: enums still raw integers, bytes borrowed (must
// outlive the decode call).
struct PayloadView {
  uint64_t numel = 0;
  uint64_t count = 0;
  int index_encoding = 0;
  int value_type = 0;
  absl::string_view index_bytes;
  absl::string_view value_bytes;
};

PayloadView ViewOf(const EncodedPayload& payload);

// A decoded payload. When `dense` is true, `indices` is empty and `values`
// holds all numel elements; otherwise indices are strictly ascending and
// values[j] belongs to indices[j].
struct DecodedPayload {
  uint64_t numel = 0;
  bool dense = false;
  // The type the values travelled in (they are float32 here either way): a
  // shard answers a round sent in f16 in f16 (aggregator/rounds/merge_round.h).
  ValueType value_type = ValueType::kF32;
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

// Decodes and fully validates a received payload. Never crashes or reads out
// of bounds on any input. Errors (INVALID_ARGUMENT, message names the field
// and, where there is one, the position):
//   numel == 0 or > kMaxPayloadNumel; count > numel; unknown index_encoding
//   or value_type; index_bytes or value_bytes truncated or with trailing
//   bytes; a varint longer than 5 bytes or overflowing; a gap_range stream
//   whose final code word is out of range; an index >= numel;
//   indices not strictly ascending (repeated or descending); count not equal
//   to the number of indices decoded (bitmap popcount, varints read) or to
//   numel for kDense; a NaN or Inf value.
absl::StatusOr<DecodedPayload> DecodePayload(const PayloadView& payload);

// Adds nothing, overwrites: writes the decoded values into `dense` (size
// numel) at their indices (all of it when dense). Errors: INVALID_ARGUMENT
// when dense.size() != payload.numel, or when a hand-built payload breaks
// the invariants above (indices/values sizes differ, an index >= numel, a
// dense payload without numel values); `dense` is left untouched then.
absl::Status ScatterInto(const DecodedPayload& payload, absl::Span<float> dense);

// Scalar conversions used by the codec, exposed for tests and the GPU path.
// Round to nearest even; magnitudes beyond the largest finite value saturate
// to it (sign kept) and set *saturated to true when given. Inputs must be
// finite.
uint16_t FloatToHalf(float value, bool* saturated = nullptr);
float HalfToFloat(uint16_t bits);
uint16_t FloatToBfloat16(float value, bool* saturated = nullptr);
float Bfloat16ToFloat(uint16_t bits);
// FP8 E5M2: binary16's sign, exponent and top 2 mantissa bits (largest
// finite 57344, smallest subnormal 2^-16).
uint8_t FloatToE5M2(float value, bool* saturated = nullptr);
float E5M2ToFloat(uint8_t bits);

// What a receiver decodes of `value` sent as `type`: `value` itself for
// kF32, else the nearest value of the type (as above). The sender keeps
// value - RoundToValueType(type, value), the rounding error, in its residual
// (ALGORITHM.md step 7). Input must be finite.
float RoundToValueType(ValueType type, float value);

}  // namespace entrograd

#endif  // ENTROGRAD_CODEC_H_
