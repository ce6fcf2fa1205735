// EncodeMerged lets the codec choose: a merged update that is smaller dense
// goes dense, a sparse one stays sparse, and both decode to the same bits.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "aggregator/merge/sparse_merge.h"
#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "merge_test_util.h"
#include "support/status_matchers.h"

namespace entrograd::aggregator {
namespace {

using ::entrograd::testing::StatusIs;
using testing::BitsOf;

// Two ranks over 1000 elements, each carrying every `stride`-th index.
MergedUpdate MergeStrided(int stride) {
  std::vector<uint32_t> indices;
  std::vector<float> values;
  for (uint32_t i = 0; i < 1000; i += stride) {
    indices.push_back(i);
    values.push_back(0.25f * static_cast<float>(i) - 17.0f);
  }
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(indices, values),
      RankContribution::Sparse(indices, values)};
  MergedUpdate merged;
  SparseMerger merger;
  EXPECT_TRUE(merger.Merge(1000, 2, ranks, &merged).ok());
  return merged;
}

std::vector<float> Densify(const MergedUpdate& merged) {
  std::vector<float> dense(merged.numel, 0.0f);
  for (size_t j = 0; j < merged.indices.size(); ++j) {
    dense[merged.indices[j]] = merged.values[j];
  }
  return dense;
}

void ExpectRoundTrips(const EncodedPayload& payload,
                      const MergedUpdate& merged) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                 DecodePayload(ViewOf(payload)));
  std::vector<float> dense(merged.numel, 0.0f);
  ENTROGRAD_ASSERT_OK(ScatterInto(decoded, absl::MakeSpan(dense)));
  EXPECT_EQ(BitsOf(dense), BitsOf(Densify(merged)));
}

TEST(EncodeMergedTest, MostIndicesSetComesBackDense) {
  const MergedUpdate merged = MergeStrided(1);  // every index but all kept
  ASSERT_EQ(merged.indices.size(), 1000u);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload, EncodeMerged(merged));
  EXPECT_EQ(payload.index_encoding, IndexEncoding::kDense);
  EXPECT_EQ(payload.count, 1000u);
  ExpectRoundTrips(payload, merged);
}

TEST(EncodeMergedTest, FewIndicesStaySparse) {
  const MergedUpdate merged = MergeStrided(50);
  ASSERT_EQ(merged.indices.size(), 20u);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload, EncodeMerged(merged));
  EXPECT_NE(payload.index_encoding, IndexEncoding::kDense);
  EXPECT_EQ(payload.count, 20u);
  ExpectRoundTrips(payload, merged);
}

TEST(EncodeMergedTest, ExplicitEncodingIsHonoured) {
  const MergedUpdate merged = MergeStrided(1);
  EncodeOptions options;
  options.index_encoding = IndexEncoding::kRawU32;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload,
                                 EncodeMerged(merged, options));
  EXPECT_EQ(payload.index_encoding, IndexEncoding::kRawU32);
  ExpectRoundTrips(payload, merged);
}

TEST(EncodeMergedTest, EmptyMergeEncodes) {
  MergedUpdate merged;
  merged.numel = 10;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload, EncodeMerged(merged));
  EXPECT_EQ(payload.count, 0u);
}

TEST(EncodeMergedTest, HandBuiltBrokenUpdateIsRejected) {
  MergedUpdate merged;
  merged.numel = 10;
  merged.indices = {4, 2};
  merged.values = {1.0f, 1.0f};
  EXPECT_THAT(EncodeMerged(merged),
              StatusIs(absl::StatusCode::kInvalidArgument, "position 1"));
}

}  // namespace
}  // namespace entrograd::aggregator
