// DecodePayload on malformed payloads: each case must fail with
// INVALID_ARGUMENT and a message naming the field and, where there is one,
// the position. Also checks that lying counts fail fast (no huge allocation).

#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::string Le32s(std::initializer_list<uint32_t> words) {
  std::string out;
  for (uint32_t w : words) {
    for (int shift = 0; shift < 32; shift += 8) {
      out.push_back(static_cast<char>((w >> shift) & 0xFF));
    }
  }
  return out;
}

std::string F32s(std::initializer_list<float> values) {
  std::string out;
  for (float value : values) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    out += Le32s({bits});
  }
  return out;
}

constexpr int kRaw = 1, kVarint = 2, kBitmap = 3, kDense = 4, kGapRange = 5;
constexpr int kF32 = 1, kF16 = 2, kBF16 = 3, kE5M2 = 4;
constexpr uint64_t kHuge = 4000000000ull;

struct BadPayload {
  std::string name;
  uint64_t numel;
  uint64_t count;
  int index_encoding;
  int value_type;
  std::string index_bytes;
  std::string value_bytes;
  std::string message;  // expected substring
};

std::vector<BadPayload> BadPayloads() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  return {
      // Header.
      {"NumelZero", 0, 0, kRaw, kF32, "", "", "numel: must not be 0"},
      {"NumelTooLarge", 1ull << 32, 0, kRaw, kF32, "", "",
       "numel: 4294967296 exceeds kMaxPayloadNumel 4294967295"},
      {"CountAboveNumel", 4, 5, kRaw, kF32, Le32s({0, 1, 2, 3, 3}),
       F32s({1, 1, 1, 1, 1}), "count: 5 exceeds numel 4"},
      {"IndexEncoding0", 4, 0, 0, kF32, "", "",
       "index_encoding: unknown value 0"},
      {"IndexEncoding6", 4, 0, 6, kF32, "", "",
       "index_encoding: unknown value 6"},
      {"IndexEncoding99", 4, 0, 99, kF32, "", "",
       "index_encoding: unknown value 99"},
      {"IndexEncodingNegative", 4, 0, -1, kF32, "", "",
       "index_encoding: unknown value -1"},
      {"ValueType0", 4, 0, kRaw, 0, "", "", "value_type: unknown value 0"},
      {"ValueType5", 4, 0, kRaw, 5, "", "", "value_type: unknown value 5"},
      {"ValueType99", 4, 0, kRaw, 99, "", "", "value_type: unknown value 99"},
      // raw_u32.
      {"RawTruncated", 400, 2, kRaw, kF32, Le32s({1}) + Bytes({2, 0}),
       F32s({1, 1}), "index_bytes: truncated: 6 bytes, raw_u32 needs 8"},
      {"RawTrailing", 400, 2, kRaw, kF32, Le32s({1, 2}) + Bytes({0}),
       F32s({1, 1}), "index_bytes: trailing bytes: 9 bytes, raw_u32 needs 8"},
      {"RawIndexAtNumel", 400, 2, kRaw, kF32, Le32s({1, 400}), F32s({1, 1}),
       "index_bytes: index 400 at position 1 is >= numel 400"},
      {"RawRepeated", 400, 4, kRaw, kF32, Le32s({0, 3, 7, 7}),
       F32s({1, 1, 1, 1}),
       "index_bytes: index 7 at position 3 is not greater than previous "
       "index 7 (repeated)"},
      {"RawDescending", 400, 3, kRaw, kF32, Le32s({0, 9, 3}), F32s({1, 1, 1}),
       "index_bytes: index 3 at position 2 is not greater than previous "
       "index 9 (descending)"},
      // delta_varint.
      {"VarintUnterminated", 400, 1, kVarint, kF32, Bytes({0x80}), F32s({1}),
       "index_bytes: truncated varint at position 0"},
      {"VarintFewerBytesThanCount", 400, 3, kVarint, kF32, Bytes({0, 0}),
       F32s({1, 1, 1}), "index_bytes: truncated: 2 bytes cannot hold 3"},
      {"VarintTooManyBytes", 400, 1, kVarint, kF32, Bytes({0, 0, 0, 0, 0, 0}),
       F32s({1}), "index_bytes: trailing bytes: 6 bytes"},
      {"VarintCountAboveDecoded", 400, 2, kVarint, kF32, Bytes({0x80, 0x01}),
       F32s({1, 1}), "count: 2 but index_bytes holds 1 varints"},
      {"VarintCountBelowDecoded", 400, 1, kVarint, kF32, Bytes({0x00, 0x00}),
       F32s({1}), "count: 1 but index_bytes holds more than 1 varints"},
      {"VarintLongerThan5Bytes", 400, 2, kVarint, kF32,
       Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), F32s({1, 1}),
       "index_bytes: varint at position 0 is longer than 5 bytes"},
      {"VarintOverflow", kMaxPayloadNumel, 1, kVarint, kF32,
       Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0x1F}), F32s({1}),
       "index_bytes: varint at position 0 overflows uint32"},
      {"VarintFirstIndexAtNumel", 10, 1, kVarint, kF32, Bytes({10}), F32s({1}),
       "index_bytes: index 10 at position 0 is >= numel 10"},
      {"VarintGapPastNumel", 10, 2, kVarint, kF32, Bytes({5, 4}), F32s({1, 1}),
       "index_bytes: index 10 at position 1 is >= numel 10"},
      {"VarintSumPastUint32", kMaxPayloadNumel, 2, kVarint, kF32,
       Bytes({0xFE, 0xFF, 0xFF, 0xFF, 0x0F, 0x00}), F32s({1, 1}),
       "index_bytes: index 4294967295 at position 1 is >= numel 4294967295"},
      // bitmap.
      {"BitmapTruncated", 10, 1, kBitmap, kF32, Bytes({0x01}), F32s({1}),
       "index_bytes: truncated: 1 bytes, bitmap needs 2 for numel 10"},
      {"BitmapTrailing", 10, 1, kBitmap, kF32, Bytes({0x01, 0x00, 0x00}),
       F32s({1}),
       "index_bytes: trailing bytes: 3 bytes, bitmap needs 2 for numel 10"},
      {"BitmapPaddingBitSet", 10, 2, kBitmap, kF32, Bytes({0x01, 0x04}),
       F32s({1, 1}), "index_bytes: bitmap bit 10 is set, an index >= numel 10"},
      {"BitmapCountAbovePopcount", 10, 2, kBitmap, kF32, Bytes({0x01, 0x00}),
       F32s({1, 1}), "count: 2 but the index_bytes bitmap has 1 bits set"},
      {"BitmapCountBelowPopcount", 10, 1, kBitmap, kF32, Bytes({0x03, 0x00}),
       F32s({1}), "count: 1 but the index_bytes bitmap has 2 bits set"},
      // dense.
      {"DenseCountBelowNumel", 4, 3, kDense, kF32, "", F32s({1, 1, 1}),
       "count: 3 must equal numel 4 for dense"},
      {"DenseWithIndexBytes", 2, 2, kDense, kF32, Bytes({0}), F32s({1, 1}),
       "index_bytes: trailing bytes: 1 bytes, dense needs 0"},
      // values.
      {"ValuesTruncated", 4, 1, kRaw, kF32, Le32s({2}), Bytes({0, 0, 0}),
       "value_bytes: truncated: 3 bytes, 1 f32 values need 4"},
      {"ValuesTrailing", 4, 1, kRaw, kF32, Le32s({2}), F32s({1}) + Bytes({0}),
       "value_bytes: trailing bytes: 5 bytes, 1 f32 values need 4"},
      {"DenseValuesTruncatedF16", 3, 3, kDense, kF16, "", Bytes({0, 0, 0, 0}),
       "value_bytes: truncated: 4 bytes, 3 f16 values need 6"},
      {"F32NaN", 4, 2, kRaw, kF32, Le32s({0, 1}), F32s({1, nan}),
       "value_bytes: value at position 1 is NaN"},
      {"F32Inf", 4, 2, kRaw, kF32, Le32s({0, 1}), F32s({-inf, 1}),
       "value_bytes: value at position 0 is Inf"},
      {"F16NaN", 4, 4, kDense, kF16, "",
       Bytes({0, 0x3C, 0, 0x3C, 0, 0x3C, 0x00, 0x7E}),
       "value_bytes: value at position 3 is NaN"},
      {"F16Inf", 4, 2, kRaw, kF16, Le32s({0, 1}), Bytes({0, 0x3C, 0x00, 0xFC}),
       "value_bytes: value at position 1 is Inf"},
      {"Bf16NaN", 4, 1, kBitmap, kBF16, Bytes({0x02}), Bytes({0xC0, 0x7F}),
       "value_bytes: value at position 0 is NaN"},
      {"Bf16Inf", 4, 2, kVarint, kBF16, Bytes({0, 0}),
       Bytes({0x80, 0x3F, 0x80, 0x7F}),
       "value_bytes: value at position 1 is Inf"},
      {"E5M2NaN", 4, 2, kRaw, kE5M2, Le32s({0, 1}), Bytes({0x3C, 0xFE}),
       "value_bytes: value at position 1 is NaN"},
      {"E5M2Inf", 3, 3, kDense, kE5M2, "", Bytes({0x7C, 0x3C, 0x3C}),
       "value_bytes: value at position 0 is Inf"},
      {"E5M2ValuesTrailing", 4, 1, kRaw, kE5M2, Le32s({2}), Bytes({0x3C, 0}),
       "value_bytes: trailing bytes: 2 bytes, 1 e5m2 values need 1"},
      // Counts no buffer backs: must fail on sizes, before allocating. The
      // value bytes are sized first, whatever the index encoding: at least
      // a byte per value bounds count by what arrived.
      {"HugeCountRaw", kHuge, kHuge, kRaw, kF32, Le32s({1, 2}), F32s({1, 1}),
       "value_bytes: truncated: 8 bytes, 4000000000 f32 values need "
       "16000000000"},
      {"HugeCountVarint", kHuge, kHuge, kVarint, kF32, Bytes({0, 0}),
       F32s({1, 1}), "value_bytes: truncated: 8 bytes"},
      {"HugeCountBitmap", kHuge, kHuge, kBitmap, kF32, Bytes({0xFF}),
       F32s({1, 1}), "value_bytes: truncated: 8 bytes"},
      {"HugeCountDense", kHuge, kHuge, kDense, kF32, "", F32s({1, 1}),
       "value_bytes: truncated: 8 bytes, 4000000000 f32 values need "
       "16000000000"},
      {"HugeCountGapRange", kHuge, kHuge, kGapRange, kF32, Bytes({0, 0, 0, 0}),
       F32s({1, 1}), "value_bytes: truncated: 8 bytes"},
      // A count the value bytes back but the index bytes do not.
      {"CountBeyondIndexBytesRaw", kHuge, 1000, kRaw, kE5M2, Le32s({1, 2}),
       std::string(1000, '\x38'),
       "index_bytes: truncated: 8 bytes, raw_u32 needs 4000"},
      {"CountBeyondIndexBytesVarint", kHuge, 1000, kVarint, kE5M2,
       Bytes({0, 0}), std::string(1000, '\x38'),
       "index_bytes: truncated: 2 bytes cannot hold 1000"},
      {"CountBeyondIndexBytesBitmap", kHuge, 1000, kBitmap, kE5M2,
       Bytes({0xFF}), std::string(1000, '\x38'),
       "index_bytes: truncated: 1 bytes, bitmap needs 500000000"},
      {"CountBeyondIndexBytesGapRange", kHuge, 1000, kGapRange, kE5M2,
       Bytes({0, 0, 0, 0, 0}), std::string(1000, '\x38'),
       "index_bytes: truncated: 5 gap_range bytes end before index"},
      {"GapRangeTooShortForOneIndex", 100, 1, kGapRange, kF32, Bytes({0, 0}),
       F32s({1}), "index_bytes: truncated: 2 gap_range bytes end before "
       "index 0 of count 1"},
      {"GapRangeBytesForCountZero", 100, 0, kGapRange, kF32, Bytes({0}), "",
       "index_bytes: trailing bytes: 1 bytes for count 0"},
  };
}

