// Walking UTF-8 by code points, and bytes.decode("utf-8", errors="replace"); the decoding
// expectations were checked against CPython 3.12 except the one marked as a known difference.
#include "python_compat/utf8.h"

#include <gtest/gtest.h>

#include <string>

using namespace gym::python_compat;

TEST(Utf8, WalksCodePointsBothWays) {
  std::string s = "aé😀";
  std::size_t i = 0;
  EXPECT_EQ(next_code_point(s, i), U'a');
  EXPECT_EQ(next_code_point(s, i), U'é');
  EXPECT_EQ(i, 3u);
  EXPECT_EQ(next_code_point(s, i), U'\U0001F600');
  EXPECT_EQ(i, s.size());
  EXPECT_EQ(prev_code_point(s, i), U'\U0001F600');
  EXPECT_EQ(i, 3u);
  std::string bad = "\xff";
  std::size_t j = 0;
  EXPECT_EQ(next_code_point(bad, j), U'\uFFFD');
  EXPECT_EQ(j, 1u);
}

TEST(Utf8, AppendEncodesEveryLength) {
  std::string out;
  for (char32_t c : {U'a', U'é', U'€', U'\U0001F600'}) append_utf8(out, c);
  EXPECT_EQ(out, "aé€😀");
}

TEST(Utf8, ReplaceInvalidDecodesAsPython) {
  EXPECT_EQ(utf8_replace_invalid("é😀 ok"), "é😀 ok");
  EXPECT_EQ(utf8_replace_invalid("a\xff"
                                 "b"),
            "a\uFFFD"
            "b");
  EXPECT_EQ(utf8_replace_invalid("\xed\xa0\x80"), "\uFFFD\uFFFD\uFFFD");            // a surrogate
  EXPECT_EQ(utf8_replace_invalid("\xc0\xaf"), "\uFFFD\uFFFD");                      // overlong "/"
  EXPECT_EQ(utf8_replace_invalid("\xf4\x90\x80\x80"), "\uFFFD\uFFFD\uFFFD\uFFFD");  // > U+10FFFF
}

TEST(Utf8, ReplaceInvalidTruncatedSequenceIsAKnownDifference) {
  // Python writes one U+FFFD for the truncated sequence (docs/reference/python-compat.md).
  EXPECT_EQ(utf8_replace_invalid("\xe2\x82x"), "\uFFFD\uFFFDx");
}
