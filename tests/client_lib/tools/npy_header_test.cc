#include "entrograd_cli/npy_header.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "test_files.h"

namespace entrograd::cli {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ParseNpyPreambleTest, ReadsVersionOneWithTwoByteLength) {
  const std::string bytes = testing::NpyBytes("{}", "", /*major=*/1);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(NpyPreamble preamble, ParseNpyPreamble(bytes));
  EXPECT_EQ(preamble.major_version, 1);
  EXPECT_EQ(preamble.minor_version, 0);
  EXPECT_EQ(preamble.header_offset, 10u);
  EXPECT_EQ(preamble.header_length, 54u);  // 10 + 54 = 64
}

TEST(ParseNpyPreambleTest, ReadsVersionsTwoAndThreeWithFourByteLength) {
  for (int major : {2, 3}) {
    const std::string bytes = testing::NpyBytes("{}", "", major);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(NpyPreamble preamble,
                                   ParseNpyPreamble(bytes));
    EXPECT_EQ(preamble.major_version, major);
    EXPECT_EQ(preamble.header_offset, 12u);
    EXPECT_EQ(preamble.header_length, 52u);
  }
}

TEST(ParseNpyPreambleTest, ReadsALengthAbove64KiBInVersionTwo) {
  // 0x00010040 = 65600, too long for version 1.0's two bytes.
  const std::string bytes("\x93NUMPY\x02\x00\x40\x00\x01\x00", 12);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(NpyPreamble preamble, ParseNpyPreamble(bytes));
  EXPECT_EQ(preamble.header_length, 65600u);
}

TEST(ParseNpyPreambleTest, RejectsBadMagic) {
  EXPECT_THAT(ParseNpyPreamble("PK\x03\x04 not numpy"),
              StatusIs(absl::StatusCode::kInvalidArgument, "magic"));
  EXPECT_THAT(ParseNpyPreamble(""),
              StatusIs(absl::StatusCode::kInvalidArgument, "magic"));
  EXPECT_THAT(ParseNpyPreamble("\x93NUMP"),
              StatusIs(absl::StatusCode::kInvalidArgument, "magic"));
}

TEST(ParseNpyPreambleTest, RejectsUnsupportedVersions) {
  EXPECT_THAT(ParseNpyPreamble(std::string("\x93NUMPY\x04\x00\x10\x00", 10)),
              StatusIs(absl::StatusCode::kInvalidArgument, "version 4.0"));
  EXPECT_THAT(ParseNpyPreamble(std::string("\x93NUMPY\x01\x01\x10\x00", 10)),
              StatusIs(absl::StatusCode::kInvalidArgument, "version 1.1"));
  EXPECT_THAT(ParseNpyPreamble(std::string("\x93NUMPY\x00\x00\x10\x00", 10)),
              StatusIs(absl::StatusCode::kInvalidArgument, "version 0.0"));
}

TEST(ParseNpyPreambleTest, RejectsTruncatedPreambles) {
  EXPECT_THAT(ParseNpyPreamble(std::string("\x93NUMPY\x01", 7)),
              StatusIs(absl::StatusCode::kInvalidArgument, "version bytes"));
  EXPECT_THAT(ParseNpyPreamble(std::string("\x93NUMPY\x01\x00\x10", 9)),
              StatusIs(absl::StatusCode::kInvalidArgument, "header length"));
  EXPECT_THAT(ParseNpyPreamble(std::string("\x93NUMPY\x02\x00\x10\x00", 10)),
              StatusIs(absl::StatusCode::kInvalidArgument, "header length"));
}

TEST(ParseNpyPreambleTest, RejectsHugeHeaderLengths) {
  EXPECT_THAT(
      ParseNpyPreamble(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12)),
      StatusIs(absl::StatusCode::kInvalidArgument, "header length 4294967295"));
}

TEST(ParseNpyHeaderDictTest, ReadsWhatNumpyWrites) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      NpyHeader header,
      ParseNpyHeaderDict("{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (3, 4), }            \n"));
  EXPECT_EQ(header.descr, "<f4");
  EXPECT_FALSE(header.fortran_order);
  EXPECT_THAT(header.shape, ElementsAre(3, 4));
}

TEST(ParseNpyHeaderDictTest, ReadsEveryShapeSpelling) {
  struct Case {
    const char* shape;
    std::vector<uint64_t> expected;
  };
  const Case cases[] = {
      {"()", {}},
      {"(5,)", {5}},
      {"(5)", {5}},
      {"(2, 3, 4)", {2, 3, 4}},
      {"(2,3,4,)", {2, 3, 4}},
      {"( 7 , 8 )", {7, 8}},
      {"(3L, 4L)", {3, 4}},  // Python 2 long literals
      {"(0, 3)", {0, 3}},
      {"(18446744073709551615,)", {18446744073709551615ull}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        NpyHeader header, ParseNpyHeaderDict(testing::Float32Dict(c.shape)));
    EXPECT_EQ(header.shape, c.expected);
  }
}

TEST(ParseNpyHeaderDictTest, AcceptsAnyKeyOrderDoubleQuotesAndNoTrailingComma) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      NpyHeader header,
      ParseNpyHeaderDict(
          "{\"shape\": (), \"fortran_order\": True, \"descr\": \">f8\"}"));
  EXPECT_EQ(header.descr, ">f8");
  EXPECT_TRUE(header.fortran_order);
  EXPECT_THAT(header.shape, IsEmpty());
}

TEST(ParseNpyHeaderDictTest, RejectsMalformedDictionaries) {
  struct Case {
    const char* dict;
    const char* problem;
  };
  const Case cases[] = {
      {"", "expected '{'"},
      {"descr", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'shape': (1,), 'fortran_order': False}", "missing key 'descr'"},
      {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (1,)}",
       "'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
       "unknown key 'x'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}",
       "structured dtype"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
       "expected '}'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}",
       "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}",
       "True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}",
       "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
       "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}",
       "expected ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
       "expected '('"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,",
       "end of the header"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (18446744073709551616,)}",
       "does not fit in 64 bits"},
      {"{'descr': 'a\\'b', 'fortran_order': False, 'shape': (1,)}", "escapes"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x",
       "unexpected text after the dictionary"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",
       "expected '}'"},
      {"{descr: '<f4'}", "expected a quoted string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dict);
    EXPECT_THAT(ParseNpyHeaderDict(c.dict),
                StatusIs(absl::StatusCode::kInvalidArgument, c.problem));
  }
}

TEST(ParseNpyHeaderDictTest, ErrorsStartWithBadNpyHeaderAndGiveTheOffset) {
  EXPECT_THAT(ParseNpyHeaderDict("{'descr' '<f4'}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bad npy header: expected ':', found ''' (at byte 9"));
}

TEST(ParseNpyHeaderDictTest, SurvivesEveryPrefixAndBinaryGarbage) {
  const std::string full = testing::Float32Dict("(2, 3)");
  for (size_t length = 0; length < full.size(); ++length) {
    // Only checks that nothing crashes or reads out of bounds (ASan).
    (void)ParseNpyHeaderDict(full.substr(0, length));
  }
  std::string garbage;
  for (int i = 0; i < 256; ++i) garbage += static_cast<char>(i);
  EXPECT_THAT(ParseNpyHeaderDict(garbage),
              StatusIs(absl::StatusCode::kInvalidArgument, "byte 0x01"));
}

}  // namespace
}  // namespace entrograd::cli
