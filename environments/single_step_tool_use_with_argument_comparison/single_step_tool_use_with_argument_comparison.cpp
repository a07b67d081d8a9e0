#include "core/config.h"
#include "core/json_text.h"
#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::py_type_name;

namespace {

// StepRewardCategory: the values are upstream's, since verify answers carry them.
namespace category {
constexpr std::string_view kNoActionFound =
    "No tool call or chat message was found in the response";
constexpr std::string_view kNoExpectedToolCall = "No tool call was found when one was expected";
constexpr std::string_view kExpectedChatMessageFound = "A chat message was found as expected";
constexpr std::string_view kNoExpectedChatMessage =
    "A tool call was executed when a chat message was expected";
constexpr std::string_view kUnexpectedTool = "The tool in a tool call is not the expected tool";
constexpr std::string_view kArgumentsDecodeError =
    "An error occurred when decoding the arguments string in a tool call as a JSON object";
constexpr std::string_view kArgumentValueTypeDifferent =
    "The type of an argument value in a tool call is different than the expected type";
constexpr std::string_view kArgumentObjectKeysDifferent =
    "The keys in an object in an argument value in a tool call are different than the keys in "
    "the expected object";
constexpr std::string_view kArgumentListLengthDifferent =
    "A list in an argument value in a tool call has a different length than the expected list";
constexpr std::string_view kArgumentValueDifferent =
    "An argument value in a tool call is different than the expected value";
constexpr std::string_view kExpectedToolCall =
    "A tool call that matches the expected tool call was found";
constexpr std::string_view kBatchLengthDifferent =
    "The number of tool calls in a batch is different than expected";
constexpr std::string_view kExpectedToolCallBatch =
    "A tool-call batch that matches the expected tool calls was found";
}  // namespace category

enum class RewardMode { binary_strict, fractional, f1 };

// tool_call_comparator_config (ToolCallComparatorConfig), read once at startup.
struct ComparatorConfig {
  double word_count_similarity_threshold = 0.0;  // required
  double floating_point_comparison_threshold = 1e-6;
  bool parallel_tool_call_rewarding = false;
  bool allow_subset = false;
  bool allow_superset = false;
  RewardMode mode = RewardMode::binary_strict;
};

ComparatorConfig read_config(const json::object& instance) {
  constexpr std::string_view kKey = "tool_call_comparator_config";
  const auto* section = instance.if_contains(kKey);
  if (!section || !section->is_object())
    throw core::ConfigError(
        "single_step_tool_use_with_argument_comparison needs `tool_call_comparator_config` with "
        "at least `word_count_similarity_threshold` (e.g. "
        "++<instance>.resources_servers.single_step_tool_use_with_argument_comparison."
        "tool_call_comparator_config.word_count_similarity_threshold=0.1)");
  const auto* threshold = section->get_object().if_contains("word_count_similarity_threshold");
  if (!threshold || threshold->is_null())
    throw core::ConfigError(
        "tool_call_comparator_config.word_count_similarity_threshold is required (a float, "
        "upstream's presets use 0.1)");
  constexpr double kBig = 1e308;
  ComparatorConfig c;
  c.word_count_similarity_threshold = core::get_double(
      instance, "tool_call_comparator_config.word_count_similarity_threshold", 0.0, -kBig, kBig);
  c.floating_point_comparison_threshold =
      core::get_double(instance, "tool_call_comparator_config.floating_point_comparison_threshold",
                       1e-6, -kBig, kBig);
  c.parallel_tool_call_rewarding =
      core::get_bool(instance, "tool_call_comparator_config.parallel_tool_call_rewarding", false);
  c.allow_subset = core::get_bool(instance, "tool_call_comparator_config.allow_subset", false);
  c.allow_superset = core::get_bool(instance, "tool_call_comparator_config.allow_superset", false);
  std::string mode = core::get_string(
      instance, "tool_call_comparator_config.parallel_tool_call_reward_mode", "binary_strict");
  if (mode == "binary_strict") {
    c.mode = RewardMode::binary_strict;
  } else if (mode == "fractional") {
    c.mode = RewardMode::fractional;
  } else if (mode == "f1") {
    c.mode = RewardMode::f1;
  } else {
    throw core::ConfigError(
        "tool_call_comparator_config.parallel_tool_call_reward_mode must be binary_strict, "
        "fractional or f1, not '" +
        mode + "'");
  }
  return c;
}

// ---- actions -----------------------------------------------------------------------------------

struct Call {
  std::string name;
  std::string arguments;
};

// MessageAction, FunctionCallAction or FunctionCallBatchAction (a single call is kept apart from
// a batch of one: only the latter is a batch).
struct Action {
  enum class Kind { message, function_call, batch } kind = Kind::message;
  std::string content;      // message
  std::vector<Call> calls;  // function_call: exactly one
};

// ---- expected_action: the discriminated union, validated as pydantic does ---------------------

class ActionValidator {
 public:
  json::array errors;

