// Byte-level expectations written out by hand, so the wire format cannot
// drift while encoder and decoder drift together.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

EncodedPayload MustEncode(uint64_t numel, std::vector<uint32_t> indices,
                          std::vector<float> values, IndexEncoding encoding,
                          ValueType type = ValueType::kF32) {
  EncodeOptions options;
  options.index_encoding = encoding;
  options.value_type = type;
  absl::StatusOr<EncodedPayload> payload =
      EncodeSparse(numel, indices, values, options);
  EXPECT_THAT(payload, testing::IsOk());
  return payload.ok() ? *std::move(payload) : EncodedPayload{};
}

TEST(WireFormatTest, DeltaVarint) {
  // Indices {0, 5, 6, 300}: values 0, 5-0-1 = 4, 6-5-1 = 0, 300-6-1 = 293.
  // 293 = 0b10'0100101: low 7 bits 0x25 with the continuation bit = 0xA5,
  // then 293 >> 7 = 2 = 0x02.
  const EncodedPayload payload = MustEncode(400, {0, 5, 6, 300}, {1, 2, 3, 4},
                                            IndexEncoding::kDeltaVarint);
  EXPECT_EQ(payload.index_bytes, Bytes({0x00, 0x04, 0x00, 0xA5, 0x02}));
  EXPECT_EQ(payload.count, 4u);
  EXPECT_EQ(payload.numel, 400u);
}

TEST(WireFormatTest, DeltaVarintLargest) {
  // Index 2^32 - 2 = 0xFFFFFFFE: 7-bit groups from the low end are 0x7E,
  // 0x7F, 0x7F, 0x7F and 0x0F -> FE FF FF FF 0F.
  const EncodedPayload payload = MustEncode(kMaxPayloadNumel, {0xFFFFFFFEu},
                                            {1}, IndexEncoding::kDeltaVarint);
  EXPECT_EQ(payload.index_bytes, Bytes({0xFE, 0xFF, 0xFF, 0xFF, 0x0F}));
}

TEST(WireFormatTest, RawU32) {
  // 1 = 01 00 00 00; 258 = 0x102 = 02 01 00 00; 0x01020304 little-endian.
  const EncodedPayload payload = MustEncode(0x02000000, {1, 258, 0x01020304},
                                            {0, 0, 0}, IndexEncoding::kRawU32);
  EXPECT_EQ(payload.index_bytes, Bytes({0x01, 0x00, 0x00, 0x00, 0x02, 0x01,
                                        0x00, 0x00, 0x04, 0x03, 0x02, 0x01}));
}

TEST(WireFormatTest, Bitmap) {
  // numel 10 -> 2 bytes. Indices 0 and 3 -> byte 0 = 0b00001001 = 0x09;
  // index 9 is bit 1 of byte 1 -> 0x02.
  const EncodedPayload payload =
      MustEncode(10, {0, 3, 9}, {1, 1, 1}, IndexEncoding::kBitmap);
  EXPECT_EQ(payload.index_bytes, Bytes({0x09, 0x02}));
  // numel 16, indices 7 and 8 straddle the byte boundary: 0x80, 0x01.
  EXPECT_EQ(MustEncode(16, {7, 8}, {1, 1}, IndexEncoding::kBitmap).index_bytes,
            Bytes({0x80, 0x01}));
}

TEST(WireFormatTest, F32Values) {
  // 1.0f = 0x3F800000, -2.5f = 0xC0200000, little-endian.
  const EncodedPayload payload =
      MustEncode(4, {1, 2}, {1.0f, -2.5f}, IndexEncoding::kRawU32);
  EXPECT_EQ(payload.value_bytes,
            Bytes({0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0xC0}));
}

