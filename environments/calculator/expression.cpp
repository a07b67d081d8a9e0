#include "calculator/expression.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace gym::environments::calculator {

namespace {

double as_double(const Number& n) {
  return std::holds_alternative<std::int64_t>(n) ? static_cast<double>(std::get<std::int64_t>(n))
                                                 : std::get<double>(n);
}

bool both_int(const Number& a, const Number& b) {
  return std::holds_alternative<std::int64_t>(a) && std::holds_alternative<std::int64_t>(b);
}

const ExpressionError kInvalid("only numbers, + - * / ** % and parentheses are allowed");

// Recursive descent over Python's precedence: + - < * / % < unary + - < ** (right-associative,
// and its right operand may carry a sign: 2**-1).
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Number parse() {
    Number value = sum();
    skip_space();
    if (at_ != text_.size()) throw kInvalid;
    return value;
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(std::string_view token) {
    skip_space();
    if (text_.substr(at_, token.size()) != token) return false;
    // `*` is not the first half of `**`.
    if (token == "*" && text_.substr(at_, 2) == "**") return false;
    at_ += token.size();
    return true;
  }

  Number sum() {
    Number value = product();
    for (;;) {
      if (take("+"))
        value = add(value, product(), false);
      else if (take("-"))
        value = add(value, product(), true);
      else
        return value;
    }
  }

  Number product() {
    Number value = unary();
    for (;;) {
      if (take("*"))
        value = multiply(value, unary());
      else if (take("/"))
        value = divide(value, unary());
      else if (take("%"))
        value = modulo(value, unary());
      else
        return value;
    }
  }

  Number unary() {
    if (take("-")) return negate(unary());
    if (take("+")) return unary();
    return power();
  }

  Number power() {
    Number base = primary();
    if (!take("**")) return base;
    return raise(base, unary());
  }

  Number primary() {
    if (take("(")) {
      Number value = sum();
      if (!take(")")) throw kInvalid;
      return value;
    }
    skip_space();
    const std::size_t start = at_;
    bool is_float = false;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
    if (at_ < text_.size() && text_[at_] == '.') {
      is_float = true;
      ++at_;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
    }
    if (at_ == start || (at_ == start + 1 && is_float)) throw kInvalid;
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      std::size_t e = at_ + 1;
      if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
      if (e < text_.size() && std::isdigit(static_cast<unsigned char>(text_[e]))) {
        is_float = true;
        at_ = e;
        while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
      }
    }
    const std::string digits(text_.substr(start, at_ - start));
    if (is_float) return std::strtod(digits.c_str(), nullptr);
    errno = 0;
    const long long v = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) throw ExpressionError("the number " + digits + " is too large");
    return static_cast<std::int64_t>(v);
  }

  // Takes the flag and the value separately computed: argument order is unspecified.
  static Number checked(bool overflow, std::int64_t value) {
    if (overflow) throw ExpressionError("the result is too large");
    return value;
  }
  static Number add(const Number& a, const Number& b, bool subtract) {
    if (both_int(a, b)) {
      std::int64_t r = 0;
      const auto x = std::get<std::int64_t>(a), y = std::get<std::int64_t>(b);
      const bool overflow =
          subtract ? __builtin_sub_overflow(x, y, &r) : __builtin_add_overflow(x, y, &r);
      return checked(overflow, r);
    }
    return subtract ? as_double(a) - as_double(b) : as_double(a) + as_double(b);
  }
  static Number multiply(const Number& a, const Number& b) {
    if (both_int(a, b)) {
      std::int64_t r = 0;
      const bool overflow =
          __builtin_mul_overflow(std::get<std::int64_t>(a), std::get<std::int64_t>(b), &r);
      return checked(overflow, r);
    }
    return as_double(a) * as_double(b);
  }
  static Number divide(const Number& a, const Number& b) {
    if (as_double(b) == 0) throw ExpressionError("division by zero");
    return as_double(a) / as_double(b);
  }
  // Python's % takes the sign of the divisor.
  static Number modulo(const Number& a, const Number& b) {
    if (as_double(b) == 0)
      throw ExpressionError(both_int(a, b) ? "integer modulo by zero" : "float modulo");
    if (both_int(a, b)) {
      const auto x = std::get<std::int64_t>(a), y = std::get<std::int64_t>(b);
      if (y == -1) return std::int64_t{0};
      std::int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    const double x = as_double(a), y = as_double(b);
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
  static Number negate(const Number& a) {
    if (std::holds_alternative<std::int64_t>(a)) {
      std::int64_t r = 0;
      const bool overflow = __builtin_sub_overflow(std::int64_t{0}, std::get<std::int64_t>(a), &r);
      return checked(overflow, r);
    }
    return -std::get<double>(a);
  }
  static Number raise(const Number& base, const Number& exponent) {
    if (std::fabs(as_double(exponent)) > 64) throw ExpressionError("exponent too large");
    if (both_int(base, exponent) && std::get<std::int64_t>(exponent) >= 0) {
      std::int64_t r = 1;
      const auto b = std::get<std::int64_t>(base);
      for (auto n = std::get<std::int64_t>(exponent); n > 0; --n)
        if (__builtin_mul_overflow(r, b, &r)) throw ExpressionError("the result is too large");
      return r;
    }
    if (as_double(base) == 0 && as_double(exponent) < 0)
      throw ExpressionError("0.0 cannot be raised to a negative power");
    return std::pow(as_double(base), as_double(exponent));
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

Number evaluate(std::string_view expression) { return Parser(expression).parse(); }

}  // namespace gym::environments::calculator
