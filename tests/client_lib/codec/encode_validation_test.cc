// EncodeSparse / EncodeDense input validation: every rejected input gets
// INVALID_ARGUMENT naming the field and position.

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "entrograd/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::absl::StatusCode;
using ::entrograd::testing::StatusIs;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(EncodeSparseTest, RejectsBadNumel) {
  EXPECT_THAT(EncodeSparse(0, {}, {}),
              StatusIs(StatusCode::kInvalidArgument, "numel: must not be 0"));
  EXPECT_THAT(EncodeSparse(kMaxPayloadNumel + 1, {}, {}),
              StatusIs(StatusCode::kInvalidArgument,
                       "numel: 4294967296 exceeds kMaxPayloadNumel"));
}

TEST(EncodeSparseTest, RejectsSizeMismatch) {
  const std::vector<uint32_t> indices = {1, 2};
  const std::vector<float> values = {1};
  EXPECT_THAT(EncodeSparse(10, indices, values),
              StatusIs(StatusCode::kInvalidArgument,
                       "indices and values differ in size: 2 vs 1"));
}

TEST(EncodeSparseTest, RejectsBadIndices) {
  const std::vector<float> values = {1, 1, 1};
  EXPECT_THAT(EncodeSparse(10, std::vector<uint32_t>{1, 2, 10}, values),
              StatusIs(StatusCode::kInvalidArgument,
                       "indices: index 10 at position 2 is >= numel 10"));
  EXPECT_THAT(
      EncodeSparse(10, std::vector<uint32_t>{1, 4, 4}, values),
      StatusIs(StatusCode::kInvalidArgument,
               "indices: index 4 at position 2 is not greater than previous "
               "index 4 (repeated)"));
  EXPECT_THAT(
      EncodeSparse(10, std::vector<uint32_t>{5, 4, 6}, values),
      StatusIs(StatusCode::kInvalidArgument,
               "indices: index 4 at position 1 is not greater than previous "
               "index 5 (descending)"));
}

TEST(EncodeSparseTest, RejectsNonFiniteValues) {
  const std::vector<uint32_t> indices = {1, 2, 3};
  for (ValueType type : kAllValueTypes) {
    EncodeOptions options;
    options.value_type = type;
    EXPECT_THAT(
        EncodeSparse(10, indices, std::vector<float>{1, 2, kNaN}, options),
        StatusIs(StatusCode::kInvalidArgument,
                 "values: value at position 2 is NaN"));
    EXPECT_THAT(
        EncodeSparse(10, indices, std::vector<float>{1, -kInf, 3}, options),
        StatusIs(StatusCode::kInvalidArgument,
                 "values: value at position 1 is Inf"));
  }
}

TEST(EncodeSparseTest, RejectsUnknownOptionEnums) {
  EncodeOptions options;
  options.value_type = static_cast<ValueType>(7);
  EXPECT_THAT(EncodeSparse(10, {}, {}, options),
              StatusIs(StatusCode::kInvalidArgument,
                       "options.value_type: unknown value 7"));
  options.value_type = ValueType::kF32;
  options.index_encoding = static_cast<IndexEncoding>(0);
  EXPECT_THAT(EncodeSparse(10, {}, {}, options),
              StatusIs(StatusCode::kInvalidArgument,
                       "options.index_encoding: unknown value 0"));
}

TEST(EncodeDenseTest, RejectsEmptyAndNonFinite) {
  EXPECT_THAT(EncodeDense({}), StatusIs(StatusCode::kInvalidArgument,
                                        "values.size(): must not be 0"));
  const std::vector<float> values = {0, 0, 0, 0, kInf};
  for (std::optional<IndexEncoding> encoding :
       {std::optional<IndexEncoding>(), std::optional(IndexEncoding::kDense),
        std::optional(IndexEncoding::kRawU32)}) {
    EncodeOptions options;
    options.index_encoding = encoding;
    EXPECT_THAT(EncodeDense(values, options),
                StatusIs(StatusCode::kInvalidArgument,
                         "values: value at position 4 is Inf"));
  }
}

TEST(EncodeTest, SaturationIsCountedNotInf) {
  const std::vector<float> values = {1e5f, -1e5f, 1.0f, 3e38f};
  EncodeOptions options;
  options.index_encoding = IndexEncoding::kDense;
  options.value_type = ValueType::kF16;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload f16,
                                 EncodeDense(values, options));
  EXPECT_EQ(f16.saturated_values, 3);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                 DecodePayload(ViewOf(f16)));
  EXPECT_THAT(decoded.values,
              ::testing::ElementsAre(65504.0f, -65504.0f, 1.0f, 65504.0f));

  options.value_type = ValueType::kBF16;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload bf16,
                                 EncodeDense(values, options));
  EXPECT_EQ(bf16.saturated_values, 0);
  const std::vector<float> huge = {std::numeric_limits<float>::max()};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(bf16, EncodeDense(huge, options));
  EXPECT_EQ(bf16.saturated_values, 1);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(decoded, DecodePayload(ViewOf(bf16)));
  EXPECT_EQ(decoded.values[0], Bfloat16ToFloat(0x7F7F));
}

}  // namespace
}  // namespace entrograd
