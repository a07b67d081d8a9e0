// Python semantics of the verifiers (environments.md 1.3). Every expectation was checked
// against CPython 3.12.
#include "servers/python_compat.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace json = boost::json;
using namespace gym::servers;

using Strings = std::vector<std::string>;

// ---- str -------------------------------------------------------------------------------------

TEST(PythonStr, IsspaceFollowsCategoryAndBidiClass) {
  for (char32_t c : {U' ', U'\t', U'\n', U'\v', U'\f', U'\r', U'\x1c', U'\x1f', U'\x85',
                     U'\u00a0', U'\u2028', U'\u2029', U'\u3000'})
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
  EXPECT_EQ(py_splitlines("a\x1c" "b\u2028" "c\r\nd\n"), (Strings{"a", "b", "c", "d"}));
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
  for (const char* s : {"", " ", "1_", "_1", "1__0", "1_.5", "1._5", "1e", "e5", ".", "0x10",
                        "1 2", "12abc", "in_f", "nan(1)", "1,5", "$5", "5%", "Paris"})
    EXPECT_FALSE(py_float(s).has_value()) << s;
}

// ---- re --------------------------------------------------------------------------------------

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
  EXPECT_TRUE(PyRegex(R"(\s)").fullmatch("\x1c"));     // Python's \s covers U+001C..U+001F
  EXPECT_TRUE(PyRegex(R"([\s]+)").fullmatch("\x1d "));  // inside a set too
  EXPECT_EQ(PyRegex(R"(\S+)").findall("a\x1c" "b"), (Strings{"a", "b"}));
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

// ---- json.loads ------------------------------------------------------------------------------

TEST(PythonJson, ParsesPythonExtensions) {
  auto v = py_json_loads(R"( {"a": NaN, "b": [Infinity, -Infinity], "c": 1.0, "d": -0} )");
  const auto& o = v.get_object();
  EXPECT_TRUE(std::isnan(o.at("a").get_double()));
  EXPECT_EQ(o.at("b").get_array()[0].get_double(), INFINITY);
  EXPECT_EQ(o.at("b").get_array()[1].get_double(), -INFINITY);
  EXPECT_TRUE(o.at("c").is_double());
  EXPECT_TRUE(o.at("d").is_int64());
}

TEST(PythonJson, IntegersAreExactAndDuplicateKeysKeepTheLast) {
  auto v = py_json_loads(R"({"a":1,"b":2,"a":9007199254740993})");
  const auto& o = v.get_object();
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o.begin()->key(), "a");  // first position, last value
  EXPECT_EQ(o.at("a").get_int64(), 9007199254740993);
  EXPECT_EQ(py_json_loads("18446744073709551615").get_uint64(), 18446744073709551615ull);
  EXPECT_EQ(py_json_loads("-9223372036854775808").get_int64(), INT64_MIN);
  EXPECT_TRUE(py_json_loads("1e2").is_double());
}

TEST(PythonJson, StringsAndEscapes) {
  EXPECT_EQ(py_json_loads(R"("a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00")").get_string(),
            "a\"\\/\b\f\n\r\t\u00e9\U0001F600");
  EXPECT_EQ(py_json_loads(R"("\ud800x")").get_string(), "\uFFFDx");  // lone surrogate
  EXPECT_EQ(py_json_loads("\"ü\"").get_string(), "ü");
}