  // The action and its model_dump() (declared fields only, in declaration order).
  std::optional<std::pair<Action, json::object>> validate(const json::value& v) {
    json::array loc{"body", "expected_action"};
    const auto* o = v.if_object();
    if (!o) {
      fail(loc, "dict_type", "Input should be a valid dictionary", v);
      return std::nullopt;
    }
    const auto* tag = o->if_contains("type");
    if (!tag) {
      json::object ctx{{"discriminator", "'type'"}};
      fail(loc, "union_tag_not_found", "Unable to extract tag using discriminator 'type'", v, &ctx);
      return std::nullopt;
    }
    std::string tag_text =
        tag->is_string() ? std::string(tag->get_string()) : core::render_json(*tag);
    static constexpr std::string_view kTags = "'message', 'function_call', 'function_call_batch'";
    Action action;
    json::object dump;
    if (tag_text == "message" && tag->is_string()) {
      loc.emplace_back("message");
      auto content = string_field(*o, "content", loc);
      if (!content) return std::nullopt;
      action.kind = Action::Kind::message;
      action.content = *content;
      dump = {{"type", "message"}, {"content", *content}};
    } else if (tag_text == "function_call" && tag->is_string()) {
      loc.emplace_back("function_call");
      auto call = call_fields(*o, loc, false);
      if (!call) return std::nullopt;
      action.kind = Action::Kind::function_call;
      action.calls.push_back(*call);
      dump = call_dump(*call);
    } else if (tag_text == "function_call_batch" && tag->is_string()) {
      loc.emplace_back("function_call_batch");
      auto batch = batch_fields(*o, loc);
      if (!batch) return std::nullopt;
      action.kind = Action::Kind::batch;
      json::array calls;
      for (const auto& c : *batch) calls.push_back(call_dump(c));
      action.calls = std::move(*batch);
      dump = {{"type", "function_call_batch"}, {"calls", std::move(calls)}};
    } else {
      json::object ctx{{"discriminator", "'type'"}, {"tag", tag_text}, {"expected_tags", kTags}};
      fail(
          loc, "union_tag_invalid",
          "Input tag '" + tag_text +
              "' found using 'type' does not match any of the expected tags: " + std::string(kTags),
          v, &ctx);
      return std::nullopt;
    }
    return std::pair{std::move(action), std::move(dump)};
  }

 private:
  void fail(const json::array& loc, std::string_view type, std::string_view msg,
            const json::value& input, const json::object* ctx = nullptr) {
    json::object e{{"type", type}, {"loc", loc}, {"msg", msg}, {"input", input}};
    if (ctx) e["ctx"] = *ctx;
    errors.push_back(std::move(e));
  }

  std::optional<std::string> string_field(const json::object& o, std::string_view key,
                                          const json::array& at) {
    json::array loc = at;
    loc.emplace_back(key);
    const auto* v = o.if_contains(key);
    if (!v) {
      fail(loc, "missing", "Field required", o);
      return std::nullopt;
    }
    if (!v->is_string()) {
      fail(loc, "string_type", "Input should be a valid string", *v);
      return std::nullopt;
    }
    return std::string(v->get_string());
  }

  // FunctionCallAction's fields; inside a batch its `type` is checked against the literal.
  std::optional<Call> call_fields(const json::object& o, const json::array& loc, bool check_type) {
    bool ok = true;
    if (check_type) {
      json::array type_loc = loc;
      type_loc.emplace_back("type");
      const auto* type = o.if_contains("type");
      if (!type) {
        fail(type_loc, "missing", "Field required", o);
        ok = false;
      } else if (*type != "function_call") {
        json::object ctx{{"expected", "'function_call'"}};
        fail(type_loc, "literal_error", "Input should be 'function_call'", *type, &ctx);
        ok = false;
      }
    }
    auto name = string_field(o, "name", loc);
    auto arguments = string_field(o, "arguments", loc);
    if (!ok || !name || !arguments) return std::nullopt;
    return Call{*name, *arguments};
  }

