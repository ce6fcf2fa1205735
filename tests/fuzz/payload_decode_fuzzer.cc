// libFuzzer harness: a received payload, from untrusted bytes, through
// DecodePayload and ScatterInto. The input is parsed as the wire's
// SparsePayload; what does not parse is read as raw fields (numel, count,
// encodings, then index and value bytes), so both the proto layer and the
// codec behind it are reached. Decoding must never crash, read out of
// bounds or allocate beyond numel; what decodes must scatter.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"
#include "entrograd/wire/payload_proto.h"

namespace {

// Dense scatter buffers above this are not allocated (decoding itself is
// still checked at any numel).
constexpr uint64_t kMaxScatterNumel = uint64_t{1} << 22;

template <typename T>
T Take(const uint8_t*& data, size_t& size) {
  T value{};
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(&value, data, n);
  data += n;
  size -= n;
  return value;
}

void DecodeAndScatter(const entrograd::PayloadView& view) {
  auto decoded = entrograd::DecodePayload(view);
  if (!decoded.ok() || decoded->numel > kMaxScatterNumel) return;
  std::vector<float> dense(decoded->numel);
  if (!entrograd::ScatterInto(*decoded, absl::MakeSpan(dense)).ok()) {
    __builtin_trap();  // a payload that decoded must scatter
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  entrograd::v1::SparsePayload proto;
  if (proto.ParseFromArray(data, static_cast<int>(size))) {
    DecodeAndScatter(entrograd::PayloadViewOfProto(proto));
  }
  entrograd::PayloadView raw;
  raw.numel = Take<uint32_t>(data, size);
  raw.count = Take<uint32_t>(data, size);
  raw.index_encoding = Take<uint8_t>(data, size);
  raw.value_type = Take<uint8_t>(data, size);
  const size_t index_bytes = size == 0 ? 0 : Take<uint16_t>(data, size) % (size + 1);
  raw.index_bytes = absl::string_view(reinterpret_cast<const char*>(data), index_bytes);
  raw.value_bytes = absl::string_view(reinterpret_cast<const char*>(data) + index_bytes,
                                      size - index_bytes);
  DecodeAndScatter(raw);
  return 0;
}