TEST(WireFormatTest, F16AndBf16Values) {
  // f16: 1.0 = 0x3C00, -2.0 = 0xC000, 70000 saturates to 0x7BFF.
  const EncodedPayload f16 =
      MustEncode(4, {0, 1, 2}, {1.0f, -2.0f, 70000.0f}, IndexEncoding::kRawU32,
                 ValueType::kF16);
  EXPECT_EQ(f16.value_bytes, Bytes({0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B}));
  EXPECT_EQ(f16.saturated_values, 1);
  // bf16: 1.0 = 0x3F80, -2.0 = 0xC000, 70000 fits (0x4789 after rounding:
  // 70000 = 0x4788B800, low half 0xB800 > 0x8000 rounds up).
  const EncodedPayload bf16 =
      MustEncode(4, {0, 1, 2}, {1.0f, -2.0f, 70000.0f}, IndexEncoding::kRawU32,
                 ValueType::kBF16);
  EXPECT_EQ(bf16.value_bytes, Bytes({0x80, 0x3F, 0x00, 0xC0, 0x89, 0x47}));
  EXPECT_EQ(bf16.saturated_values, 0);
}

TEST(WireFormatTest, E5M2ValuesAreOneByteEach) {
  // 1.0 = 0x3C, -2.0 = 0xC0, 0.1 rounds to 1.5 * 2^-4 = 0x2E, 70000
  // saturates to 57344 = 0x7B.
  const EncodedPayload e5m2 =
      MustEncode(8, {0, 1, 5, 7}, {1.0f, -2.0f, 0.1f, 70000.0f},
                 IndexEncoding::kRawU32, ValueType::kE5M2);
  EXPECT_EQ(e5m2.value_bytes, Bytes({0x3C, 0xC0, 0x2E, 0x7B}));
  EXPECT_EQ(e5m2.saturated_values, 1);
}

TEST(WireFormatTest, DenseFromSparseWritesZeros) {
  // numel 3, 2.0 at index 1, f16: 00 00 | 00 40 | 00 00, no index bytes.
  const EncodedPayload payload =
      MustEncode(3, {1}, {2.0f}, IndexEncoding::kDense, ValueType::kF16);
  EXPECT_EQ(payload.index_bytes, "");
  EXPECT_EQ(payload.value_bytes, Bytes({0x00, 0x00, 0x00, 0x40, 0x00, 0x00}));
  EXPECT_EQ(payload.count, 3u);
}

TEST(WireFormatTest, DecodesHandWrittenPayload) {
  const std::string index_bytes = Bytes({0x00, 0x04, 0x00, 0xA5, 0x02});
  const std::string value_bytes =
      Bytes({0x00, 0x3C, 0x00, 0xC0, 0x00, 0x00, 0x01, 0x00});
  PayloadView view;
  view.numel = 400;
  view.count = 4;
  view.index_encoding = 2;  // DELTA_VARINT
  view.value_type = 2;      // F16
  view.index_bytes = index_bytes;
  view.value_bytes = value_bytes;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded, DecodePayload(view));
  EXPECT_FALSE(decoded.dense);
  EXPECT_THAT(decoded.indices, ::testing::ElementsAre(0, 5, 6, 300));
  EXPECT_THAT(decoded.values,
              ::testing::ElementsAre(1.0f, -2.0f, 0.0f, std::ldexp(1.0f, -24)));
}

TEST(WireFormatTest, ViewOfCopiesFields) {
  const EncodedPayload payload = MustEncode(
      10, {0, 3, 9}, {1, 1, 1}, IndexEncoding::kBitmap, ValueType::kBF16);
  const PayloadView view = ViewOf(payload);
  EXPECT_EQ(view.numel, 10u);
  EXPECT_EQ(view.count, 3u);
  EXPECT_EQ(view.index_encoding, 3);
  EXPECT_EQ(view.value_type, 3);
  EXPECT_EQ(view.index_bytes.data(), payload.index_bytes.data());
  EXPECT_EQ(view.value_bytes.data(), payload.value_bytes.data());
  EXPECT_EQ(payload.WireBytes(), 2 + 6);
}

}  // namespace
}  // namespace entrograd
