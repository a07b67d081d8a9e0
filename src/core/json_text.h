#pragma once
// JSON text exactly as NeMo Gym renders it (runtime.md 4.1 and R7): compact separators,
// non-ASCII characters unescaped, floats in Python repr form, non-finite floats as null.
#include <boost/json/value.hpp>

#include <string>

namespace gym::core {

// Appends the rendering of `v` to `out`.
void render_json(const boost::json::value& v, std::string& out);
std::string render_json(const boost::json::value& v);

// A double as Python's repr() writes it (1.0, 0.0001, 1e-05, 1e+16, inf, nan): JSON bodies,
// interpolated strings and child processes then see the same text as under NeMo Gym.
std::string python_float_repr(double d);

}  // namespace gym::core
