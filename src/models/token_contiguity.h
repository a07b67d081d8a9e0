#pragma once
// vllm_model's on-policy check (a gym-cpp extension beyond NeMo Gym,
// docs/reference/model-servers.md): with token ids, each turn's prompt must extend the tokens of
// the turn before, its prompt_token_ids followed by its generation_token_ids. When it does not, the
// trainer would learn from tokens the model never saw in that order (typically a chat template that
// drops earlier turns' reasoning), so the break is counted, logged and, with
// `on_token_contiguity_break: fail`, fails the turn. Pure functions; the model server owns the
// metric, the log and the answer.
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace gym::models {

struct TokenContiguityBreak {
  std::size_t message_index = 0;  // the assistant message of the previous turn in `messages`
  std::size_t token_index = 0;    // the first index of the prompt that differs (or where it ends)
  std::string description;        // what broke, for the log and the 400
};

// Checks `prompt_token_ids` (this turn's prompt, as the engine tokenised it) against the last
// assistant message of `messages` (the chat messages sent for this turn) that carries both
// prompt_token_ids and generation_token_ids: the prompt must start with those two lists joined.
// nullopt when it does, or when no message carries token ids (a first turn). Lists that are not
// lists of integers break at their first such entry.
std::optional<TokenContiguityBreak> find_token_contiguity_break(
    const boost::json::array& messages, const boost::json::value& prompt_token_ids);

// At most one log line per `every`: admit() says whether a line may be written now and, when it
// may, how many were held back since the last one. Thread-safe.
class LogRateLimit {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogRateLimit(Clock::duration every) : every_(every) {}
  // The number suppressed since the last admitted line when one may be written at `now`;
  // nullopt (and one more suppressed) otherwise.
  std::optional<std::uint64_t> admit(Clock::time_point now);

 private:
  std::mutex mu_;
  Clock::duration every_;
  std::optional<Clock::time_point> last_;
  std::uint64_t suppressed_ = 0;
};

}  // namespace gym::models
