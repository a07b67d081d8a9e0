#pragma once
// Test support, header-only: reading the rows `gym eval run` writes and comparing JSON values the
// way the conformance check does (docs/design/conformance.md#the-conformance-check).
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>

namespace gym::test {

using RowKey = std::pair<std::int64_t, std::int64_t>;  // (_ng_task_index, _ng_rollout_index)

inline RowKey key_of(const boost::json::object& row) {
  return {row.at("_ng_task_index").to_number<std::int64_t>(),
          row.at("_ng_rollout_index").to_number<std::int64_t>()};
}

inline std::string agent_of(const boost::json::object& row) {
  return std::string(row.at("agent_ref").at("name").as_string());
}

// Lines of `path` that end with a newline (a row being written is not counted).
inline std::size_t complete_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::size_t n = 0;
  for (char c; in.get(c);) n += c == '\n';
  return n;
}

inline bool close_to(double got, double want) {
  return std::fabs(got - want) <= 1e-9 * std::max(1.0, std::fabs(want));
}

// Equality of JSON values with object keys unordered and numbers compared by `numbers_equal`.
template <class NumbersEqual>
bool json_equal(const boost::json::value& a, const boost::json::value& b,
                NumbersEqual numbers_equal) {
  if (a.is_number() && b.is_number())
    return numbers_equal(a.to_number<double>(), b.to_number<double>());
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const auto &x = a.get_object(), &y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& kv : x) {
      const auto* other = y.if_contains(kv.key());
      if (!other || !json_equal(kv.value(), *other, numbers_equal)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const auto &x = a.get_array(), &y = b.get_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!json_equal(x[i], y[i], numbers_equal)) return false;
    return true;
  }
  return a == b;
}

// Numbers equal by value (1 == 1.0), as the replay model compares.
inline bool same_json(const boost::json::value& a, const boost::json::value& b) {
  return json_equal(a, b, [](double x, double y) { return x == y; });
}

// Numbers close_to each other: two implementations of the same statistics may differ in the
// last bit.
inline bool close_json(const boost::json::value& a, const boost::json::value& b) {
  return json_equal(a, b, close_to);
}

}  // namespace gym::test
