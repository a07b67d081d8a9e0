// Python's html.unescape (bunsenbench_chemistry_mcq's normalisation). Every expectation was
// checked against CPython 3.11.
#include "python_compat/html.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using gym::python_compat::py_html_unescape;

TEST(PythonHtml, UnescapesAsPython) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"no references", "no references"},
      {"a & b", "a & b"},
      {"&amp;", "&"},
      {"&amp;amp;", "&amp;"},  // one pass
      {"&lt", "<"},            // a name the standard also knows without ';'
      {"&ampx", "&x"},         // the longest known prefix
      {"x&ampé", "x&é"},
      {"&notit;", "¬it;"},
      {"&notin;", "∉"},
      {"&AElig", "Æ"},
      {"&aelig;x", "æx"},
      {"&CounterClockwiseContourIntegral;", "∳"},
      {"&bogus;", "&bogus;"},
      {"&Ω;", "&Ω;"},
      {"&;", "&;"},
      {"&#;", "&#;"},
      {"&#65", "A"},
      {"&#x42;", "B"},
      {"&#128;", "€"},  // the standard's replacements of C1 controls
      {"&#x9F;", "Ÿ"},
      {"&#13;", "\r"},
      {"&#0;", "\uFFFD"},
      {"&#xD800;", "\uFFFD"},
      {"&#x110000;", "\uFFFD"},
      {"&#99999999999999999999;", "\uFFFD"},
      {"&#1;", ""},  // controls and non-characters are dropped
      {"&#xFFFE;", ""},
      {"H&#8322;O", "H₂O"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(py_html_unescape(in), want) << in;
}
