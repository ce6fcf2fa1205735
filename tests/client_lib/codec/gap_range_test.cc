// The gap_range index encoding: a reference decoder written from the
// proto's text (not from the codec) reads what the codec writes, round
// trips at the edges, the size it saves on clustered selections, and
// refusals of damaged streams.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::HasSubstr;

// INDEX_ENCODING_GAP_RANGE as aggregator.proto states it, decoded with
// 64-bit arithmetic and no shared code. std::nullopt when the stream is not
// exactly `count` indices.
std::optional<std::vector<uint64_t>> ReferenceDecode(const std::string& bytes,
                                                     uint64_t count) {
  if (count == 0) {
    return bytes.empty() ? std::optional<std::vector<uint64_t>>(
                               std::vector<uint64_t>{})
                         : std::nullopt;
  }
  size_t position = 0;
  bool overran = false;
  auto next_byte = [&]() -> uint64_t {
    if (position >= bytes.size()) {
      overran = true;
      return 0;
    }
    return static_cast<uint8_t>(bytes[position++]);
  };
  uint64_t code = 0;
  for (int i = 0; i < 4; ++i) code = code * 256 + next_byte();
  uint64_t range = (uint64_t{1} << 32) - 1;
  auto renormalise = [&] {
    while (range < (uint64_t{1} << 24)) {
      range *= 256;
      code = (code * 256 + next_byte()) % (uint64_t{1} << 32);
    }
  };
  std::vector<uint64_t> probability(32, 1024);
  std::vector<uint64_t> indices;
  int64_t previous = -1;
  for (uint64_t j = 0; j < count; ++j) {
    uint64_t node = 1;
    for (int decision = 0; decision < 5; ++decision) {
      const uint64_t bound = (range / 2048) * probability[node];
      uint64_t bit;
      if (code < bound) {
        range = bound;
        probability[node] += (2048 - probability[node]) / 16;
        bit = 0;
      } else {
        code -= bound;
        range -= bound;
        probability[node] -= probability[node] / 16;
        bit = 1;
      }
      renormalise();
      node = 2 * node + bit;
    }
    const uint64_t b = node - 32;
    uint64_t v = 1;
    for (uint64_t k = 0; k < b; ++k) {
      range /= 2;
      uint64_t bit = 0;
      if (code >= range) {
        code -= range;
        bit = 1;
      }
      v = 2 * v + bit;
      renormalise();
    }
    previous += static_cast<int64_t>(v);
    indices.push_back(static_cast<uint64_t>(previous));
  }
  if (overran || position != bytes.size()) return std::nullopt;
  return indices;
}

EncodedPayload EncodeGapRange(uint64_t numel,
                              const std::vector<uint32_t>& indices) {
  EncodeOptions options;
  options.index_encoding = IndexEncoding::kGapRange;
  options.value_type = ValueType::kE5M2;
  const std::vector<float> values(indices.size(), 0.5f);
  absl::StatusOr<EncodedPayload> payload =
      EncodeSparse(numel, indices, values, options);
  EXPECT_THAT(payload, testing::IsOk());
  return payload.ok() ? *std::move(payload) : EncodedPayload{};
}

// Top-k of a rows x columns weight whose large entries sit on a few rows
// and columns, as a fully connected layer's do at 1000x.
std::vector<uint32_t> ClusteredSelection(uint32_t rows, uint32_t columns,
                                         double keep, std::mt19937* rng) {
  std::vector<double> row_weight(rows), column_weight(columns);
  std::lognormal_distribution<double> spread(0.0, 1.5);
  for (double& w : row_weight) w = spread(*rng);
  for (double& w : column_weight) w = spread(*rng);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double total = 0;
  for (double r : row_weight) {
    for (double c : column_weight) total += r * c;
  }
  const double scale = keep * rows * columns / total;
  std::vector<uint32_t> indices;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < columns; ++c) {
      if (uniform(*rng) < scale * row_weight[r] * column_weight[c]) {
        indices.push_back(r * columns + c);
      }
    }
  }
  return indices;
}