  std::optional<std::vector<Call>> batch_fields(const json::object& o, const json::array& at) {
    json::array loc = at;
    loc.emplace_back("calls");
    const auto* v = o.if_contains("calls");
    if (!v) {
      fail(loc, "missing", "Field required", o);
      return std::nullopt;
    }
    if (!v->is_array()) {
      fail(loc, "list_type", "Input should be a valid list", *v);
      return std::nullopt;
    }
    std::vector<Call> calls;
    bool ok = true;
    const auto& items = v->get_array();
    for (std::size_t i = 0; i < items.size(); ++i) {
      json::array item_loc = loc;
      item_loc.emplace_back(static_cast<std::int64_t>(i));
      const auto* call = items[i].if_object();
      if (!call) {
        json::object ctx{{"class_name", "FunctionCallAction"}};
        fail(item_loc, "model_type",
             "Input should be a valid dictionary or instance of FunctionCallAction", items[i],
             &ctx);
        ok = false;
        continue;
      }
      auto c = call_fields(*call, item_loc, true);
      if (c) calls.push_back(*c);
      ok = ok && c.has_value();
    }
    if (ok && calls.empty()) {
      json::object ctx{{"field_type", "List"}, {"min_length", 1}, {"actual_length", 0}};
      fail(loc, "too_short", "List should have at least 1 item after validation, not 0", *v, &ctx);
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
    return calls;
  }

  static json::object call_dump(const Call& c) {
    return {{"type", "function_call"}, {"name", c.name}, {"arguments", c.arguments}};
  }
};

// ---- extract_action (common/response_utils.py) ---------------------------------------------

// Every function_call of the response (one is a single call, several a batch); else the first
// output_text of the first assistant message that has one; else nothing.
std::optional<Action> extract_action(const json::array& output) {
  std::vector<Call> calls;
  std::optional<std::string> text;
  for (const auto& v : output) {
    const auto* item = v.if_object();
    const auto* type = item ? item->if_contains("type") : nullptr;
    if (!type) continue;
    if (*type == "function_call") {
      const auto* name = item->if_contains("name");
      const auto* arguments = item->if_contains("arguments");
      if (!name || !name->is_string() || !arguments || !arguments->is_string())
        throw python_compat::ValueError(
            "1 validation error for FunctionCallAction: name and arguments must be strings");
      calls.push_back({std::string(name->get_string()), std::string(arguments->get_string())});
    } else if (*type == "message" && !text) {
      const auto* role = item->if_contains("role");
      if (!role || *role != "assistant") continue;
      const auto* content = item->if_contains("content");
      if (!content) continue;
      if (content->is_string()) {
        // Iterating a str content yields characters, which have no `.type`.
        if (!content->get_string().empty())
          throw python_compat::AttributeError("'str' object has no attribute 'type'");
        continue;
      }
      if (!content->is_array()) continue;
      for (const auto& p : content->get_array()) {
        const auto* part = p.if_object();
        const auto* part_type = part ? part->if_contains("type") : nullptr;
        if (part_type && *part_type == "output_text") {
          const auto* t = part->if_contains("text");
          text = t && t->is_string() ? std::string(t->get_string()) : std::string();
          break;
        }
        if (part_type && *part_type == "refusal") continue;
        // An input message's parts are plain dicts: `.type` raises.
        throw python_compat::AttributeError("'dict' object has no attribute 'type'");
      }
    }
  }
  if (calls.size() == 1) return Action{Action::Kind::function_call, "", std::move(calls)};
  if (!calls.empty()) return Action{Action::Kind::batch, "", std::move(calls)};
  if (text) return Action{Action::Kind::message, *text, {}};
  return std::nullopt;
}

// ---- ActionComparator (common/verification_utils.py) ------------------------------------------

struct Result {
  double reward;
  std::string_view category;
};

class Comparator {
 public:
  explicit Comparator(const ComparatorConfig& config) : config_(config) {}

  Result compare_action(const Action& expected, const Action& actual) const {
    if (expected.kind == Action::Kind::message) {
      if (actual.kind == Action::Kind::message) return {1.0, category::kExpectedChatMessageFound};
      return {0.0, category::kNoExpectedChatMessage};
    }
    if (actual.kind == Action::Kind::message) return {0.0, category::kNoExpectedToolCall};
    return compare_tool_calls(expected.calls, actual.calls);
  }

