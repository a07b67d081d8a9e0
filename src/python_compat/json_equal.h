#pragma once
// Equality of JSON values, and a canonical text with the same notion of "equal": object keys
// unordered, arrays in order, numbers by exact value across integers and floats (1 == 1.0,
// 2**53 + 1 != 2.0**53), NaN equal to nothing, strings never equal to numbers. Whether a
// boolean is a number is the caller's choice (BoolRule):
// - the verifiers compare as Python's == does: true == 1, false == 0.0;
// - the replay model matches recorded items with booleans apart from numbers: true != 1.
//
// Thread safety: every function is reentrant.
#include <boost/json/value.hpp>

#include <string>

namespace gym::python_compat {

enum class BoolRule {
  distinct,     // a boolean equals only the same boolean: true != 1
  as_integers,  // Python's ==: true is the integer 1 and false is 0 (true == 1.0)
};

bool json_equal(const boost::json::value& a, const boost::json::value& b, BoolRule bools);

// Two values are json_equal under BoolRule::distinct exactly when their canonical texts are
// equal: keys sorted by their bytes, integral floats written as integers, other floats in
// shortest round-trip form.
void append_canonical_json(const boost::json::value& v, std::string& out);
std::string canonical_json(const boost::json::value& v);

}  // namespace gym::python_compat
