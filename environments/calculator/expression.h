#pragma once
// The calculator's arithmetic: what Python's `ast` evaluation in environments/python_example
// accepts (numbers, + - * / ** %, unary + and -, parentheses) with Python's int/float rules.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

namespace gym::environments::calculator {

// An int stays an int through + - * % and ** with a non-negative exponent; / makes a float.
using Number = std::variant<std::int64_t, double>;

// Why an expression has no value: the text the tool answers as {"error": ...}.
struct ExpressionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws ExpressionError for anything but an arithmetic expression, a zero divisor, an exponent
// above 64, or an int result beyond 64 bits (Python has no limit there; gym-cpp stops).
Number evaluate(std::string_view expression);

}  // namespace gym::environments::calculator
