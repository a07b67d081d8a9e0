#pragma once
// JSON value equality and a canonical text with the same notion of "equal" (environments.md 8.3):
// object keys unordered, numbers by value across integers and floats (1 == 1.0), arrays in
// order. Booleans are not numbers here (unlike Python, true != 1).
#include <boost/json/value.hpp>

#include <string>

namespace gym::models {

bool json_equal(const boost::json::value& a, const boost::json::value& b);

// Two values are json_equal exactly when their canonical texts are equal: keys sorted by their
// bytes, integral floats written as integers, other floats in shortest round-trip form.
void append_canonical_json(const boost::json::value& v, std::string& out);
std::string canonical_json(const boost::json::value& v);

}  // namespace gym::models
