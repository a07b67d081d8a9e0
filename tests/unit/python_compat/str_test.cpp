// Python's str methods and float() (docs/reference/python-compat.md). Every expectation was checked
// against CPython 3.12.
#include "python_compat/str.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace gym::python_compat;

using Strings = std::vector<std::string>;

TEST(PythonStr, IsspaceFollowsCategoryAndBidiClass) {
  for (char32_t c : {U' ', U'\t', U'\n', U'\v', U'\f', U'\r', U'\x1c', U'\x1f', U'\x85', U'\u00a0',
                     U'\u2028', U'\u2029', U'\u3000'})
    EXPECT_TRUE(py_isspace(c)) << static_cast<unsigned>(c);
  for (char32_t c : {U'a', U'\u200b', U'\u180e', U'_', U'\0'})
    EXPECT_FALSE(py_isspace(c)) << static_cast<unsigned>(c);
}

TEST(PythonStr, StripUsesUnicodeWhitespace) {
  EXPECT_EQ(py_strip("  \x1c a b\u3000"), "a b");
  EXPECT_EQ(py_lstrip("\u2028 x "), "x ");
  EXPECT_EQ(py_rstrip(" x \u0085"), " x");
  EXPECT_EQ(py_strip(""), "");
  EXPECT_EQ(py_strip(" \n\t "), "");
  EXPECT_EQ(py_strip("é"), "é");
}

TEST(PythonStr, StripCharsTakesASetOfCodePoints) {
  EXPECT_EQ(py_strip_chars("**_`B.`:;\n", "*_` \t\n\r.,;:"), "B");
  EXPECT_EQ(py_rstrip_chars("Paris!?.", ".!?"), "Paris");
  EXPECT_EQ(py_rstrip_chars("...", "."), "");
  EXPECT_EQ(py_strip_chars("ééaé", "é"), "a");
}

TEST(PythonStr, SplitAndCollapse) {
  EXPECT_EQ(py_split("  a\u3000b\x1c c  "), (Strings{"a", "b", "c"}));
  EXPECT_EQ(py_split(""), Strings{});
  EXPECT_EQ(py_split("   "), Strings{});
  EXPECT_EQ(py_collapse_whitespace(" The  Pacific\nOcean "), "The Pacific Ocean");
}

TEST(PythonStr, SplitlinesKnowsEveryBoundary) {
  EXPECT_EQ(py_splitlines("a\x1c"
                          "b\u2028"
                          "c\r\nd\n"),
            (Strings{"a", "b", "c", "d"}));
  EXPECT_EQ(py_splitlines("a\r\rb\v\fc\u0085"), (Strings{"a", "", "b", "", "c"}));
  EXPECT_EQ(py_splitlines(""), Strings{});
  EXPECT_EQ(py_splitlines("\n"), Strings{""});
  EXPECT_EQ(py_splitlines("x"), Strings{"x"});
}

TEST(PythonStr, CaseMappingIsFullUnicode) {
  EXPECT_EQ(py_lower("ΣΑΣ"), "σας");  // final sigma
  EXPECT_EQ(py_lower("İ"), "i\u0307");
  EXPECT_EQ(py_upper("ß"), "SS");
  EXPECT_EQ(py_upper("straße c"), "STRASSE C");
  EXPECT_EQ(py_lower("ÉCOLE"), "école");
}

TEST(PythonStr, NfkcAndIsalpha) {
  EXPECT_EQ(py_nfkc("ﬁ①Ａ²"), "fi1A2");
  EXPECT_TRUE(py_isalpha("E"));
  EXPECT_TRUE(py_isalpha("é"));
  EXPECT_TRUE(py_isalpha("ب"));
  EXPECT_FALSE(py_isalpha(""));
  EXPECT_FALSE(py_isalpha("5"));
  EXPECT_FALSE(py_isalpha("A "));
}

TEST(PythonStr, LenAndCodePoints) {
  EXPECT_EQ(py_len("héllo"), 5u);
  EXPECT_EQ(py_len("😀"), 1u);
  EXPECT_EQ(py_code_points("Hot"), (std::u32string{U'H', U'o', U't'}));
  std::size_t sum = 0;
  for (char32_t c : py_code_points("Blazing")) sum += c;
  EXPECT_EQ(sum, 711u);
}

TEST(PythonStr, Replace) {
  EXPECT_EQ(py_replace("a and b or c", "and", " "), "a   b or c");
  EXPECT_EQ(py_replace("Ｃ", "Ｃ", " C"), " C");
  EXPECT_EQ(py_replace("xxx", "xx", "y"), "yx");
}

TEST(PythonStr, ReprQuotesLikePython) {
  EXPECT_EQ(py_repr("synonym_values"), "'synonym_values'");
  EXPECT_EQ(py_repr("it's"), "\"it's\"");
  EXPECT_EQ(py_repr("a\\b\n"), "'a\\\\b\\n'");
  EXPECT_EQ(py_repr("é\x01"), "'é\\x01'");
}

// ---- float() ---------------------------------------------------------------------------------

TEST(PythonFloat, AcceptsWhatFloatAccepts) {
  EXPECT_EQ(py_float("80"), 80.0);
  EXPECT_EQ(py_float(" 1_000.5 "), 1000.5);
  EXPECT_EQ(py_float("1e1_0"), 1e10);
  EXPECT_EQ(py_float(".5"), 0.5);
  EXPECT_EQ(py_float("5."), 5.0);
  EXPECT_EQ(py_float("+3E-2"), 0.03);
  EXPECT_EQ(py_float("١٢"), 12.0);  // Arabic-Indic digits
  EXPECT_EQ(py_float("\u3000-Inf\n"), -INFINITY);
  EXPECT_EQ(py_float("infinity"), INFINITY);
  EXPECT_TRUE(std::isnan(*py_float("-NaN")));
  EXPECT_EQ(py_float("1e400"), INFINITY);
  EXPECT_EQ(py_float("1e-400"), 0.0);
}

TEST(PythonFloat, RejectsWhatFloatRejects) {
  for (const char* s : {"", " ", "1_", "_1", "1__0", "1_.5", "1._5", "1e", "e5", ".", "0x10", "1 2",
                        "12abc", "in_f", "nan(1)", "1,5", "$5", "5%", "Paris"})
    EXPECT_FALSE(py_float(s).has_value()) << s;
}

// ---- isupper(), unicodedata.category() -------------------------------------------------------

TEST(PythonStr, IsupperNeedsACasedUpperAndNoLowerOrTitle) {
  for (const char* s : {"A", "Ⅳ", "Ⓒ", "AB", "A1", "ΑΒ", "ẞ"}) EXPECT_TRUE(py_isupper(s)) << s;
  for (const char* s : {"ǅ", "a", "1", "", "ß", "Ab"}) EXPECT_FALSE(py_isupper(s)) << s;
}

TEST(PythonStr, UnicodeCategory) {
  EXPECT_EQ(py_unicode_category(U'A'), "Lu");
  EXPECT_EQ(py_unicode_category(U'a'), "Ll");
  EXPECT_EQ(py_unicode_category(U'1'), "Nd");
  EXPECT_EQ(py_unicode_category(U' '), "Zs");
  EXPECT_EQ(py_unicode_category(U'\u2028'), "Zl");
  for (char32_t c : {U'\u200b', U'\u00ad', U'\ufeff', U'\U000E0001'})
    EXPECT_EQ(py_unicode_category(c), "Cf") << static_cast<unsigned>(c);
  EXPECT_EQ(py_unicode_category(U'\u0378'), "Cn");  // unassigned
}
