// LogText: untrusted text becomes a bounded, printable log fragment.
#include "aggregator/rounds/log_text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace entrograd::aggregator {
namespace {

bool AllPrintable(const std::string& text) {
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

TEST(LogTextTest, KeepsAShortPrintableIdAsIs) {
  EXPECT_EQ(LogText("job-7.a_b"), "job-7.a_b");
  EXPECT_EQ(LogText(""), "");
}

TEST(LogTextTest, EscapesControlCharactersQuotesAndHighBytes) {
  EXPECT_EQ(LogText(std::string("a\nb\x01\"\\\xff", 7)),
            "a\\x0ab\\x01\\x22\\x5c\\xff");
}

TEST(LogTextTest, CutsAHostileIdAndSaysHowLongItWas) {
  std::string hostile;
  for (int i = 0; i < 10240; ++i) hostile.push_back(static_cast<char>(i % 32));
  const std::string logged = LogText(hostile);
  EXPECT_TRUE(AllPrintable(logged)) << logged;
  // 64 input bytes, each at most 4 escaped characters, and the suffix.
  EXPECT_LE(logged.size(), 64u * 4 + 20);
  EXPECT_THAT(logged, ::testing::EndsWith("...(10240 bytes)"));
  EXPECT_EQ(LogText(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(LogText(std::string(65, 'x')),
            std::string(64, 'x') + "...(65 bytes)");
}

}  // namespace
}  // namespace entrograd::aggregator
