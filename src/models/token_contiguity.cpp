#include "models/token_contiguity.h"

#include <boost/json.hpp>

#include <limits>

namespace gym::models {
namespace json = boost::json;

namespace {

// A token id: an integer JSON number (int64, or a uint64 that fits).
std::optional<std::int64_t> token_id(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v.get_uint64());
  return std::nullopt;
}

std::string text_of(const json::value& v) {
  if (auto id = token_id(v)) return std::to_string(*id);
  return json::serialize(v);
}

bool is_assistant(const json::object& m) {
  const auto* role = m.if_contains("role");
  return role && role->is_string() && role->get_string() == "assistant";
}

}  // namespace

std::optional<TokenContiguityBreak> find_token_contiguity_break(
    const json::array& messages, const json::value& prompt_token_ids) {
  const json::array* prev_prompt = nullptr;
  const json::array* prev_generated = nullptr;
  std::size_t at = messages.size();
  while (at-- > 0) {
    const auto* m = messages[at].if_object();
    if (!m || !is_assistant(*m)) continue;
    const auto* p = m->if_contains("prompt_token_ids");
    const auto* g = m->if_contains("generation_token_ids");
    if (p && p->is_array() && g && g->is_array()) {
      prev_prompt = &p->get_array();
      prev_generated = &g->get_array();
      break;
    }
  }
  if (!prev_prompt) return std::nullopt;

  TokenContiguityBreak found;
  found.message_index = at;
  auto previous = [&] {
    return "the previous turn's (messages[" + std::to_string(at) + "]) prompt_token_ids (" +
           std::to_string(prev_prompt->size()) + ") + generation_token_ids (" +
           std::to_string(prev_generated->size()) + ")";
  };
  const auto* prompt = prompt_token_ids.if_array();
  if (!prompt) {
    found.description =
        "this turn's prompt_token_ids is not a list, so it cannot extend " + previous();
    return found;
  }
  const std::size_t expected_size = prev_prompt->size() + prev_generated->size();
  auto expected_at = [&](std::size_t i) -> const json::value& {
    return i < prev_prompt->size() ? (*prev_prompt)[i] : (*prev_generated)[i - prev_prompt->size()];
  };
  // Every turn of a training rollout runs this: compare without allocating, describe only a
  // break.
  std::size_t i = 0;
  for (; i < expected_size && i < prompt->size(); ++i) {
    const auto want = token_id(expected_at(i));
    const auto got = token_id((*prompt)[i]);
    if (!want || !got || *want != *got) break;
  }
  if (i == expected_size) return std::nullopt;

  const bool in_prompt = i < prev_prompt->size();
  const std::string where =
      in_prompt ? "prompt_token_ids[" + std::to_string(i) + "]"
                : "generation_token_ids[" + std::to_string(i - prev_prompt->size()) + "]";
  found.token_index = i;
  if (i >= prompt->size()) {
    found.description = "this turn's prompt_token_ids has " + std::to_string(prompt->size()) +
                        " tokens, fewer than the " + std::to_string(expected_size) + " of " +
                        previous() + ": it ends before the previous turn's " + where;
    return found;
  }
  const auto want = token_id(expected_at(i));
  const auto got = token_id((*prompt)[i]);
  if (!want || !got) {
    found.description = "token " + std::to_string(i) + " is not an integer id (this turn's " +
                        text_of((*prompt)[i]) + ", the previous turn's " + where + " " +
                        text_of(expected_at(i)) + ")";
    return found;
  }
  found.description =
      "this turn's prompt_token_ids[" + std::to_string(i) + "] is " + std::to_string(*got) +
      " where the previous turn's " + where + " is " + std::to_string(*want) + ": the prompt (" +
      std::to_string(prompt->size()) + " tokens) does not start with " + previous() +
      (in_prompt ? "; the history of an earlier turn was rendered differently"
                 : "; the chat template does not reproduce what the model generated (e.g. it "
                   "drops the reasoning of earlier turns)");
  return found;
}

std::optional<std::uint64_t> LogRateLimit::admit(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (last_ && now - *last_ < every_) {
    ++suppressed_;
    return std::nullopt;
  }
  last_ = now;
  const auto held = suppressed_;
  suppressed_ = 0;
  return held;
}

}  // namespace gym::models
