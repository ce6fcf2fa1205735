// The automatic index encoding: it must be the smallest of the explicit
// encodings, ties going to the earlier entry of kAllIndexEncodings, with
// gap_range costed only where delta_varint is the smallest of the rest;
// and IndexBytes must predict the index bytes actually written.

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

struct Smallest {
  IndexEncoding encoding;
  int64_t wire_bytes;
};

// The specification of the automatic choice, by explicit encodings: the
// first encoding other than gap_range with the fewest wire bytes; then
// gap_range instead when that is delta_varint, gap_range is strictly
// smaller and `consider_gap_range`.
template <typename EncodeFn>
Smallest SmallestExplicit(ValueType type, EncodeFn encode,
                          bool consider_gap_range = true) {
  auto wire_bytes = [&](IndexEncoding encoding) {
    EncodeOptions options;
    options.value_type = type;
    options.index_encoding = encoding;
    absl::StatusOr<EncodedPayload> payload = encode(options);
    EXPECT_THAT(payload, testing::IsOk());
    return payload.ok() ? payload->WireBytes()
                        : std::numeric_limits<int64_t>::max();
  };
  Smallest best{IndexEncoding::kRawU32, std::numeric_limits<int64_t>::max()};
  for (IndexEncoding encoding : kAllIndexEncodings) {
    if (encoding == IndexEncoding::kGapRange) continue;
    const int64_t bytes = wire_bytes(encoding);
    if (bytes < best.wire_bytes) best = {encoding, bytes};
  }
  if (consider_gap_range && best.encoding == IndexEncoding::kDeltaVarint) {
    const int64_t bytes = wire_bytes(IndexEncoding::kGapRange);
    if (bytes < best.wire_bytes) best = {IndexEncoding::kGapRange, bytes};
  }
  return best;
}

// Random vector of `numel` elements, each nonzero with probability
// `density`; gaps are random so delta_varint varies in size.
std::vector<float> RandomVector(uint64_t numel, double density,
                                std::mt19937* rng) {
  std::bernoulli_distribution keep(density);
  std::vector<float> values(numel, 0.0f);
  for (auto& value : values) {
    if (keep(*rng)) value = 0.5f + static_cast<float>((*rng)() % 100);
  }
  return values;
}

void Sparsify(const std::vector<float>& dense, std::vector<uint32_t>* indices,
              std::vector<float>* values) {
  for (size_t i = 0; i < dense.size(); ++i) {
    if (dense[i] != 0.0f) {
      indices->push_back(static_cast<uint32_t>(i));
      values->push_back(dense[i]);
    }
  }
}

