#pragma once
// JSON text exactly as NeMo Gym renders it (runtime.md 4.1 and R7): compact separators,
// non-ASCII characters unescaped, floats in Python repr form, non-finite floats as null.
#include <boost/json/value.hpp>

#include <string>

namespace gym::core {

// Appends the rendering of `v` to `out`.
void render_json(const boost::json::value& v, std::string& out);
std::string render_json(const boost::json::value& v);

// Python repr of a finite double ("1.0", "0.0001", "1e-05", "1e+16").
void render_double(double d, std::string& out);

}  // namespace gym::core