 private:
  // A match of expected calls to actual ones that is maximum, found with Kuhn's augmenting
  // paths, most constrained expected call first (ties in index order).
  static std::map<std::size_t, std::size_t> maximum_matching(
      const std::vector<std::vector<std::size_t>>& candidates) {
    std::map<std::size_t, std::size_t> matching;  // actual -> expected
    std::vector<std::size_t> order(candidates.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return candidates[a].size() < candidates[b].size();
    });
    for (std::size_t expected : order) {
      std::set<std::size_t> visited;
      augment(expected, candidates, matching, visited);
    }
    return matching;
  }

  static bool augment(std::size_t expected, const std::vector<std::vector<std::size_t>>& candidates,
                      std::map<std::size_t, std::size_t>& matching,
                      std::set<std::size_t>& visited) {
    for (std::size_t actual : candidates[expected]) {
      if (!visited.insert(actual).second) continue;
      auto it = matching.find(actual);
      if (it == matching.end() || augment(it->second, candidates, matching, visited)) {
        matching[actual] = expected;
        return true;
      }
    }
    return false;
  }

  Result compare_tool_calls(const std::vector<Call>& expected,
                            const std::vector<Call>& actual) const {
    std::size_t e = expected.size();
    std::size_t a = actual.size();
    if (e == 1 && a == 1) return compare_tool_call(expected[0], actual[0]);
    if (!admissible(e, a)) return {0.0, category::kBatchLengthDifferent};

    std::vector<std::vector<std::size_t>> candidates;
    std::vector<std::string_view> failures;
    for (const auto& want : expected) {
      std::vector<std::size_t> matches;
      std::string_view failure = category::kUnexpectedTool;
      for (std::size_t i = 0; i < actual.size(); ++i) {
        Result r = compare_tool_call(want, actual[i]);
        if (r.reward == 1.0) {
          matches.push_back(i);
        } else if (failure == category::kUnexpectedTool) {
          failure = r.category;  // the first reason that got past the tool name
        }
      }
      candidates.push_back(std::move(matches));
      failures.push_back(failure);
    }
    auto matching = maximum_matching(candidates);
    double reward = score(matching.size(), e, a);
    if (reward == 1.0)
      return {reward, e == 1 ? category::kExpectedToolCall : category::kExpectedToolCallBatch};

    std::set<std::size_t> matched;
    for (const auto& kv : matching) matched.insert(kv.second);
    std::optional<std::size_t> first_unmatched;
    for (std::size_t i = 0; i < e && !first_unmatched; ++i)
      if (!matched.contains(i)) first_unmatched = i;
    if (!first_unmatched || matched.size() == a) return {reward, category::kBatchLengthDifferent};
    return {reward, failures[*first_unmatched]};
  }

  bool admissible(std::size_t e, std::size_t a) const {
    if (a == e || !config_.parallel_tool_call_rewarding) return true;
    return a < e ? config_.allow_subset : config_.allow_superset;
  }

  double score(std::size_t matched, std::size_t e, std::size_t a) const {
    auto m = static_cast<double>(matched);
    if (!config_.parallel_tool_call_rewarding) return matched == e ? 1.0 : 0.0;
    if (config_.mode == RewardMode::f1) {
      std::size_t total = e + a;
      return total ? 2.0 * m / static_cast<double>(total) : 0.0;
    }
    std::size_t required = config_.allow_subset ? std::min(e, a) : e;
    if (config_.mode == RewardMode::fractional)
      return required ? m / static_cast<double>(required) : 0.0;
    return matched == required ? 1.0 : 0.0;
  }

  Result compare_tool_call(const Call& expected, const Call& actual) const {
    if (expected.name != actual.name) return {0.0, category::kUnexpectedTool};
    // The expected arguments are trusted to be JSON: when they are not, verify fails (500).
    json::value expected_args = python_compat::py_json_loads(expected.arguments);
    json::value actual_args;
    try {
      actual_args = python_compat::py_json_loads(actual.arguments);
    } catch (const python_compat::JSONDecodeError&) {
      return {0.0, category::kArgumentsDecodeError};
    }
    auto difference = compare_arguments(expected_args, actual_args);
    if (!difference) return {1.0, category::kExpectedToolCall};
    return {0.0, *difference};
  }

