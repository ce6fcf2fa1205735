// Encode -> DecodePayload round trips for every IndexEncoding x ValueType
// over random sparse and dense vectors: f32 must come back bitwise, f16 and
// bf16 as HalfToFloat(FloatToHalf(v)) / Bfloat16ToFloat(FloatToBfloat16(v)).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/base/casts.h"
#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

// What the receiver must see for `value` sent as `type`; sets *saturated.
float Expected(ValueType type, float value, bool* saturated) {
  switch (type) {
    case ValueType::kF32:
      return value;
    case ValueType::kF16:
      return HalfToFloat(FloatToHalf(value, saturated));
    case ValueType::kBF16:
      return Bfloat16ToFloat(FloatToBfloat16(value, saturated));
    case ValueType::kE5M2:
      return E5M2ToFloat(FloatToE5M2(value, saturated));
  }
  return value;
}

struct SparseVector {
  uint64_t numel = 0;
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

// Values mixing ordinary gradients with the awkward ones: -0, +0, f16
// subnormals and magnitudes that saturate f16.
float RandomValue(std::mt19937* rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  switch ((*rng)() % 10) {
    case 0:
      return -0.0f;
    case 1:
      return 0.0f;
    case 2:
      return normal(*rng) * 1e-6f;  // f16 subnormal range
    case 3:
      return normal(*rng) * 1e6f;  // saturates f16
    default:
      return normal(*rng) * 0.01f;
  }
}

// `count` distinct indices of [0, numel), ascending.
SparseVector RandomSparse(uint64_t numel, uint64_t count, std::mt19937* rng) {
  std::vector<uint32_t> all(numel);
  for (uint64_t i = 0; i < numel; ++i) all[i] = static_cast<uint32_t>(i);
  std::shuffle(all.begin(), all.end(), *rng);
  SparseVector v;
  v.numel = numel;
  v.indices.assign(all.begin(), all.begin() + count);
  std::sort(v.indices.begin(), v.indices.end());
  for (uint64_t j = 0; j < count; ++j) v.values.push_back(RandomValue(rng));
  return v;
}

std::vector<uint64_t> CountsFor(uint64_t numel) {
  std::vector<uint64_t> counts = {0, 1, numel / 2, numel};
  if (numel > 10) counts.push_back(numel / 20);
  if (numel > 1) counts.push_back(numel - 1);
  return counts;
}

constexpr uint64_t kSizes[] = {1, 7, 8, 9, 15, 17, 1000, 1003};
constexpr int kSeeds = 20;

class RoundTripTest
    : public ::testing::TestWithParam<std::tuple<IndexEncoding, ValueType>> {};

TEST_P(RoundTripTest, EncodeSparseDecodes) {
  const auto [encoding, type] = GetParam();
  EncodeOptions options;
  options.index_encoding = encoding;
  options.value_type = type;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937 rng(seed);
    for (uint64_t numel : kSizes) {
      for (uint64_t count : CountsFor(numel)) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " numel "
                                          << numel << " count " << count);
        const SparseVector v = RandomSparse(numel, count, &rng);
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(
            EncodedPayload payload,
            EncodeSparse(v.numel, v.indices, v.values, options));
        EXPECT_EQ(payload.index_encoding, encoding);
        EXPECT_EQ(payload.value_type, type);
        EXPECT_EQ(payload.numel, numel);
        const bool dense = encoding == IndexEncoding::kDense;
        EXPECT_EQ(payload.count, dense ? numel : count);
        EXPECT_EQ(static_cast<int64_t>(payload.index_bytes.size()),
                  IndexBytes(encoding, numel, v.indices));
        EXPECT_EQ(static_cast<int64_t>(payload.value_bytes.size()),
                  static_cast<int64_t>(payload.count) * ValueTypeBytes(type));

        // Deterministic: a second encode gives the same bytes.
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(
            EncodedPayload again,
            EncodeSparse(v.numel, v.indices, v.values, options));
        EXPECT_EQ(again.index_bytes, payload.index_bytes);
        EXPECT_EQ(again.value_bytes, payload.value_bytes);

        ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                       DecodePayload(ViewOf(payload)));
        EXPECT_EQ(decoded.numel, numel);
        EXPECT_EQ(decoded.dense, dense);

        // The dense vector the receiver should reconstruct.
        std::vector<float> want(numel, 0.0f);
        int64_t saturated = 0;
        for (size_t j = 0; j < count; ++j) {
          bool hit = false;
          want[v.indices[j]] = Expected(type, v.values[j], &hit);
          saturated += hit;
        }
        EXPECT_EQ(payload.saturated_values, saturated);
        if (dense) {
          ASSERT_EQ(decoded.values.size(), numel);
          EXPECT_TRUE(decoded.indices.empty());
          for (size_t i = 0; i < numel; ++i) {
            ASSERT_EQ(absl::bit_cast<uint32_t>(decoded.values[i]),
                      absl::bit_cast<uint32_t>(want[i]))
                << "element " << i;
          }
        } else {
          EXPECT_EQ(decoded.indices, v.indices);
          ASSERT_EQ(decoded.values.size(), count);
          for (size_t j = 0; j < count; ++j) {
            ASSERT_EQ(absl::bit_cast<uint32_t>(decoded.values[j]),
                      absl::bit_cast<uint32_t>(want[v.indices[j]]))
                << "position " << j;
          }
        }
      }
    }
  }
}

