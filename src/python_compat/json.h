#pragma once
// Python's view of JSON values (docs/reference/python-compat.md): json.loads and the type a value
// has in Python. Equality of JSON values is json_equal.h's.
//
// Thread safety: every function is reentrant.
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace gym::python_compat {

// json.loads(text): NaN, Infinity and -Infinity are floats; a duplicated key keeps its last
// value (at the first key's position); integers are exact within 64 bits (larger ones become
// doubles); lone surrogate escapes become U+FFFD. Throws JSONDecodeError; nesting deeper than
// 1000 levels throws RecursionError (errors.h).
boost::json::value py_json_loads(std::string_view text);

// type(v).__name__ of the value json.loads would build: NoneType, bool, int, float, str, list,
// dict.
std::string py_type_name(const boost::json::value& v);

// str(v) of that value: a str is itself; None, True, 5, 2.5, inf; lists and dicts as repr()
// writes them (['a', 1], {'k': None}).
std::string py_str(const boost::json::value& v);

// bool(v): false for None, False, 0, 0.0, "", [] and {}.
bool py_truthy(const boost::json::value& v);

// hash() would succeed: not a list and not a dict.
bool py_hashable(const boost::json::value& v);

// isinstance(v, (bool, int, float)): a number in Python's arithmetic.
bool py_is_number(const boost::json::value& v);
// float(v) of such a number (True is 1.0).
double py_float_of(const boost::json::value& v);

}  // namespace gym::python_compat
