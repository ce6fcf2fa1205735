// ScatterInto: overwrites (never adds) at the decoded indices, writes every
// element for dense payloads, and rejects size mismatches and malformed
// hand-built DecodedPayloads without touching the output.

#include <cstdint>
#include <vector>

#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::absl::StatusCode;
using ::entrograd::testing::StatusIs;
using ::testing::ElementsAre;

TEST(ScatterIntoTest, SparseOverwritesOnlyItsIndices) {
  const std::vector<uint32_t> indices = {1, 4};
  const std::vector<float> values = {10, -20};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload,
                                 EncodeSparse(6, indices, values));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                 DecodePayload(ViewOf(payload)));
  std::vector<float> dense = {7, 7, 7, 7, 7, 7};
  ENTROGRAD_ASSERT_OK(ScatterInto(decoded, absl::MakeSpan(dense)));
  EXPECT_THAT(dense, ElementsAre(7, 10, 7, 7, -20, 7));
}

TEST(ScatterIntoTest, DenseWritesEverything) {
  const std::vector<float> values = {1, 0, -3, 0.5f};
  EncodeOptions options;
  options.index_encoding = IndexEncoding::kDense;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload payload,
                                 EncodeDense(values, options));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                 DecodePayload(ViewOf(payload)));
  ASSERT_TRUE(decoded.dense);
  std::vector<float> dense = {9, 9, 9, 9};
  ENTROGRAD_ASSERT_OK(ScatterInto(decoded, absl::MakeSpan(dense)));
  EXPECT_THAT(dense, ElementsAre(1, 0, -3, 0.5f));
}

TEST(ScatterIntoTest, WrongSizeIsRejected) {
  DecodedPayload decoded;
  decoded.numel = 4;
  decoded.indices = {0};
  decoded.values = {1};
  std::vector<float> short_dense(3, 5.0f);
  EXPECT_THAT(ScatterInto(decoded, absl::MakeSpan(short_dense)),
              StatusIs(StatusCode::kInvalidArgument,
                       "dense: size 3 does not match payload numel 4"));
  EXPECT_THAT(short_dense, ElementsAre(5, 5, 5));
  decoded.dense = true;
  decoded.indices.clear();
  decoded.values = {1, 2, 3, 4};
  std::vector<float> long_dense(5, 5.0f);
  EXPECT_THAT(ScatterInto(decoded, absl::MakeSpan(long_dense)),
              StatusIs(StatusCode::kInvalidArgument,
                       "dense: size 5 does not match payload numel 4"));
}

TEST(ScatterIntoTest, MalformedDecodedPayloadLeavesOutputUntouched) {
  std::vector<float> dense(4, 5.0f);
  DecodedPayload bad_index;
  bad_index.numel = 4;
  bad_index.indices = {0, 4};
  bad_index.values = {1, 2};
  EXPECT_THAT(ScatterInto(bad_index, absl::MakeSpan(dense)),
              StatusIs(StatusCode::kInvalidArgument,
                       "payload: index 4 at position 1 is >= numel 4"));
  EXPECT_THAT(dense, ElementsAre(5, 5, 5, 5));

  DecodedPayload mismatched;
  mismatched.numel = 4;
  mismatched.indices = {0, 1};
  mismatched.values = {1};
  EXPECT_THAT(ScatterInto(mismatched, absl::MakeSpan(dense)),
              StatusIs(StatusCode::kInvalidArgument,
                       "payload: 2 indices but 1 values"));

  DecodedPayload short_dense_values;
  short_dense_values.numel = 4;
  short_dense_values.dense = true;
  short_dense_values.values = {1, 2};
  EXPECT_THAT(ScatterInto(short_dense_values, absl::MakeSpan(dense)),
              StatusIs(StatusCode::kInvalidArgument,
                       "payload: dense with 2 values for numel 4"));
  EXPECT_THAT(dense, ElementsAre(5, 5, 5, 5));
}

}  // namespace
}  // namespace entrograd
