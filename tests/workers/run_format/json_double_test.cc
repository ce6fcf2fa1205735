#include "workers/run_format/json_double.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace entrograd::run_format {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

TEST(JsonDoubleTest, NonFiniteValuesAreTheProtobufStrings) {
  EXPECT_EQ(DumpJson(JsonDouble(std::nan(""))), "\"NaN\"");
  EXPECT_EQ(DumpJson(JsonDouble(kInfinity)), "\"Infinity\"");
  EXPECT_EQ(DumpJson(JsonDouble(-kInfinity)), "\"-Infinity\"");
}

TEST(JsonDoubleTest, FiniteValuesAreShortestNumbersThatReadBack) {
  EXPECT_EQ(DumpJson(JsonDouble(0.1)), "0.1");
  EXPECT_EQ(DumpJson(JsonDouble(0.1 + 0.2)), "0.30000000000000004");
  for (double value : {0.0, -0.0, 1.0, 0.01, 1e-300, 123456789.125,
                       std::numeric_limits<double>::max(),
                       std::numeric_limits<double>::denorm_min()}) {
    const std::optional<double> back =
        DoubleFromJson(Json::parse(DumpJson(JsonDouble(value))));
    ASSERT_TRUE(back.has_value()) << value;
    EXPECT_EQ(*back, value);
    EXPECT_EQ(std::signbit(*back), std::signbit(value)) << value;
  }
}

TEST(JsonDoubleTest, ReadsNumbersAndTheThreeStringsOnly) {
  EXPECT_EQ(DoubleFromJson(Json(42)), 42.0);
  EXPECT_EQ(DoubleFromJson(Json(2.5)), 2.5);
  EXPECT_TRUE(std::isnan(*DoubleFromJson(Json("NaN"))));
  EXPECT_EQ(DoubleFromJson(Json("Infinity")), kInfinity);
  EXPECT_EQ(DoubleFromJson(Json("-Infinity")), -kInfinity);
  for (const Json& other : {Json(nullptr), Json("nan"), Json("inf"),
                            Json("1.5"), Json(true), Json::array()}) {
    EXPECT_FALSE(DoubleFromJson(other).has_value()) << other.dump();
  }
}

TEST(DumpJsonTest, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  EXPECT_EQ(DumpJson(Json("a\xff"
                          "b")),
            "\"a\xef\xbf\xbd"
            "b\"");
  EXPECT_EQ(DumpJson(Json("gr\xc3\xa4"
                          "dient")),
            "\"gr\xc3\xa4"
            "dient\"");
  EXPECT_EQ(DumpJson(Json("q\"\n")), "\"q\\\"\\n\"");
}

}  // namespace
}  // namespace entrograd::run_format
