#pragma once
// LaTeX answer wrappers as upstream's verifiers remove them (mcqa and string_match: their READMEs
// under environments/), with Python's `re` semantics.
//
// Thread safety: reentrant.
#include <string>

namespace gym::python_compat {

// Removes \text{...} wrappers while the whole string is one: repeatedly replaces `s` by group 1
// of re.fullmatch(r"\\text\{\s*(.*?)\s*\}", s, re.DOTALL). "\text{ \text{B} }" gives "B";
// "x \text{B}" is returned unchanged.
std::string strip_latex_wrappers(std::string s);

}  // namespace gym::python_compat
