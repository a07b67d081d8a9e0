// strip_latex_wrappers, as mcqa and string_match apply it to boxed answers. Every expectation
// was checked against CPython 3.12 running the upstream loop (re.fullmatch with re.DOTALL).
#include "python_compat/latex.h"

#include <gtest/gtest.h>

using gym::python_compat::strip_latex_wrappers;

TEST(LatexWrappers, WholeWrappersAreRemovedRepeatedly) {
  EXPECT_EQ(strip_latex_wrappers("\\text{B}"), "B");
  EXPECT_EQ(strip_latex_wrappers("\\text{ \\text{ Pacific\nOcean } }"), "Pacific\nOcean");
  EXPECT_EQ(strip_latex_wrappers("\\text{}"), "");
  EXPECT_EQ(strip_latex_wrappers("\\text{ }"), "");
}

TEST(LatexWrappers, WhitespaceInsideIsPythonWhitespace) {
  EXPECT_EQ(strip_latex_wrappers("\\text{\u3000é\u3000}"), "é");
  EXPECT_EQ(strip_latex_wrappers("\\text{a\x1c}"), "a");  // \s covers U+001C..U+001F
}

TEST(LatexWrappers, OnlyAWrapperAroundTheWholeStringIsRemoved) {
  EXPECT_EQ(strip_latex_wrappers("B"), "B");
  EXPECT_EQ(strip_latex_wrappers("\\text{a} b"), "\\text{a} b");
  EXPECT_EQ(strip_latex_wrappers("x \\text{a}"), "x \\text{a}");
  EXPECT_EQ(strip_latex_wrappers("\\textbf{B}"), "\\textbf{B}");
  // The lazy group still has to reach the final brace: upstream keeps the inner "}\text{".
  EXPECT_EQ(strip_latex_wrappers("\\text{a}\\text{b}"), "a}\\text{b");
}
