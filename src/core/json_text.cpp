#include "core/json_text.h"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace gym::core {
namespace {

// True for the ASCII bytes Python's json.dumps(ensure_ascii=False) writes as they are.
constexpr bool plain_byte(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at `p` (before `end`), 0 when the byte at `p` starts
// none: a stray continuation byte, a truncated sequence, an overlong form, a surrogate or a code
// point above U+10FFFF.
std::size_t utf8_sequence_length(const char* p, const char* end) {
  const auto c = static_cast<unsigned char>(*p);
  if (c < 0x80) return 1;
  const auto left = end - p;
  auto at = [p](int k) { return static_cast<unsigned char>(p[k]); };
  auto tail = [](unsigned char b) { return (b & 0xC0) == 0x80; };
  // The ranges of Unicode's table of well-formed sequences: the second byte's range excludes
  // the overlong forms (E0, F0), the surrogates (ED) and code points above U+10FFFF (F4).
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && tail(at(1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !tail(at(2))) return 0;
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return at(1) >= lo && at(1) <= hi ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !tail(at(2)) || !tail(at(3))) return 0;
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return at(1) >= lo && at(1) <= hi ? 4 : 0;
  }
  return 0;  // a continuation byte, C0/C1 (overlong) or F5..FF
}

void render_string(boost::json::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  const char* p = s.data();
  const char* const end = p + s.size();
  while (p < end) {
    // Runs of plain bytes and valid UTF-8 sequences (almost all of a text) are copied at once.
    const char* run = p;
    while (p < end) {
      const auto c = static_cast<unsigned char>(*p);
      if (plain_byte(c)) {
        ++p;
      } else if (c >= 0x80) {
        const std::size_t n = utf8_sequence_length(p, end);
        if (n == 0) break;
        p += n;
      } else {
        break;
      }
    }
    out.append(run, static_cast<std::size_t>(p - run));
    if (p == end) break;
    const auto c = static_cast<unsigned char>(*p++);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c >= 0x80) {  // a byte that starts no valid UTF-8 sequence
          out += kReplacementCharacter;
          break;
        }
        // Other control characters below 0x20; DEL (0x7f) stays literal, as in Python.
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
    }
  }
  out.push_back('"');
}

// Builds the document like boost::json::parser does, but re-reads every double from its text.
enum class JsonNumberError { integer_out_of_range = 1, float_out_of_range };

class JsonNumberCategory : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "gym.json"; }
  std::string message(int e) const override {
    if (e == static_cast<int>(JsonNumberError::integer_out_of_range))
      return "integer out of range (gym-cpp keeps JSON integers within 64 bits; send larger "
             "ones as strings)";
    return "number out of range (it does not fit a 64-bit float)";
  }
};

boost::system::error_code make_error_code(JsonNumberError e) {
  static const JsonNumberCategory category;
  return {static_cast<int>(e), category};
}

class PreciseHandler {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  boost::json::value_stack stack;
  std::string number;  // text of a number split across calls

  using ec_t = boost::system::error_code;
  bool on_document_begin(ec_t&) { return true; }
  bool on_document_end(ec_t&) { return true; }
  bool on_array_begin(ec_t&) { return true; }
  bool on_array_end(std::size_t n, ec_t&) { return stack.push_array(n), true; }
  bool on_object_begin(ec_t&) { return true; }
  bool on_object_end(std::size_t n, ec_t&) { return stack.push_object(n), true; }
  bool on_string_part(boost::json::string_view s, std::size_t, ec_t&) {
    return stack.push_chars(s), true;
  }
  bool on_string(boost::json::string_view s, std::size_t, ec_t&) {
    return stack.push_string(s), true;
  }
  bool on_key_part(boost::json::string_view s, std::size_t, ec_t&) {
    return stack.push_chars(s), true;
  }
  bool on_key(boost::json::string_view s, std::size_t, ec_t&) { return stack.push_key(s), true; }
  bool on_number_part(boost::json::string_view s, ec_t&) { return number.append(s), true; }
  bool on_int64(std::int64_t i, boost::json::string_view, ec_t&) {
    number.clear();
    return stack.push_int64(i), true;
  }
  bool on_uint64(std::uint64_t u, boost::json::string_view, ec_t&) {
    number.clear();
    return stack.push_uint64(u), true;
  }
  bool on_double(double d, boost::json::string_view s, ec_t& ec) {
    number.append(s);
    // An integer literal lands here when it does not fit 64 bits: Python would keep it exact, a
    // double would change it, so it is refused (integers stay integers:
    // docs/design/wire-compatibility.md#json-numbers).
    if (number.find_first_of(".eE") == std::string::npos) {
      ec = make_error_code(JsonNumberError::integer_out_of_range);
      return false;
    }
    double exact = 0;
    auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), exact);
    if (err == std::errc{} && end == number.data() + number.size()) d = exact;
    if (err == std::errc::result_out_of_range) d = std::strtod(number.c_str(), nullptr);
    number.clear();
    // 1e400: Python reads inf, which no JSON text can carry back (it would be written as null).
    if (std::isinf(d)) {
      ec = make_error_code(JsonNumberError::float_out_of_range);
      return false;
    }
    return stack.push_double(d), true;
  }
  bool on_bool(bool b, ec_t&) { return stack.push_bool(b), true; }
  bool on_null(ec_t&) { return stack.push_null(), true; }
  bool on_comment_part(boost::json::string_view, ec_t&) { return true; }
  bool on_comment(boost::json::string_view, ec_t&) { return true; }
};

}  // namespace

boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              std::size_t* consumed, boost::json::storage_ptr storage) {
  boost::json::parse_options options;
  options.max_depth = 1000;
  boost::json::basic_parser<PreciseHandler> parser(options);
  parser.handler().stack.reset(std::move(storage));
  std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = boost::json::error::extra_data;
  if (consumed) *consumed = used;
  if (ec) return nullptr;
  return parser.handler().stack.release();
}

boost::json::value parse_json(std::string_view text) {
  boost::system::error_code ec;
  auto v = parse_json(text, ec);
  if (ec) throw std::runtime_error("invalid JSON: " + ec.message());
  return v;
}

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    const std::size_t n = utf8_sequence_length(p, end);
    if (n == 0) {
      out += kReplacementCharacter;
      ++p;
    } else {
      out.append(p, n);
      p += n;
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    if (static_cast<unsigned char>(*p) < 0x80) {
      ++p;
      continue;
    }
    const std::size_t n = utf8_sequence_length(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::string out;
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |x| < 1e16.
  char sci[64];
  auto [end, ec] = std::to_chars(sci, sci + sizeof sci, d, std::chars_format::scientific);
  (void)ec;
  std::string_view s(sci, static_cast<std::size_t>(end - sci));
  auto e_pos = s.find('e');
  int exponent = std::atoi(std::string(s.substr(e_pos + 1)).c_str());
  std::string_view mantissa = s.substr(0, e_pos);
  bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.remove_prefix(1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits.push_back(c);

  if (negative) out.push_back('-');
  if (exponent < -4 || exponent >= 16) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    out.push_back(exponent < 0 ? '-' : '+');
    int a = std::abs(exponent);
    if (a < 10) out.push_back('0');
    out += std::to_string(a);
    return out;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exponent - 1), '0');
    out += digits;
    return out;
  }
  auto int_len = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= int_len) {
    out += digits;
    out.append(int_len - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, int_len);
    out.push_back('.');
    out.append(digits, int_len);
  }
  return out;
}

void render_json(const boost::json::value& v, std::string& out) {
  switch (v.kind()) {
    case boost::json::kind::null:
      out += "null";
      break;
    case boost::json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      break;
    case boost::json::kind::int64:
      out += std::to_string(v.get_int64());
      break;
    case boost::json::kind::uint64:
      out += std::to_string(v.get_uint64());
      break;
    case boost::json::kind::double_:
      if (std::isfinite(v.get_double())) {
        out += python_float_repr(v.get_double());
      } else {
        out += "null";
      }
      break;
    case boost::json::kind::string:
      render_string(v.get_string(), out);
      break;
    case boost::json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        render_json(e, out);
      }
      out.push_back(']');
      break;
    }
    case boost::json::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        render_string(kv.key(), out);
        out.push_back(':');
        render_json(kv.value(), out);
      }
      out.push_back('}');
      break;
    }
  }
}

namespace {
void render_indented(const boost::json::value& v, int indent, int depth, std::string& out) {
  auto newline = [&](int level) {
    if (indent < 0) return;  // one line
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent * level), ' ');
  };
  if (v.is_array() && !v.get_array().empty()) {
    out.push_back('[');
    bool first = true;
    for (const auto& e : v.get_array()) {
      if (!first) out += indent < 0 ? ", " : ",";
      first = false;
      newline(depth + 1);
      render_indented(e, indent, depth + 1, out);
    }
    newline(depth);
    out.push_back(']');
  } else if (v.is_object() && !v.get_object().empty()) {
    out.push_back('{');
    bool first = true;
    for (const auto& kv : v.get_object()) {
      if (!first) out += indent < 0 ? ", " : ",";
      first = false;
      newline(depth + 1);
      render_string(kv.key(), out);
      out += ": ";
      render_indented(kv.value(), indent, depth + 1, out);
    }
    newline(depth);
    out.push_back('}');
  } else {
    render_json(v, out);
  }
}
}  // namespace

std::string render_json_indented(const boost::json::value& v, int indent) {
  std::string out;
  render_indented(v, indent, 0, out);
  return out;
}

std::string render_json(const boost::json::value& v) {
  std::string out;
  out.reserve(256);
  render_json(v, out);
  return out;
}

}  // namespace gym::core