TEST_P(RoundTripTest, EncodeDenseDecodesAndScatters) {
  const auto [encoding, type] = GetParam();
  EncodeOptions options;
  options.index_encoding = encoding;
  options.value_type = type;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937 rng(1000 + seed);
    for (uint64_t numel : kSizes) {
      for (uint64_t count : CountsFor(numel)) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " numel "
                                          << numel << " nonzeros " << count);
        const SparseVector v = RandomSparse(numel, count, &rng);
        std::vector<float> input(numel, 0.0f);
        for (size_t j = 0; j < count; ++j) input[v.indices[j]] = v.values[j];

        ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload,
                                       EncodeDense(input, options));
        EXPECT_EQ(payload.index_encoding, encoding);
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                       DecodePayload(ViewOf(payload)));
        EXPECT_EQ(decoded.dense, encoding == IndexEncoding::kDense);

        // Dense scatters over a poisoned buffer (every element must be
        // written); sparse over zeros (the omitted +0 elements).
        std::vector<float> got(
            numel, encoding == IndexEncoding::kDense ? 123.0f : 0.0f);
        ENTROGRAD_ASSERT_OK(ScatterInto(decoded, absl::MakeSpan(got)));
        int64_t saturated = 0;
        for (size_t i = 0; i < numel; ++i) {
          bool hit = false;
          const float want = Expected(type, input[i], &hit);
          saturated += hit;
          ASSERT_EQ(absl::bit_cast<uint32_t>(got[i]),
                    absl::bit_cast<uint32_t>(want))
              << "element " << i;
        }
        EXPECT_EQ(payload.saturated_values, saturated);
        if (encoding != IndexEncoding::kDense) {
          // Only +0.0 is omitted; -0.0 travels so f32 is bitwise exact.
          for (size_t j = 0; j < decoded.indices.size(); ++j) {
            EXPECT_NE(absl::bit_cast<uint32_t>(input[decoded.indices[j]]), 0u);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllEncodingsAndTypes, RoundTripTest,
    ::testing::Combine(::testing::ValuesIn(kAllIndexEncodings),
                       ::testing::ValuesIn(kAllValueTypes)),
    [](const auto& info) {
      return std::string(IndexEncodingName(std::get<0>(info.param))) + "_" +
             std::string(ValueTypeName(std::get<1>(info.param)));
    });

TEST(RoundTripTest, LargeGapsAndLastIndex) {
  // Gaps that need every varint length, ending at the largest index.
  const uint64_t numel = kMaxPayloadNumel;
  std::vector<uint32_t> indices = {0, 1};  // gap 0 twice
  for (uint32_t gap : {1u << 7, 1u << 14, 1u << 21, 1u << 28}) {
    indices.push_back(indices.back() + 1 + gap);  // 2, 3, 4, 5-byte varints
  }
  indices.push_back(4294967294u);  // the largest index, a 5-byte gap
  const std::vector<float> values(indices.size(), 1.5f);
  for (IndexEncoding encoding :
       {IndexEncoding::kRawU32, IndexEncoding::kDeltaVarint}) {
    EncodeOptions options;
    options.index_encoding = encoding;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        EncodedPayload payload, EncodeSparse(numel, indices, values, options));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                   DecodePayload(ViewOf(payload)));
    EXPECT_EQ(decoded.indices, indices);
    EXPECT_EQ(decoded.values, values);
  }
}

TEST(RoundTripTest, AutoChoiceRoundTrips) {
  std::mt19937 rng(7);
  for (ValueType type : kAllValueTypes) {
    for (uint64_t numel : kSizes) {
      for (uint64_t count : CountsFor(numel)) {
        const SparseVector v = RandomSparse(numel, count, &rng);
        EncodeOptions options;
        options.value_type = type;
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(
            EncodedPayload payload,
            EncodeSparse(v.numel, v.indices, v.values, options));
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                       DecodePayload(ViewOf(payload)));
        std::vector<float> got(numel, 0.0f);
        ENTROGRAD_ASSERT_OK(ScatterInto(decoded, absl::MakeSpan(got)));
        for (size_t j = 0; j < count; ++j) {
          ASSERT_EQ(
              absl::bit_cast<uint32_t>(got[v.indices[j]]),
              absl::bit_cast<uint32_t>(Expected(type, v.values[j], nullptr)));
        }
      }
    }
  }
}

}  // namespace
}  // namespace entrograd