TEST(EncodingChoiceTest, AutoIsSmallestExplicitWithTieOrder) {
  std::mt19937 rng(42);
  const uint64_t sizes[] = {1, 2, 7, 8, 9, 16, 31, 64, 100, 1000, 5000, 70000};
  const double densities[] = {0.0, 0.001, 0.01, 0.03, 0.06, 0.1,
                              0.2, 0.3,   0.5,  0.9,  0.97, 1.0};
  int seen[6] = {};
  for (ValueType type : kAllValueTypes) {
    for (uint64_t numel : sizes) {
      for (double density : densities) {
        for (int repeat = 0; repeat < 3; ++repeat) {
          SCOPED_TRACE(::testing::Message() << ValueTypeName(type) << " numel "
                                            << numel << " density " << density);
          const std::vector<float> dense = RandomVector(numel, density, &rng);
          std::vector<uint32_t> indices;
          std::vector<float> values;
          Sparsify(dense, &indices, &values);

          EncodeOptions automatic;
          automatic.value_type = type;
          const Smallest sparse_best =
              SmallestExplicit(type, [&](const EncodeOptions& options) {
                return EncodeSparse(numel, indices, values, options);
              });
          ENTROGRAD_ASSERT_OK_AND_ASSIGN(
              EncodedPayload sparse_auto,
              EncodeSparse(numel, indices, values, automatic));
          EXPECT_EQ(sparse_auto.index_encoding, sparse_best.encoding);
          EXPECT_EQ(sparse_auto.WireBytes(), sparse_best.wire_bytes);

          // EncodeDense with explicit sparse encodings sends the nonzeros,
          // so its minimum is the same; auto must find it too.
          const Smallest dense_best =
              SmallestExplicit(type, [&](const EncodeOptions& options) {
                return EncodeDense(dense, options);
              });
          ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload dense_auto,
                                         EncodeDense(dense, automatic));
          EXPECT_EQ(dense_auto.index_encoding, dense_best.encoding);
          EXPECT_EQ(dense_auto.WireBytes(), dense_best.wire_bytes);
          EXPECT_EQ(dense_auto.index_encoding, sparse_auto.index_encoding);
          EXPECT_EQ(dense_auto.index_bytes, sparse_auto.index_bytes);
          EXPECT_EQ(dense_auto.value_bytes, sparse_auto.value_bytes);
          ++seen[static_cast<int>(sparse_auto.index_encoding)];

          // Without gap_range, the choice among the older encodings.
          automatic.consider_gap_range = false;
          const Smallest older_best = SmallestExplicit(
              type,
              [&](const EncodeOptions& options) {
                return EncodeSparse(numel, indices, values, options);
              },
              /*consider_gap_range=*/false);
          ENTROGRAD_ASSERT_OK_AND_ASSIGN(
              EncodedPayload older_auto,
              EncodeSparse(numel, indices, values, automatic));
          EXPECT_EQ(older_auto.index_encoding, older_best.encoding);
          ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload older_dense_auto,
                                         EncodeDense(dense, automatic));
          EXPECT_EQ(older_dense_auto.index_encoding, older_best.encoding);
        }
      }
    }
  }
  // The sweep is only meaningful if every encoding wins somewhere.
  for (IndexEncoding encoding : kAllIndexEncodings) {
    EXPECT_GT(seen[static_cast<int>(encoding)], 0)
        << IndexEncodingName(encoding) << " never chosen";
  }
}

IndexEncoding AutoSparse(uint64_t numel, std::vector<uint32_t> indices,
                         ValueType type) {
  std::vector<float> values(indices.size(), 1.0f);
  EncodeOptions options;
  options.value_type = type;
  absl::StatusOr<EncodedPayload> payload =
      EncodeSparse(numel, indices, values, options);
  EXPECT_THAT(payload, testing::IsOk());
  return payload.ok() ? payload->index_encoding : IndexEncoding::kRawU32;
}

TEST(EncodingChoiceTest, HandPickedTies) {
  // count 0: raw 0 == varint 0 < bitmap 1 < dense 32 -> raw (earlier).
  EXPECT_EQ(AutoSparse(8, {}, ValueType::kF32), IndexEncoding::kRawU32);
  // numel 16, {0, 1}: varint 2 == bitmap 2 < raw 8 -> varint (earlier).
  EXPECT_EQ(AutoSparse(16, {0, 1}, ValueType::kF32),
            IndexEncoding::kDeltaVarint);
  // numel 16 f16, 15 indices: bitmap 2 + 30 == dense 32 -> bitmap.
  EXPECT_EQ(AutoSparse(16, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
                       ValueType::kF16),
            IndexEncoding::kBitmap);
  // numel 8 f32, all 8: dense 32 < bitmap 1 + 32.
  EXPECT_EQ(AutoSparse(8, {0, 1, 2, 3, 4, 5, 6, 7}, ValueType::kF32),
            IndexEncoding::kDense);
  // numel 1000, {0, 500}: varint 0 and 499 -> 1 + 2 = 3 < raw 8 < bitmap 125.
  EXPECT_EQ(AutoSparse(1000, {0, 500}, ValueType::kF32),
            IndexEncoding::kDeltaVarint);
  // numel 2^32-1, {0, 2^32-2}: varint 1 + 5 = 6 < raw 8.
  EXPECT_EQ(AutoSparse(kMaxPayloadNumel, {0, 4294967294u}, ValueType::kF32),
            IndexEncoding::kDeltaVarint);
  // One index at the far end: varint 5 > raw 4.
  EXPECT_EQ(AutoSparse(kMaxPayloadNumel, {4294967294u}, ValueType::kF32),
            IndexEncoding::kRawU32);
}

