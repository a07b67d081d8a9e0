// Python's `re` over PCRE2 (docs/reference/python-compat.md). Every expectation was checked against
// CPython 3.12.
#include "python_compat/re.h"

#include "python_compat/errors.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace gym::python_compat;

using Strings = std::vector<std::string>;

TEST(PythonRegex, SearchFindsTheLeftmostMatch) {
  PyRegex re(R"(\d+)");
  auto m = re.search("ab 12 345");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->group(), "12");
  EXPECT_EQ(m->start(), 3u);
  EXPECT_FALSE(re.search("none"));
  auto later = re.search("ab 12 345", 5);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->group(), "345");
}

TEST(PythonRegex, ClassesAreUnicodeAware) {
  EXPECT_EQ(PyRegex(R"(\w+)").search("--éà_1--")->group(), "éà_1");
  EXPECT_EQ(PyRegex(R"(\d+)").search("x١٢٣")->group(), "١٢٣");
  EXPECT_TRUE(PyRegex(R"(\s)").fullmatch("\u3000"));
  EXPECT_TRUE(PyRegex(R"(\s)").fullmatch("\x1c"));      // Python's \s covers U+001C..U+001F
  EXPECT_TRUE(PyRegex(R"([\s]+)").fullmatch("\x1d "));  // inside a set too
  EXPECT_EQ(PyRegex(R"(\S+)").findall("a\x1c"
                                      "b"),
            (Strings{"a", "b"}));
  EXPECT_TRUE(PyRegex(R"(\bé\b)").search("x é y"));
}

TEST(PythonRegex, DotDollarAndAnchors) {
  EXPECT_TRUE(PyRegex("a$").search("a\n"));  // $ before a final newline
  EXPECT_FALSE(PyRegex("a$").search("a\n\n"));
  EXPECT_FALSE(PyRegex(R"(a\Z)").search("a\n"));  // \Z is the absolute end in Python
  EXPECT_EQ(PyRegex("a.c").search("a\rc a\nc")->group(), "a\rc");
  EXPECT_TRUE(PyRegex("a.c", PyRegex::kDotAll).fullmatch("a\nc"));
  EXPECT_EQ(PyRegex("(?m)^b$").search("a\nb\nc")->start(), 2u);
  EXPECT_FALSE(PyRegex("b").match("ab"));
  EXPECT_TRUE(PyRegex("a|ab").fullmatch("ab"));  // fullmatch backtracks into the alternative
}

TEST(PythonRegex, IgnoreCaseIsUnicode) {
  EXPECT_TRUE(PyRegex("(?i)ÉCOLE").fullmatch("école"));
  EXPECT_TRUE(PyRegex("answer", PyRegex::kIgnoreCase).search("Final ANSWER: x"));
  EXPECT_TRUE(PyRegex("(?i)straße").findall("STRASSE").empty());  // no full case folding
}

TEST(PythonRegex, FindallReturnsTheGroupOrTheMatch) {
  EXPECT_EQ(PyRegex(R"((?i)answer\s*:\s*(.+))").findall("Answer: B\nanswer : C"),
            (Strings{"B", "C"}));
  EXPECT_EQ(PyRegex("[a-c]").findall("xaybz"), (Strings{"a", "b"}));
  EXPECT_EQ(PyRegex("(x)?y").findall("y xy"), (Strings{"", "x"}));  // unset group gives ""
  EXPECT_THROW(PyRegex("(a)(b)").findall("ab"), std::logic_error);
}

TEST(PythonRegex, EmptyMatchesFollowPython37) {
  EXPECT_EQ(PyRegex("a*").findall("baa"), (Strings{"", "aa", ""}));
  EXPECT_EQ(PyRegex("x*").sub("-", "abxd"), "-a-b--d-");
  EXPECT_EQ(PyRegex("x*").sub("-", "xa"), "--a-");
}

TEST(PythonRegex, SubExpandsGroups) {
  EXPECT_EQ(PyRegex(R"((\d+),(\d+))").sub("\\1\\2", "1,234,567 and 8,9"), "1234,567 and 89");
  EXPECT_EQ(PyRegex(R"(cm[²³]?|m[²³]?|kg)").sub("", "5 m² 3kg 2cm"), "5  3 2");
  EXPECT_EQ(PyRegex("(a)").sub("\\\\", "a"), "\\");
}

TEST(PythonRegex, LookaroundAndGroups) {
  PyRegex letter(R"((?<![A-Za-z])([A-Za-z])(?![A-Za-z]))");
  auto all = letter.finditer("A or B, Cd");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].group(1), "B");
  EXPECT_EQ(all[1].start(1), 5u);
  EXPECT_EQ(letter.group_count(), 1u);
  auto last = PyRegex(R"(\b[A-Z]\b(?!.*\b[A-Z]\b))", PyRegex::kDotAll).search("A then\nB ok");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->group(), "B");
  auto m = PyRegex("(x)|(y)").search("y");
  EXPECT_FALSE(m->matched(1));
  EXPECT_TRUE(m->matched(2));
  EXPECT_EQ(m->group(1), "");
}

TEST(PythonRegex, LatexWrapperPatternMatchesAcrossLines) {
  PyRegex wrap(R"(\\text\{\s*(.*?)\s*\})", PyRegex::kDotAll);
  auto m = wrap.fullmatch("\\text{ Pacific\nOcean }");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->group(1), "Pacific\nOcean");
  EXPECT_FALSE(wrap.fullmatch("\\text{a} b"));
}

TEST(PythonRegex, InvalidPatternIsReError) {
  EXPECT_THROW(PyRegex("(unclosed"), PyRegexError);
  EXPECT_THROW(PyRegex("[z-a]"), PyRegexError);
  EXPECT_THROW(PyRegex("*"), PyRegexError);
}