std::vector<std::vector<uint32_t>> EdgeCases() {
  return {
      {0},
      {4294967294u},             // the largest index, one gap of 2^32 - 1
      {0, 4294967294u},          // the largest gap after a first index
      {0, 1, 2, 3, 4, 5, 6, 7},  // gaps of 1: bucket 0, no raw bits
      {1u << 31, (1u << 31) + 1, 4294967294u},
  };
}

TEST(GapRangeTest, ReferenceDecoderReadsWhatTheCodecWrites) {
  std::mt19937 rng(7);
  std::vector<std::vector<uint32_t>> cases = EdgeCases();
  cases.push_back(ClusteredSelection(300, 784, 0.0016, &rng));
  cases.push_back(ClusteredSelection(64, 800, 0.01, &rng));
  for (double density : {0.0005, 0.02, 0.5}) {
    std::bernoulli_distribution keep(density);
    std::vector<uint32_t> random;
    for (uint32_t i = 0; i < 200000; ++i) {
      if (keep(rng)) random.push_back(i);
    }
    cases.push_back(random);
  }
  for (const std::vector<uint32_t>& indices : cases) {
    SCOPED_TRACE(::testing::Message() << indices.size() << " indices");
    const EncodedPayload payload = EncodeGapRange(kMaxPayloadNumel, indices);
    const std::optional<std::vector<uint64_t>> reference =
        ReferenceDecode(payload.index_bytes, indices.size());
    ASSERT_TRUE(reference.has_value());
    EXPECT_THAT(*reference, ::testing::ElementsAreArray(indices));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                   DecodePayload(ViewOf(payload)));
    EXPECT_EQ(decoded.indices, indices);
    // Same indices, same bytes.
    EXPECT_EQ(EncodeGapRange(kMaxPayloadNumel, indices).index_bytes,
              payload.index_bytes);
    // The cost the choice reads (the coder counting, not writing) is the
    // size it writes, carries and held-back 0xFF bytes included.
    EXPECT_EQ(IndexBytes(IndexEncoding::kGapRange, kMaxPayloadNumel, indices),
              static_cast<int64_t>(payload.index_bytes.size()));
  }
}

TEST(GapRangeTest, EmptySelectionIsEmpty) {
  const EncodedPayload payload = EncodeGapRange(10, {});
  EXPECT_EQ(payload.index_bytes, "");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                 DecodePayload(ViewOf(payload)));
  EXPECT_TRUE(decoded.indices.empty());
}

// What it is for: a clustered 1000x selection costs clearly fewer index
// bytes than the delta varint, and the automatic choice takes it.
TEST(GapRangeTest, ClusteredSelectionsCostLessThanDeltaVarint) {
  std::mt19937 rng(11);
  int64_t varint_bytes = 0;
  int64_t gap_range_bytes = 0;
  for (int message = 0; message < 20; ++message) {
    const std::vector<uint32_t> indices =
        ClusteredSelection(300, 784, 0.0016, &rng);
    const uint64_t numel = 300 * 784;
    varint_bytes += IndexBytes(IndexEncoding::kDeltaVarint, numel, indices);
    gap_range_bytes += IndexBytes(IndexEncoding::kGapRange, numel, indices);
    const std::vector<float> values(indices.size(), 1.0f);
    EncodeOptions automatic;
    automatic.value_type = ValueType::kE5M2;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        EncodedPayload chosen, EncodeSparse(numel, indices, values, automatic));
    EXPECT_EQ(chosen.index_encoding,
              IndexBytes(IndexEncoding::kGapRange, numel, indices) <
                      IndexBytes(IndexEncoding::kDeltaVarint, numel, indices)
                  ? IndexEncoding::kGapRange
                  : IndexEncoding::kDeltaVarint);
  }
  EXPECT_LT(gap_range_bytes, varint_bytes * 9 / 10)
      << gap_range_bytes << " gap_range bytes against " << varint_bytes
      << " delta_varint bytes";
}

