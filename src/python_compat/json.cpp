#include "python_compat/json.h"

#include "core/json_text.h"
#include "python_compat/errors.h"
#include "python_compat/str.h"
#include "python_compat/utf8.h"

#include <boost/json.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace gym::python_compat {
namespace json = boost::json;

namespace {

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

// A parser with the grammar and messages of CPython's json scanner.
class PyJsonParser {
 public:
  explicit PyJsonParser(std::string_view text) : s_(text) {}

  json::value parse() {
    if (s_.starts_with("\xEF\xBB\xBF")) fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    skip_ws();
    json::value v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("Extra data", i_);
    return v;
  }

 private:
  static constexpr int kMaxDepth = 1000;

  [[noreturn]] void fail(std::string_view what, std::size_t at) const {
    // Python reports code-point positions.
    std::size_t pos = py_len(s_.substr(0, at));
    std::size_t line = 1;
    std::size_t last_newline = std::string_view::npos;
    for (std::size_t k = 0; k < at; ++k) {
      if (s_[k] == '\n') {
        ++line;
        last_newline = k;
      }
    }
    std::size_t column = last_newline == std::string_view::npos
                             ? pos + 1
                             : pos - py_len(s_.substr(0, last_newline + 1)) + 1;
    throw JSONDecodeError(std::string(what) + ": line " + std::to_string(line) + " column " +
                          std::to_string(column) + " (char " + std::to_string(pos) + ")");
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  bool consume(std::string_view word) {
    if (s_.substr(i_).starts_with(word)) {
      i_ += word.size();
      return true;
    }
    return false;
  }

  json::value value(int depth) {
    if (i_ >= s_.size()) fail("Expecting value", i_);
    char c = s_[i_];
    if (c == '"') return json::value(string());
    if (c == '{') return object(depth + 1);
    if (c == '[') return array(depth + 1);
    if (consume("null")) return nullptr;
    if (consume("true")) return true;
    if (consume("false")) return false;
    if (consume("NaN")) return std::numeric_limits<double>::quiet_NaN();
    if (consume("Infinity")) return std::numeric_limits<double>::infinity();
    if (consume("-Infinity")) return -std::numeric_limits<double>::infinity();
    if (c == '-' || is_ascii_digit(c)) return number();
    fail("Expecting value", i_);
  }

  json::value number() {
    std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !is_ascii_digit(s_[i_])) fail("Expecting value", start);
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
    }
    bool is_float = false;
    if (i_ + 1 < s_.size() && s_[i_] == '.' && is_ascii_digit(s_[i_ + 1])) {
      is_float = true;
      i_ += 2;
      while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      std::size_t e = i_ + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && is_ascii_digit(s_[e])) {
        is_float = true;
        while (e < s_.size() && is_ascii_digit(s_[e])) ++e;
        i_ = e;
      }
    }
    std::string text(s_.substr(start, i_ - start));
    if (!is_float) {
      errno = 0;
      if (text[0] == '-') {
        long long v = std::strtoll(text.c_str(), nullptr, 10);
        if (errno != ERANGE) return static_cast<std::int64_t>(v);
      } else {
        unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
        if (errno != ERANGE) {
          if (v <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()))
            return static_cast<std::int64_t>(v);
          return static_cast<std::uint64_t>(v);
        }
      }
    }
    return *py_float(text);
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits at `at` (the "u" is at at-1); fails like Python otherwise.
  char32_t hex4(std::size_t at) {
    if (at + 4 > s_.size()) fail("Invalid \\uXXXX escape", at - 1);
    char32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      int h = hex_value(s_[at + k]);
      if (h < 0) fail("Invalid \\uXXXX escape", at - 1);
      v = v * 16 + static_cast<char32_t>(h);
    }
    return v;
  }

  std::string string() {
    std::size_t begin = i_++;  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("Unterminated string starting at", begin);
      char c = s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("Invalid control character at", i_);
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) fail("Unterminated string starting at", begin);
      char e = s_[i_ + 1];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          char32_t cp = hex4(i_ + 2);
          std::size_t after = i_ + 6;
          if (cp >= 0xD800 && cp <= 0xDBFF && after + 1 < s_.size() && s_[after] == '\\' &&
              s_[after + 1] == 'u') {
            char32_t low = hex4(after + 2);
            if (low >= 0xDC00 && low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
              after += 6;
            }
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // lone surrogate
          append_utf8(out, cp);
          i_ = after;
          continue;
        }
        default:
          fail("Invalid \\escape", i_);
      }
      i_ += 2;
    }
  }

  json::value object(int depth) {
    if (depth > kMaxDepth)
      throw RecursionError("maximum recursion depth exceeded while decoding a JSON object");
    ++i_;  // {
    json::object obj;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return obj;
    }
    while (true) {
      if (i_ >= s_.size() || s_[i_] != '"')
        fail("Expecting property name enclosed in double quotes", i_);
      std::string key = string();
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') fail("Expecting ':' delimiter", i_);
      ++i_;
      skip_ws();
      obj.insert_or_assign(key, value(depth));  // a repeated key keeps its first position
      skip_ws();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return obj;
      }
      if (i_ >= s_.size() || s_[i_] != ',') fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
    }
  }

  json::value array(int depth) {
    if (depth > kMaxDepth)
      throw RecursionError("maximum recursion depth exceeded while decoding a JSON array");
    ++i_;  // [
    json::array arr;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return arr;
    }
    while (true) {
      arr.push_back(value(depth));
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return arr;
      }
      if (i_ >= s_.size() || s_[i_] != ',') fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

json::value py_json_loads(std::string_view text) { return PyJsonParser(text).parse(); }

namespace {

void append_py_repr(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::null:
      out += "None";
      return;
    case json::kind::bool_:
      out += v.get_bool() ? "True" : "False";
      return;
    case json::kind::int64:
      out += std::to_string(v.get_int64());
      return;
    case json::kind::uint64:
      out += std::to_string(v.get_uint64());
      return;
    case json::kind::double_:
      out += core::python_float_repr(v.get_double());
      return;
    case json::kind::string:
      out += py_repr(v.get_string());
      return;
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out += ", ";
        first = false;
        append_py_repr(e, out);
      }
      out += ']';
      return;
    }
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(kv.key());
        out += ": ";
        append_py_repr(kv.value(), out);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string py_str(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  std::string out;
  append_py_repr(v, out);
  return out;
}

bool py_truthy(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return false;
    case json::kind::bool_:
      return v.get_bool();
    case json::kind::int64:
      return v.get_int64() != 0;
    case json::kind::uint64:
      return v.get_uint64() != 0;
    case json::kind::double_:
      return v.get_double() != 0.0;  // NaN is true, as in Python
    case json::kind::string:
      return !v.get_string().empty();
    case json::kind::array:
      return !v.get_array().empty();
    case json::kind::object:
      return !v.get_object().empty();
  }
  return true;
}

std::string py_type_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "NoneType";
    case json::kind::bool_:
      return "bool";
    case json::kind::int64:
    case json::kind::uint64:
      return "int";
    case json::kind::double_:
      return "float";
    case json::kind::string:
      return "str";
    case json::kind::array:
      return "list";
    case json::kind::object:
      return "dict";
  }
  return "object";
}

bool py_hashable(const json::value& v) { return !v.is_array() && !v.is_object(); }

bool py_is_number(const json::value& v) {
  return v.is_bool() || v.is_int64() || v.is_uint64() || v.is_double();
}

double py_float_of(const json::value& v) {
  if (v.is_bool()) return v.get_bool() ? 1.0 : 0.0;
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

}  // namespace gym::python_compat
