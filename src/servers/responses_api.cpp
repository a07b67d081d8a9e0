#include "servers/responses_api.h"

#include <boost/json.hpp>

#include <array>
#include <string_view>
#include <utility>

namespace gym::servers {
namespace json = boost::json;
using http::Schema;
using K = Schema::Kind;

namespace {

// (field, default) in upstream order; a null default means "null".
const std::array<std::pair<const char*, json::value>, 23>& create_param_defaults() {
  static const std::array<std::pair<const char*, json::value>, 23> kDefaults{{
      {"background", nullptr},
      {"include", nullptr},
      {"input", nullptr},
      {"instructions", nullptr},
      {"max_output_tokens", nullptr},
      {"max_tool_calls", nullptr},
      {"metadata", nullptr},
      {"model", nullptr},
      {"parallel_tool_calls", true},
      {"previous_response_id", nullptr},
      {"prompt", nullptr},
      {"reasoning", nullptr},
      {"service_tier", nullptr},
      {"store", nullptr},
      {"temperature", nullptr},
      {"text", nullptr},
      {"tool_choice", "auto"},
      {"tools", json::array{}},
      {"top_logprobs", nullptr},
      {"top_p", nullptr},
      {"truncation", nullptr},
      {"user", nullptr},
      {"stream", nullptr},
  }};
  return kDefaults;
}

}  // namespace

json::object expand_create_params(const json::object& params) {
  json::object out;
  out.reserve(create_param_defaults().size());
  for (const auto& [key, def] : create_param_defaults()) {
    auto it = params.find(key);
    out[key] = it != params.end() ? it->value() : def;
  }
  return out;
}

std::shared_ptr<const Schema> create_params_schema() {
  static const auto schema = [] {
    auto opt = [](K k) { return Schema::of(k, /*nullable=*/true); };
    std::vector<http::SchemaField> f{
        {"background", opt(K::boolean), false},
        {"include", Schema::list_of(Schema::of(K::string), true), false},
        {"input", Schema::of(K::any), true},
        {"instructions", opt(K::string), false},
        {"max_output_tokens", opt(K::integer), false},
        {"max_tool_calls", opt(K::integer), false},
        {"metadata",
         [] {
           Schema s = Schema::of(K::dict, true);
           s.items = std::make_shared<const Schema>(Schema::of(K::string));
           return s;
         }(),
         false},
        {"model", opt(K::string), false},
        {"parallel_tool_calls", opt(K::boolean), false},
        {"previous_response_id", opt(K::string), false},
        {"prompt", opt(K::any), false},
        {"reasoning", opt(K::dict), false},
        {"service_tier", Schema::literal_of({"auto", "default", "flex", "scale", "priority"}, true),
         false},
        {"store", opt(K::boolean), false},
        {"temperature", opt(K::number), false},
        {"text", opt(K::any), false},
        {"tool_choice", Schema::of(K::any), false},
        {"tools", Schema::list_of(Schema::of(K::dict), true), false},
        {"top_logprobs", opt(K::integer), false},
        {"top_p", opt(K::number), false},
        {"truncation", Schema::literal_of({"auto", "disabled"}, true), false},
        {"user", opt(K::string), false},
        {"stream", opt(K::boolean), false},
    };
    return std::make_shared<const Schema>(Schema::object_of(std::move(f), /*forbid_extra=*/true));
  }();
  return schema;
}

std::optional<std::string> response_problem(const json::value& v) {
  const auto* o = v.if_object();
  if (!o) return "the model server's answer is not a JSON object";
  for (const char* key : {"id", "created_at", "model", "object", "output", "parallel_tool_calls",
                          "tool_choice", "tools"})
    if (!o->contains(key)) return std::string("the Response has no '") + key + "' field";
  const auto* output = o->at("output").if_array();
  if (!output) return "the Response's 'output' is not a list";
  for (std::size_t i = 0; i < output->size(); ++i) {
    const auto* item = (*output)[i].if_object();
    if (!item || !item->contains("type") || !item->at("type").is_string())
      return "output item " + std::to_string(i) + " has no 'type'";
  }
  return std::nullopt;
}

json::value accumulate_usage(const json::value& total, const json::value& add) {
  if (add.is_null()) return total;
  if (total.is_null()) return add;
  if (!total.is_object() || !add.is_object()) return total;
  json::object out = total.get_object();
  const auto& a = add.get_object();
  auto sum = [](const json::value* x, const json::value* y) -> json::value {
    if (!x || !y || !x->is_number() || !y->is_number()) return nullptr;
    if (x->is_double() || y->is_double()) return x->to_number<double>() + y->to_number<double>();
    return x->to_number<std::int64_t>() + y->to_number<std::int64_t>();
  };
  for (const char* key : {"input_tokens", "output_tokens", "total_tokens"})
    out[key] = sum(out.if_contains(key), a.if_contains(key));
  auto details = [&](const char* obj_key, const char* count_key) {
    auto* mine = out.if_contains(obj_key);
    auto* theirs = a.if_contains(obj_key);
    if (!mine || !theirs || !mine->is_object() || !theirs->is_object()) return;
    auto& m = mine->get_object();
    m[count_key] = sum(m.if_contains(count_key), theirs->get_object().if_contains(count_key));
  };
  details("input_tokens_details", "cached_tokens");
  details("output_tokens_details", "reasoning_tokens");
  return out;
}

std::string assistant_text(const json::array& output) {
  std::string joined;
  bool first = true;
  auto add = [&](std::string_view t) {
    if (!first) joined += '\n';
    joined += t;
    first = false;
  };
  for (const auto& v : output) {
    const auto* item = v.if_object();
    if (!item) continue;
    const auto* type = item->if_contains("type");
    const auto* role = item->if_contains("role");
    if (!type || *type != "message" || !role || *role != "assistant") continue;
    const auto* content = item->if_contains("content");
    if (!content) continue;
    if (content->is_string()) {
      add(content->get_string());
    } else if (content->is_array()) {
      for (const auto& p : content->get_array()) {
        const auto* part = p.if_object();
        const auto* text = part ? part->if_contains("text") : nullptr;
        if (text && text->is_string()) add(text->get_string());
      }
    }
  }
  return joined;
}

}  // namespace gym::servers
