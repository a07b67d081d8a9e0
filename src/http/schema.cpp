#include "http/schema.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace gym::http {
namespace json = boost::json;

Schema Schema::of(Kind k, bool nullable) {
  Schema s;
  s.kind = k;
  s.nullable = nullable;
  return s;
}

Schema Schema::list_of(Schema item, bool nullable) {
  Schema s = of(Kind::list, nullable);
  s.items = std::make_shared<const Schema>(std::move(item));
  return s;
}

Schema Schema::literal_of(std::vector<std::string> values, bool nullable) {
  Schema s = of(Kind::literal, nullable);
  s.literals = std::move(values);
  return s;
}

Schema Schema::object_of(std::vector<SchemaField> fields, bool forbid_extra) {
  Schema s = of(Kind::object);
  s.fields = std::move(fields);
  s.forbid_extra = forbid_extra;
  return s;
}

Schema Schema::union_of(std::vector<SchemaMember> members, bool nullable) {
  Schema s = of(Kind::union_of, nullable);
  s.members = std::move(members);
  return s;
}

namespace {

struct Validator {
  json::array errors;
  json::array loc{"body"};

  void fail(std::string_view type, std::string_view msg, const json::value& input,
            const json::object* ctx = nullptr) {
    json::object e;
    e["type"] = type;
    e["loc"] = loc;
    e["msg"] = msg;
    e["input"] = input;
    if (ctx) e["ctx"] = *ctx;
    errors.push_back(std::move(e));
  }

  static std::string lower_trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }

