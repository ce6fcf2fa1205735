#include "workers/launcher/line_buffer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace entrograd::launcher {
namespace {

TEST(LineBufferTest, SplitsChunksIntoLines) {
  LineBuffer buffer;
  std::string line;
  buffer.Append("{\"event\":");
  EXPECT_FALSE(buffer.NextLine(&line));  // a partial line waits
  buffer.Append("\"start\"}\r\nsecond\n\nthi");
  ASSERT_TRUE(buffer.NextLine(&line));
  EXPECT_EQ(line, "{\"event\":\"start\"}");
  ASSERT_TRUE(buffer.NextLine(&line));
  EXPECT_EQ(line, "second");
  ASSERT_TRUE(buffer.NextLine(&line));
  EXPECT_EQ(line, "");
  EXPECT_FALSE(buffer.NextLine(&line));
  buffer.Append("rd");
  ASSERT_TRUE(buffer.TakeRest(&line));  // end of stream: the rest is a line
  EXPECT_EQ(line, "third");
  EXPECT_FALSE(buffer.TakeRest(&line));
}

TEST(LineBufferTest, CutsOverlongLines) {
  LineBuffer buffer(/*max_line_bytes=*/4);
  std::string line;
  buffer.Append("abcdefghij\nxy\n");
  std::vector<std::string> lines;
  while (buffer.NextLine(&line)) lines.push_back(line);
  EXPECT_THAT(lines, ::testing::ElementsAre("abcd", "efgh", "ij", "xy"));
}

TEST(LineBufferTest, ManySmallAppendsStayCorrect) {
  LineBuffer buffer;
  std::string line;
  std::vector<std::string> lines;
  const std::string text = "line one\nline two\nline three\n";
  for (int round = 0; round < 100; ++round) {
    for (char c : text) {
      buffer.Append(std::string(1, c));
      while (buffer.NextLine(&line)) lines.push_back(line);
    }
  }
  ASSERT_EQ(lines.size(), 300u);
  EXPECT_EQ(lines[299], "line three");
}

}  // namespace
}  // namespace entrograd::launcher
