#include "workers/link_emulation/link_rate.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::link_emulation {
namespace {

using ::entrograd::testing::StatusIs;

TEST(ParseLinkRateTest, AcceptsUnitsAndFractions) {
  struct Case {
    const char* text;
    int64_t bits_per_second;
  };
  for (const Case& c :
       {Case{"100mbit", 100'000'000}, Case{"1gbit", 1'000'000'000},
        Case{"2.5gbit", 2'500'000'000}, Case{"10gbit", 10'000'000'000},
        Case{"64kbit", 64'000}, Case{"1.5Mbit", 1'500'000},
        Case{"1000gbit", 1'000'000'000'000}}) {
    SCOPED_TRACE(c.text);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(const LinkRate rate, ParseLinkRate(c.text));
    EXPECT_EQ(rate.bits_per_second, c.bits_per_second);
    EXPECT_EQ(rate.text, c.text);
    EXPECT_FALSE(rate.unlimited());
  }
}

TEST(ParseLinkRateTest, UnlimitedHasNoRate) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const LinkRate rate,
                                 ParseLinkRate("unlimited"));
  EXPECT_EQ(rate.bits_per_second, 0);
  EXPECT_EQ(rate.text, "unlimited");
  EXPECT_TRUE(rate.unlimited());
}

TEST(ParseLinkRateTest, RejectsOtherFormsNamingTheText) {
  for (const char* text :
       {"", "1g", "100", "mbit", "fast", "-1gbit", "+1gbit", "1e3mbit",
        "infgbit", "1.gbit", ".5gbit", "1 gbit", " 1gbit", "1gbit ", "0gbit",
        "0.0001kbit", "1001gbit", "1gbps", "1gibit"}) {
    SCOPED_TRACE(text);
    const absl::StatusOr<LinkRate> rate = ParseLinkRate(text);
    EXPECT_THAT(rate, StatusIs(absl::StatusCode::kInvalidArgument,
                               std::string("\"") + text + "\""));
    EXPECT_THAT(rate, StatusIs(absl::StatusCode::kInvalidArgument,
                               "\"unlimited\" or a number with kbit, mbit or "
                               "gbit"));
  }
}

}  // namespace
}  // namespace entrograd::link_emulation
