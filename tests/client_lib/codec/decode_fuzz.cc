// libFuzzer harness for DecodePayload: the decoder must never crash, read
// out of bounds or allocate beyond a small multiple of its input, and
// whatever it accepts must re-encode to a payload that decodes identically.
//
// Input layout: numel (8 bytes LE), count (8), index_encoding (1),
// value_type (1), index byte length (2), then index bytes, then value bytes.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/string_view.h"
#include "entrograd/codec.h"

namespace {

uint64_t TakeLe(const uint8_t*& data, size_t& size, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes && size > 0; ++i, ++data, --size) {
    value |= static_cast<uint64_t>(*data) << (8 * i);
  }
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace entrograd;
  PayloadView view;
  view.numel = TakeLe(data, size, 8);
  view.count = TakeLe(data, size, 8);
  view.index_encoding = static_cast<int>(TakeLe(data, size, 1) % 6);
  view.value_type = static_cast<int>(TakeLe(data, size, 1) % 5);
  const size_t index_length =
      static_cast<size_t>(TakeLe(data, size, 2)) % (size + 1);
  const auto* chars = reinterpret_cast<const char*>(data);
  view.index_bytes = absl::string_view(chars, index_length);
  view.value_bytes =
      absl::string_view(chars + index_length, size - index_length);

  absl::StatusOr<DecodedPayload> decoded = DecodePayload(view);
  if (!decoded.ok()) return 0;
  if (decoded->numel > (1u << 20)) return 0;  // keep the dense check cheap

  std::vector<float> dense(decoded->numel, 0.0f);
  if (!ScatterInto(*decoded, absl::MakeSpan(dense)).ok()) std::abort();
  EncodeOptions options;
  options.value_type = static_cast<ValueType>(view.value_type);
  options.index_encoding = static_cast<IndexEncoding>(view.index_encoding);
  absl::StatusOr<EncodedPayload> again =
      decoded->dense ? EncodeDense(decoded->values, options)
                     : EncodeSparse(decoded->numel, decoded->indices,
                                    decoded->values, options);
  if (!again.ok()) std::abort();
  absl::StatusOr<DecodedPayload> twice = DecodePayload(ViewOf(*again));
  if (!twice.ok() || twice->indices != decoded->indices ||
      twice->values != decoded->values) {
    std::abort();
  }
  return 0;
}
