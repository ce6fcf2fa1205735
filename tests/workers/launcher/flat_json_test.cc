#include "workers/launcher/flat_json.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::launcher {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::HasSubstr;

TEST(FlatJsonTest, ParsesEveryScalarType) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      FlatJsonObject object,
      ParseFlatJsonObject(R"( {"s":"a\"b\\c\n\u00e9\ud83d\ude00", "n":-1.5e3,)"
                          R"( "i":42, "t":true, "f":false, "z":null} )"));
  EXPECT_EQ(object["s"].type, JsonValue::Type::kString);
  EXPECT_EQ(object["s"].string, "a\"b\\c\n\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(object["n"].number, -1500);
  EXPECT_EQ(object["i"].number, 42);
  EXPECT_TRUE(object["t"].boolean);
  EXPECT_EQ(object["f"].type, JsonValue::Type::kBool);
  EXPECT_FALSE(object["f"].boolean);
  EXPECT_EQ(object["z"].type, JsonValue::Type::kNull);
}

TEST(FlatJsonTest, SkipsNestedValuesButKeepsTheirKeys) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      FlatJsonObject object,
      ParseFlatJsonObject(R"({"a":[1,{"b":[]},"x"],"c":{"d":{}},"e":7})"));
  EXPECT_EQ(object["a"].type, JsonValue::Type::kNested);
  EXPECT_EQ(object["c"].type, JsonValue::Type::kNested);
  EXPECT_EQ(object["e"].number, 7);
}

TEST(FlatJsonTest, AcceptsNonFiniteNumbersWritersProduce) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      FlatJsonObject object,
      ParseFlatJsonObject(R"({"a":NaN,"b":Infinity,"c":-Infinity})"));
  EXPECT_TRUE(std::isnan(object["a"].number));
  EXPECT_EQ(object["b"].number, INFINITY);
  EXPECT_EQ(object["c"].number, -INFINITY);
}

TEST(FlatJsonTest, RejectsGarbageAndTruncatedInput) {
  for (const char* bad :
       {"", "garbage", "[1,2]", "{", R"({"a":)", R"({"a":1)", R"({"a":1,})",
        R"({"a" 1})", R"({a:1})", R"({"a":01})", R"({"a":1.})", R"({"a":+1})",
        R"({"a":"\x"})", R"({"a":"unterminated)", R"({"a":1} trailing)",
        R"({"a":tru})", "{\"a\":\"tab\there\"}"}) {
    EXPECT_THAT(ParseFlatJsonObject(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "JSON"))
        << bad;
  }
  EXPECT_THAT(ParseFlatJsonObject(R"({"event":"step","loss":0.5)"),
              StatusIs(absl::StatusCode::kInvalidArgument, "truncated"));
}

TEST(FlatJsonTest, BoundsNesting) {
  std::string deep =
      R"({"a":)" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_THAT(ParseFlatJsonObject(deep),
              StatusIs(absl::StatusCode::kInvalidArgument, "nesting"));
}

TEST(FlatJsonTest, WriterRoundTripsThroughTheParser) {
  const std::string text = JsonObjectWriter()
                               .Add("name", "quote\" and \\ and\nnewline")
                               .Add("count", int64_t{123456789012})
                               .Add("ratio", 0.1)
                               .Add("small", 1e-300)
                               .Add("flag", true)
                               .Add("nan", std::nan(""))
                               .AddNull("none")
                               .Finish();
  EXPECT_THAT(text, HasSubstr("\"count\": 123456789012"));
  EXPECT_THAT(text, HasSubstr("\"ratio\": 0.1,"));
  EXPECT_THAT(text, HasSubstr("\"nan\": null"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FlatJsonObject object,
                                 ParseFlatJsonObject(text));
  EXPECT_EQ(object["name"].string, "quote\" and \\ and\nnewline");
  EXPECT_EQ(object["count"].number, 123456789012.0);
  EXPECT_EQ(object["ratio"].number, 0.1);
  EXPECT_EQ(object["small"].number, 1e-300);
  EXPECT_TRUE(object["flag"].boolean);
  EXPECT_EQ(object["none"].type, JsonValue::Type::kNull);
}

TEST(FlatJsonTest, NumbersAreShortAndExact) {
  EXPECT_EQ(JsonNumber(3), "3");
  EXPECT_EQ(JsonNumber(-0.25), "-0.25");
  EXPECT_EQ(JsonNumber(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(JsonNumber(INFINITY), "null");
  EXPECT_EQ(JsonQuote(std::string("a\x01", 2)), "\"a\\u0001\"");
}

}  // namespace
}  // namespace entrograd::launcher