  // isinstance(actual, type(expected)): a bool is also an int.
  static bool same_type(const json::value& expected, const json::value& actual) {
    std::string e = py_type_name(expected);
    std::string a = py_type_name(actual);
    return e == a || (e == "int" && a == "bool");
  }

  static std::vector<std::string> words(std::string_view s) {
    return python_compat::py_split(python_compat::py_lower(python_compat::py_strip(s)));
  }

  // The first difference found, depth first in the expected value's order; nullopt for a match.
  std::optional<std::string_view> compare_arguments(const json::value& expected,
                                                    const json::value& actual) const {
    if (!same_type(expected, actual)) return category::kArgumentValueTypeDifferent;
    if (expected.is_object()) {
      const auto& e = expected.get_object();
      const auto& a = actual.get_object();
      bool same_keys = e.size() == a.size();
      for (const auto& kv : e) same_keys = same_keys && a.contains(kv.key());
      if (!same_keys) return category::kArgumentObjectKeysDifferent;
      for (const auto& kv : e)
        if (auto d = compare_arguments(kv.value(), a.at(kv.key()))) return d;
      return std::nullopt;
    }
    if (expected.is_array()) {
      const auto& e = expected.get_array();
      const auto& a = actual.get_array();
      if (e.size() != a.size()) return category::kArgumentListLengthDifferent;
      for (std::size_t i = 0; i < e.size(); ++i)
        if (auto d = compare_arguments(e[i], a[i])) return d;
      return std::nullopt;
    }
    if (expected.is_double()) {
      if (std::fabs(actual.get_double() - expected.get_double()) <
          config_.floating_point_comparison_threshold)
        return std::nullopt;
      return category::kArgumentValueDifferent;
    }
    if (expected.is_string()) {
      std::string_view e = expected.get_string();
      std::string_view a = actual.get_string();
      auto expected_words = words(e);
      auto actual_words = words(a);
      if (expected_words.size() < 2 || actual_words.size() < 2) {
        if (e != a) return category::kArgumentValueDifferent;
        return std::nullopt;
      }
      // Counter(expected) & Counter(actual): the multiset intersection.
      std::map<std::string, std::size_t> counts;
      for (const auto& w : expected_words) ++counts[w];
      std::size_t common = 0;
      for (const auto& w : actual_words) {
        auto it = counts.find(w);
        if (it != counts.end() && it->second > 0) {
          --it->second;
          ++common;
        }
      }
      double similarity = static_cast<double>(common) /
                          static_cast<double>(expected_words.size() + actual_words.size());
      if (similarity < config_.word_count_similarity_threshold)
        return category::kArgumentValueDifferent;
      return std::nullopt;
    }
    if (python_compat::json_equal(expected, actual, python_compat::BoolRule::as_integers))
      return std::nullopt;
    return category::kArgumentValueDifferent;
  }

  ComparatorConfig config_;
};

json::object verify(const json::object& row, const Action& expected, json::object expected_dump,
                    const Comparator& comparator) {
  auto actual = extract_action(row.at("response").at("output").get_array());
  Result result =
      actual ? comparator.compare_action(expected, *actual) : Result{0.0, category::kNoActionFound};
  json::object out = servers::verify_response(row, result.reward);
  out["expected_action"] = std::move(expected_dump);
  out["category"] = result.category;
  return out;
}

}  // namespace

// SingleStepToolUseArgumentComparisonResourcesServer (upstream
// resources_servers/single_step_tool_use_with_argument_comparison): one next action of an expert
// trajectory, a tool call (or a batch of calls) or a chat message; tool calls are compared
// argument by argument. No tool routes.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment single_step_tool_use_with_argument_comparison_environment() {
  return {
      "single_step_tool_use_with_argument_comparison",
      "SingleStepToolUseArgumentComparisonResourcesServer",
      [](servers::ServerContext& ctx, http::Router&) -> servers::VerifyRoute {
        auto comparator = std::make_shared<const Comparator>(read_config(ctx.instance.config));
        auto verify_schema = servers::verify_request_schema({
            {"expected_action", Schema::of(Schema::Kind::any), true},
        });
        return {[comparator](Request&, json::value& body) -> asio::awaitable<Response> {
                  ActionValidator validator;
                  auto expected = validator.validate(body.at("expected_action"));
                  if (!expected) co_return Response::detail(422, validator.errors);
                  co_return Response::json(verify(body.get_object(), expected->first,
                                                  std::move(expected->second), *comparator));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
