#pragma once
// Python's html.unescape (bunsenbench_chemistry_mcq normalises option texts with it).
//
// Thread safety: reentrant.
#include <string>
#include <string_view>

namespace gym::python_compat {

// html.unescape(s): every `&name;`, `&#NNN;` and `&#xHHH;` reference becomes its character, as
// the HTML standard decodes them. Named references use the standard's table, a name without
// its ';' resolves to the longest known prefix ("&ampx" -> "&x", "&notit;" -> "¬it;"), unknown
// names stay as written; numeric ones take the standard's replacements (`&#128;` -> "€",
// `&#0;`, surrogates and values above U+10FFFF -> U+FFFD, other non-characters and controls ->
// nothing). Text without '&' is returned unchanged.
std::string py_html_unescape(std::string_view s);

}  // namespace gym::python_compat