// Keeps test names and failure output readable instead of a byte dump.
void PrintTo(const BadPayload& bad, std::ostream* os) { *os << bad.name; }

class DecodeErrorsTest : public ::testing::TestWithParam<BadPayload> {};

TEST_P(DecodeErrorsTest, RejectsWithPreciseMessage) {
  const BadPayload& bad = GetParam();
  PayloadView view;
  view.numel = bad.numel;
  view.count = bad.count;
  view.index_encoding = bad.index_encoding;
  view.value_type = bad.value_type;
  view.index_bytes = bad.index_bytes;
  view.value_bytes = bad.value_bytes;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(DecodePayload(view),
              StatusIs(absl::StatusCode::kInvalidArgument, bad.message));
  // Every case is a few bytes; anything slow means a lying header was
  // trusted (e.g. a buffer sized from count).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

INSTANTIATE_TEST_SUITE_P(Table, DecodeErrorsTest,
                         ::testing::ValuesIn(BadPayloads()),
                         [](const auto& info) { return info.param.name; });

// The table's payloads are each one mutation away from a valid one; make
// sure the unmutated bases decode, so the cases test what they claim.
TEST(DecodeErrorsTest, ValidNeighboursDecode) {
  const std::string raw = Le32s({0, 3, 7, 9});
  const std::string values = F32s({1, 1, 1, 1});
  PayloadView view;
  view.numel = 400;
  view.count = 4;
  view.index_encoding = kRaw;
  view.value_type = kF32;
  view.index_bytes = raw;
  view.value_bytes = values;
  EXPECT_THAT(DecodePayload(view), testing::IsOk());

  const std::string varint = Bytes({0xFE, 0xFF, 0xFF, 0xFF, 0x0F});
  const std::string one = F32s({1});
  view.numel = kMaxPayloadNumel;
  view.count = 1;
  view.index_encoding = kVarint;
  view.index_bytes = varint;
  view.value_bytes = one;
  EXPECT_THAT(DecodePayload(view), testing::IsOk());

  const std::string bitmap = Bytes({0x01, 0x02});  // indices 0, 9
  const std::string two = F32s({1, 1});
  view.numel = 10;
  view.count = 2;
  view.index_encoding = kBitmap;
  view.index_bytes = bitmap;
  view.value_bytes = two;
  EXPECT_THAT(DecodePayload(view), testing::IsOk());

  // Largest finite values of each 16-bit type are fine.
  const std::string f16_max = Bytes({0xFF, 0x7B, 0xFF, 0xFB});
  view.numel = 2;
  view.count = 2;
  view.index_encoding = kDense;
  view.value_type = kF16;
  view.index_bytes = "";
  view.value_bytes = f16_max;
  EXPECT_THAT(DecodePayload(view), testing::IsOk());
  const std::string bf16_max = Bytes({0x7F, 0x7F, 0x7F, 0xFF});
  view.value_type = kBF16;
  view.value_bytes = bf16_max;
  EXPECT_THAT(DecodePayload(view), testing::IsOk());
  view.numel = 4;
  view.count = 4;
  const std::string e5m2_max = Bytes({0x7B, 0xFB, 0x7B, 0xFB});
  view.value_type = kE5M2;
  view.value_bytes = e5m2_max;
  EXPECT_THAT(DecodePayload(view), testing::IsOk());
}

// Truncating a valid payload anywhere, or appending a byte, must fail and
// never crash (run under ASan to check the "never out of bounds" part).
TEST(DecodeErrorsTest, EveryTruncationAndExtensionFails) {
  const std::vector<uint32_t> indices = {0, 5, 6, 300, 399};
  const std::vector<float> values = {1, -2, 3, -4, 5};
  for (IndexEncoding encoding : kAllIndexEncodings) {
    for (ValueType type : kAllValueTypes) {
      EncodeOptions options;
      options.index_encoding = encoding;
      options.value_type = type;
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(
          EncodedPayload payload, EncodeSparse(400, indices, values, options));
      for (int field = 0; field < 2; ++field) {
        std::string& bytes =
            field == 0 ? payload.index_bytes : payload.value_bytes;
        const std::string original = bytes;
        for (size_t keep = 0; keep < original.size(); ++keep) {
          bytes = original.substr(0, keep);
          EXPECT_THAT(DecodePayload(ViewOf(payload)),
                      StatusIs(absl::StatusCode::kInvalidArgument, ""))
              << IndexEncodingName(encoding) << " field " << field << " keep "
              << keep;
        }
        bytes = original + '\0';
        EXPECT_THAT(DecodePayload(ViewOf(payload)),
                    StatusIs(absl::StatusCode::kInvalidArgument, ""))
            << IndexEncodingName(encoding) << " field " << field << " +1";
        bytes = original;
      }
    }
  }
}

}  // namespace
}  // namespace entrograd
