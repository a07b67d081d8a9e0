#include "demo_data/tasks.h"

#include <boost/json.hpp>

#include "core/json_text.h"

namespace gym::demo_data {
namespace json = boost::json;

std::array<bool, kRolloutsPerTask> draw_outcomes(Rng& rng) {
  // Skill levels and how many tasks get each: a mean reward near 0.6 and pass@4 near 0.85.
  static constexpr std::array<double, 4> kSkill{0.95, 0.7, 0.4, 0.08};
  static constexpr std::array<double, 4> kShare{0.3, 0.3, 0.25, 0.15};
  double u = rng.unit();
  std::size_t level = 0;
  while (level + 1 < kShare.size() && u >= kShare[level]) u -= kShare[level++];
  std::array<bool, kRolloutsPerTask> out{};
  for (auto& ok : out) ok = rng.chance(kSkill[level]);
  return out;
}

json::object assistant_message(Rng& rng, const std::string& text) {
  json::object part{{"type", "output_text"},
                    {"text", text},
                    {"annotations", json::array{}},
                    {"logprobs", json::array{}}};
  return json::object{{"id", rng.id("msg_", 48)},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"status", "completed"},
                      {"content", json::array{std::move(part)}}};
}

json::object function_call(Rng& rng, const std::string& name, const std::string& arguments) {
  return json::object{
      {"type", "function_call"},
      {"id", rng.id("fc_", 48)},
      {"call_id",
       rng.id("call_", 24, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")},
      {"name", name},
      {"arguments", arguments},
      {"status", "completed"}};
}

json::object function_call_output(const json::object& call, const std::string& output) {
  return json::object{
      {"type", "function_call_output"}, {"call_id", call.at("call_id")}, {"output", output}};
}

json::object input_message(const std::string& role, const std::string& text) {
  return json::object{{"type", "message"}, {"role", role}, {"content", text}};
}

namespace {

// About four characters per token, plus a few tokens of framing per item.
std::int64_t tokens(std::size_t chars) { return static_cast<std::int64_t>((chars + 3) / 4) + 4; }

std::int64_t item_tokens(const json::object& item) {
  std::size_t chars = 0;
  for (const char* key : {"name", "arguments", "output"})
    if (const auto* v = item.if_contains(key); v && v->is_string()) chars += v->get_string().size();
  if (const auto* content = item.if_contains("content")) {
    if (content->is_string()) chars += content->get_string().size();
    if (content->is_array())
      for (const auto& part : content->get_array())
        if (const auto* t = part.as_object().if_contains("text")) chars += t->get_string().size();
  }
  return tokens(chars);
}

}  // namespace

json::object usage_of(const json::object& params, const json::array& output) {
  std::int64_t context = 0;  // tokens every model turn reads before its own output
  for (const auto& item : params.at("input").get_array()) context += item_tokens(item.as_object());
  if (const auto* tools = params.if_contains("tools"))
    context += tokens(core::render_json(*tools).size());

  std::int64_t input = 0, cached = 0, generated = 0, turn_output = 0, previous_turn_input = 0;
  bool in_turn = false;
  auto finish_turn = [&] {
    // The prompt cache holds what the previous turn read, in blocks of 64 tokens.
    cached += previous_turn_input / 64 * 64;
    previous_turn_input = context;
    input += context;
    generated += turn_output;
    context += turn_output;
    in_turn = false;
  };
  for (const auto& v : output) {
    const auto& item = v.as_object();
    if (item.at("type") == "function_call_output") {
      if (in_turn) finish_turn();
      context += item_tokens(item);
    } else {
      if (!in_turn) in_turn = true, turn_output = 0;
      turn_output += item_tokens(item);
    }
  }
  if (in_turn) finish_turn();
  return json::object{{"input_tokens", input},
                      {"input_tokens_details", json::object{{"cached_tokens", cached}}},
                      {"output_tokens", generated},
                      {"output_tokens_details", json::object{{"reasoning_tokens", 0}}},
                      {"total_tokens", input + generated}};
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

}  // namespace gym::demo_data
