#include "replay_input.h"

namespace gym::test {
namespace json = boost::json;

json::value without_nulls(const json::value& v) {
  if (v.is_object()) {
    json::object out;
    for (const auto& kv : v.get_object())
      if (!kv.value().is_null()) out[kv.key()] = without_nulls(kv.value());
    return out;
  }
  if (v.is_array()) {
    json::array out;
    for (const auto& e : v.get_array()) out.push_back(without_nulls(e));
    return out;
  }
  return v;
}

json::array normalized_items(const json::value& input) {
  json::array items;
  if (input.is_string()) {
    items.push_back(json::object{{"type", "message"}, {"role", "user"}, {"content", input}});
    return items;
  }
  for (const auto& item : input.as_array()) {
    auto v = without_nulls(item);
    if (v.is_object() && v.as_object().contains("role") && !v.as_object().contains("type"))
      v.as_object()["type"] = "message";
    items.push_back(std::move(v));
  }
  return items;
}

}  // namespace gym::test