  void integer(json::value& v) {
    if (v.is_int64() || v.is_uint64()) return;
    if (v.is_bool()) {
      v = v.get_bool() ? 1 : 0;
      return;
    }
    if (v.is_double()) {
      double d = v.get_double();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18) {
        v = static_cast<std::int64_t>(d);
      } else {
        fail("int_from_float",
             "Input should be a valid integer, got a number with a fractional part", v);
      }
      return;
    }
    if (v.is_string()) {
      std::string s = lower_trimmed(v.get_string());
      std::int64_t out = 0;
      auto* first = s.data() + (s.starts_with('+') ? 1 : 0);
      auto [p, ec] = std::from_chars(first, s.data() + s.size(), out);
      if (!s.empty() && ec == std::errc{} && p == s.data() + s.size()) {
        v = out;
      } else {
        fail("int_parsing", "Input should be a valid integer, unable to parse string as an integer",
             v);
      }
      return;
    }
    fail("int_type", "Input should be a valid integer", v);
  }

  void number(json::value& v) {
    if (v.is_double()) return;
    if (v.is_int64() || v.is_uint64()) return;  // ints are valid floats; kept as written
    if (v.is_bool()) {
      v = v.get_bool() ? 1.0 : 0.0;
      return;
    }
    if (v.is_string()) {
      std::string s = lower_trimmed(v.get_string());
      double out = 0;
      auto* first = s.data() + (s.starts_with('+') ? 1 : 0);
      auto [p, ec] = std::from_chars(first, s.data() + s.size(), out);
      if (!s.empty() && ec == std::errc{} && p == s.data() + s.size()) {
        v = out;
      } else {
        fail("float_parsing", "Input should be a valid number, unable to parse string as a number",
             v);
      }
      return;
    }
    fail("float_type", "Input should be a valid number", v);
  }

  void boolean(json::value& v) {
    if (v.is_bool()) return;
    if (v.is_int64() || v.is_uint64() || v.is_double()) {
      double d = v.is_double() ? v.get_double() : v.to_number<double>();
      if (d == 0 || d == 1) {
        v = d == 1;
      } else {
        fail("bool_parsing", "Input should be a valid boolean, unable to interpret input", v);
      }
      return;
    }
    if (v.is_string()) {
      static constexpr std::string_view kTrue[] = {"1", "true", "yes", "on", "t", "y"};
      static constexpr std::string_view kFalse[] = {"0", "false", "no", "off", "f", "n"};
      std::string s = lower_trimmed(v.get_string());
      if (std::find(std::begin(kTrue), std::end(kTrue), s) != std::end(kTrue)) {
        v = true;
      } else if (std::find(std::begin(kFalse), std::end(kFalse), s) != std::end(kFalse)) {
        v = false;
      } else {
        fail("bool_parsing", "Input should be a valid boolean, unable to interpret input", v);
      }
      return;
    }
    fail("bool_type", "Input should be a valid boolean", v);
  }

  void literal(const Schema& s, json::value& v) {
    if (v.is_string() && std::find(s.literals.begin(), s.literals.end(),
                                   std::string_view(v.get_string())) != s.literals.end())
      return;
    std::string expected;
    for (std::size_t i = 0; i < s.literals.size(); ++i) {
      if (i > 0) expected += i + 1 == s.literals.size() ? " or " : ", ";
      expected += "'" + s.literals[i] + "'";
    }
    json::object ctx;
    ctx["expected"] = expected;
    fail("literal_error", "Input should be " + expected, v, &ctx);
  }

  void object(const Schema& s, json::value& v) {
    if (!v.is_object()) {
      fail("model_attributes_type",
           "Input should be a valid dictionary or object to extract fields from", v);
      return;
    }
    auto& obj = v.get_object();
    for (const auto& f : s.fields) {
      auto it = obj.find(f.name);
      if (it == obj.end()) {
        if (f.required) {
          loc.push_back(json::string(f.name));
          fail("missing", "Field required", v);
          loc.pop_back();
        }
        continue;
      }
      loc.push_back(json::string(f.name));
      check(f.schema, it->value());
      loc.pop_back();
    }
    if (s.forbid_extra) {
      for (auto& kv : obj) {
        bool declared = std::any_of(s.fields.begin(), s.fields.end(),
                                    [&](const SchemaField& f) { return f.name == kv.key(); });
        if (declared) continue;
        loc.push_back(json::string(kv.key()));
        fail("extra_forbidden", "Extra inputs are not permitted", kv.value());
        loc.pop_back();
      }
    }
  }

  void union_of(const Schema& s, json::value& v) {
    json::array failures;
    for (const auto& member : s.members) {
      Validator trial;
      trial.loc = loc;
      trial.loc.push_back(json::string(member.tag));
      json::value candidate = v;
      trial.check(member.schema, candidate);
      if (trial.errors.empty()) {
        v = std::move(candidate);
        return;
      }
      for (auto& e : trial.errors) failures.push_back(std::move(e));
    }
    for (auto& e : failures) errors.push_back(std::move(e));
  }

  void check(const Schema& s, json::value& v) {
    if (v.is_null() && (s.nullable || s.kind == Schema::Kind::any)) return;
    switch (s.kind) {
      case Schema::Kind::any:
        return;
      case Schema::Kind::integer:
        return integer(v);
      case Schema::Kind::number:
        return number(v);
      case Schema::Kind::string:
        if (!v.is_string()) fail("string_type", "Input should be a valid string", v);
        return;
      case Schema::Kind::boolean:
        return boolean(v);
      case Schema::Kind::literal:
        return literal(s, v);
      case Schema::Kind::object:
        return object(s, v);
      case Schema::Kind::union_of:
        return union_of(s, v);
      case Schema::Kind::list:
        if (!v.is_array()) {
          fail("list_type", "Input should be a valid list", v);
          return;
        }
        if (s.items) {
          auto& arr = v.get_array();
          for (std::size_t i = 0; i < arr.size(); ++i) {
            loc.push_back(static_cast<std::int64_t>(i));
            check(*s.items, arr[i]);
            loc.pop_back();
          }
        }
        return;
      case Schema::Kind::dict:
        if (!v.is_object()) {
          fail("dict_type", "Input should be a valid dictionary", v);
          return;
        }
        if (s.items) {
          for (auto& kv : v.get_object()) {
            loc.push_back(json::string(kv.key()));
            check(*s.items, kv.value());
            loc.pop_back();
          }
        }
        return;
    }
  }
};

}  // namespace

json::array validate_body(const Schema& schema, json::value& v) {
  Validator val;
  val.check(schema, v);
  return std::move(val.errors);
}

}  // namespace gym::http