TEST(EncodingChoiceTest, AllZeroDenseGoesSparseWithCountZero) {
  const std::vector<float> zeros(1000, 0.0f);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload, EncodeDense(zeros));
  EXPECT_EQ(payload.index_encoding, IndexEncoding::kRawU32);
  EXPECT_EQ(payload.count, 0u);
  EXPECT_EQ(payload.numel, 1000u);
  EXPECT_EQ(payload.WireBytes(), 0);
  EXPECT_THAT(DecodePayload(ViewOf(payload)), testing::IsOk());
}

TEST(EncodingChoiceTest, NegativeZeroIsKeptAsNonzero) {
  std::vector<float> values(100, 0.0f);
  values[10] = -0.0f;
  EncodeOptions options;
  options.index_encoding = IndexEncoding::kRawU32;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload,
                                 EncodeDense(values, options));
  EXPECT_EQ(payload.count, 1u);
}

TEST(IndexBytesTest, MatchesFormulas) {
  const std::vector<uint32_t> indices = {0, 5, 6, 300};
  EXPECT_EQ(IndexBytes(IndexEncoding::kRawU32, 400, indices), 16);
  EXPECT_EQ(IndexBytes(IndexEncoding::kDeltaVarint, 400, indices), 5);
  EXPECT_EQ(IndexBytes(IndexEncoding::kBitmap, 400, indices), 50);
  EXPECT_EQ(IndexBytes(IndexEncoding::kBitmap, 401, indices), 51);
  EXPECT_EQ(IndexBytes(IndexEncoding::kDense, 400, indices), 0);
  EXPECT_EQ(IndexBytes(IndexEncoding::kDeltaVarint, 400, {}), 0);
  EXPECT_EQ(IndexBytes(IndexEncoding::kGapRange, 400, {}), 0);
  // gap_range runs its coder: whatever it writes, IndexBytes says.
  EncodeOptions options;
  options.index_encoding = IndexEncoding::kGapRange;
  const std::vector<float> values(indices.size(), 1.0f);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload,
                                 EncodeSparse(400, indices, values, options));
  EXPECT_EQ(IndexBytes(IndexEncoding::kGapRange, 400, indices),
            static_cast<int64_t>(payload.index_bytes.size()));
  EXPECT_GT(payload.index_bytes.size(), 4u);  // 4 code bytes and more
}

TEST(NamesTest, EnumNamesAndSizes) {
  EXPECT_EQ(IndexEncodingName(IndexEncoding::kRawU32), "raw_u32");
  EXPECT_EQ(IndexEncodingName(IndexEncoding::kDeltaVarint), "delta_varint");
  EXPECT_EQ(IndexEncodingName(IndexEncoding::kBitmap), "bitmap");
  EXPECT_EQ(IndexEncodingName(IndexEncoding::kDense), "dense");
  EXPECT_EQ(IndexEncodingName(IndexEncoding::kGapRange), "gap_range");
  EXPECT_EQ(ValueTypeName(ValueType::kF32), "f32");
  EXPECT_EQ(ValueTypeName(ValueType::kF16), "f16");
  EXPECT_EQ(ValueTypeName(ValueType::kBF16), "bf16");
  EXPECT_EQ(ValueTypeName(ValueType::kE5M2), "e5m2");
  EXPECT_EQ(ValueTypeBytes(ValueType::kF32), 4);
  EXPECT_EQ(ValueTypeBytes(ValueType::kF16), 2);
  EXPECT_EQ(ValueTypeBytes(ValueType::kBF16), 2);
  EXPECT_EQ(ValueTypeBytes(ValueType::kE5M2), 1);
  for (ValueType type : kAllValueTypes) {
    absl::StatusOr<ValueType> parsed = ParseValueType(ValueTypeName(type));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, type);
  }
  EXPECT_THAT(ParseValueType("fp16"),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "expected f32, f16, bf16 or e5m2"));
}

}  // namespace
}  // namespace entrograd
