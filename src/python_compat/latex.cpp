#include "python_compat/latex.h"

#include "python_compat/re.h"

namespace gym::python_compat {

std::string strip_latex_wrappers(std::string s) {
  static const PyRegex wrap(R"(\\text\{\s*(.*?)\s*\})", PyRegex::kDotAll);
  while (auto m = wrap.fullmatch(s)) s = std::string(m->group(1));
  return s;
}

}  // namespace gym::python_compat