TEST(PythonJson, ErrorsCarryPythonMessages) {
  auto message = [](std::string_view text) {
    try {
      py_json_loads(text);
    } catch (const JSONDecodeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("[1,"), "Expecting value: line 1 column 4 (char 3)");
  EXPECT_EQ(message(R"({"a" 1})"), "Expecting ':' delimiter: line 1 column 6 (char 5)");
  EXPECT_EQ(message("  \n x"), "Expecting value: line 2 column 2 (char 4)");
  EXPECT_EQ(message("\"é\" 1"), "Extra data: line 1 column 5 (char 4)");
  EXPECT_EQ(message(""), "Expecting value: line 1 column 1 (char 0)");
  EXPECT_EQ(message("{'a': 1}"),
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)");
  EXPECT_EQ(message("\"abc"), "Unterminated string starting at: line 1 column 1 (char 0)");
  EXPECT_EQ(message("\"a\nb\""), "Invalid control character at: line 1 column 3 (char 2)");
  EXPECT_EQ(message(R"("\x")"), "Invalid \\escape: line 1 column 2 (char 1)");
  EXPECT_EQ(message("[1,]"), "Expecting value: line 1 column 4 (char 3)");
  EXPECT_EQ(message("-"), "Expecting value: line 1 column 1 (char 0)");
  EXPECT_EQ(message("01"), "Extra data: line 1 column 2 (char 1)");
  EXPECT_EQ(message("\xEF\xBB\xBF{}"),
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)");
}

TEST(PythonJson, DeepNestingIsARecursionError) {
  std::string deep(2000, '[');
  EXPECT_THROW(py_json_loads(deep), RecursionError);
}

// ---- == --------------------------------------------------------------------------------------

TEST(PythonEqual, NumbersCompareByValue) {
  EXPECT_TRUE(py_equal(json::value(1), json::value(1.0)));
  EXPECT_TRUE(py_equal(json::value(true), json::value(1)));
  EXPECT_TRUE(py_equal(json::value(false), json::value(0.0)));
  EXPECT_FALSE(py_equal(json::value(true), json::value(2)));
  EXPECT_FALSE(py_equal(json::value("14"), json::value(14)));
  EXPECT_FALSE(py_equal(json::value(nullptr), json::value(0)));
  EXPECT_FALSE(py_equal(json::value(NAN), json::value(NAN)));
  // Exact int/float comparison: 2**53 + 1 != 2.0**53.
  EXPECT_FALSE(py_equal(json::value(std::int64_t{9007199254740993}),
                        json::value(9007199254740992.0)));
  EXPECT_FALSE(py_equal(json::value(std::uint64_t{18446744073709551615ull}),
                        json::value(18446744073709551616.0)));  // 2**64 - 1 != 2.0**64
  EXPECT_TRUE(py_equal(json::value(std::uint64_t{5}), json::value(5)));
  EXPECT_FALSE(py_equal(json::value(std::uint64_t{18446744073709551615ull}), json::value(-1)));
}

TEST(PythonEqual, ContainersCompareStructurally) {
  EXPECT_TRUE(py_equal(json::parse(R"({"a":1,"b":[1,2.0]})"),
                       json::parse(R"({"b":[1.0,2],"a":true})")));
  EXPECT_FALSE(py_equal(json::parse("[1,2]"), json::parse("[2,1]")));
  EXPECT_FALSE(py_equal(json::parse(R"({"a":1})"), json::parse(R"({"a":1,"b":2})")));
  EXPECT_FALSE(py_equal(json::parse("[]"), json::parse("{}")));
  EXPECT_TRUE(py_equal(json::parse(R"({"symbol":"ETH/BTC","time_period":14})"),
                       json::parse(R"({"time_period":14.0,"symbol":"ETH/BTC"})")));
  EXPECT_FALSE(py_equal(json::parse(R"({"time_period":"14"})"),
                        json::parse(R"({"time_period":14})")));
}

TEST(PythonEqual, TypeNamesAndHashability) {
  EXPECT_EQ(py_type_name(json::value(nullptr)), "NoneType");
  EXPECT_EQ(py_type_name(json::value(1.5)), "float");
  EXPECT_EQ(py_type_name(json::value(std::uint64_t{1})), "int");
  EXPECT_EQ(py_type_name(json::array{}), "list");
  EXPECT_TRUE(py_hashable(json::value("x")));
  EXPECT_FALSE(py_hashable(json::object{}));
}