TEST(GapRangeTest, IndexBeyondNumelIsRefused) {
  EncodedPayload payload = EncodeGapRange(1000, {3, 500, 999});
  payload.numel = 999;
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index_bytes: index 999 at position 2 is >= "
                                 "numel 999"));
}

TEST(GapRangeTest, TruncatedAndTrailingStreamsAreRefused) {
  std::mt19937 rng(3);
  const std::vector<uint32_t> indices = ClusteredSelection(64, 800, 0.01, &rng);
  EncodedPayload payload = EncodeGapRange(64 * 800, indices);
  const std::string original = payload.index_bytes;
  payload.index_bytes = original.substr(0, original.size() - 1);
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index_bytes: truncated"));
  payload.index_bytes = original + '\x01';
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index_bytes: trailing bytes"));
  // The last byte only moves the final code off 0.
  payload.index_bytes = original;
  payload.index_bytes.back() = static_cast<char>(payload.index_bytes.back() ^ 1);
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index_bytes: not an encoder's gap_range stream: it "
                       "ends with code 1, not 0"));
  // One index fewer than encoded: the stream has bytes left over.
  payload.index_bytes = original;
  payload.count = indices.size() - 1;
  payload.value_bytes.pop_back();
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "trailing bytes"));
}

// A count far beyond what the bytes carry fails on the value bytes first,
// before anything the count sizes: what a hostile header can make the
// decoder allocate stays a small multiple of what was received.
TEST(GapRangeTest, LyingCountFailsBeforeDecodingIndices) {
  EncodedPayload payload = EncodeGapRange(kMaxPayloadNumel, {1, 2, 3});
  payload.count = 4000000000u;
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "value_bytes"));
  // With value bytes to match, the stream runs out first.
  payload.count = 100000;
  payload.value_bytes.assign(100000, '\x38');
  EXPECT_THAT(DecodePayload(ViewOf(payload)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index_bytes: truncated"));
}

// Any single damaged byte: the decoder refuses it or returns indices that
// are valid (ascending, < numel, exactly count), never anything else; run
// under ASan for "never out of bounds".
TEST(GapRangeTest, DamagedStreamsDecodeToValidIndicesOrFail) {
  std::mt19937 rng(5);
  const std::vector<uint32_t> indices =
      ClusteredSelection(100, 300, 0.01, &rng);
  const uint64_t numel = 100 * 300;
  EncodedPayload payload = EncodeGapRange(numel, indices);
  const std::string original = payload.index_bytes;
  int refused = 0;
  for (size_t position = 0; position < original.size(); ++position) {
    for (int flip : {0x01, 0x80, 0xFF}) {
      payload.index_bytes = original;
      payload.index_bytes[position] =
          static_cast<char>(payload.index_bytes[position] ^ flip);
      absl::StatusOr<DecodedPayload> decoded = DecodePayload(ViewOf(payload));
      if (!decoded.ok()) {
        ++refused;
        EXPECT_THAT(decoded.status().message(), HasSubstr("index_bytes"));
        continue;
      }
      ASSERT_EQ(decoded->indices.size(), indices.size());
      // Canonical: other bytes never decode to the same indices.
      EXPECT_NE(decoded->indices, indices);
      for (size_t j = 0; j < decoded->indices.size(); ++j) {
        EXPECT_LT(decoded->indices[j], numel);
        if (j > 0) EXPECT_GT(decoded->indices[j], decoded->indices[j - 1]);
      }
    }
  }
  // Most damage shows: an altered stream rarely ends exactly on its length.
  EXPECT_GT(refused, static_cast<int>(original.size()));
}

}  // namespace
}  // namespace entrograd
