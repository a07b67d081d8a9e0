#pragma once
// OpenAI Responses <-> Chat Completions, as NeMo Gym's vllm_model converts them
// (docs/reference/model-servers.md has the table). Pure functions over JSON: no I/O, no config.
//
// Request: Responses create params -> Chat Completions create params (input items become
// messages; reasoning items become <think> text of the next assistant message; function calls
// and their outputs become tool_calls and tool messages; instructions a leading system message).
// Answer: chat.completion -> Response (<think> text becomes reasoning items when a reasoning
// parser runs, tool_calls become function_call items, finish_reason the status).
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gym::models {

// The input cannot be converted (an item type Chat Completions has no form for, a tool_choice
// of "required" without tools, partial token ids). The message says what and what to do; the
// model server answers it as a 400.
class ConversionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct ConversionOptions {
  // Carry prompt_token_ids / generation_token_ids / generation_log_probs between assistant
  // messages and output items (RL training).
  bool return_token_id_information = false;
  // The endpoint separates reasoning (reasoning_content), so <think> text in an answer is
  // reasoning; without a parser the text stays in the message.
  bool uses_reasoning_parser = true;
};

// Responses create params as received (only the fields the caller set) -> Chat Completions
// create params. Throws ConversionError.
boost::json::object responses_to_chat_params(const boost::json::object& params,
                                             const ConversionOptions& options);

// The output items of one assistant chat message: a reasoning item (from <think> text, with a
// reasoning parser), a message (its text or refusal; also when nothing else came back), and a
// function_call per tool call; token ids, when asked for and present, on the last item.
boost::json::array assistant_message_to_items(const boost::json::object& message,
                                              const ConversionOptions& options);

// A chat.completion -> the Response of `params` (the create params as received; `model` is
// the Response's model).
boost::json::object chat_completion_to_response(const boost::json::object& params,
                                                const boost::json::object& completion,
                                                const ConversionOptions& options);

// Every <think>...</think> span of `text` (in order) and the text with them removed.
struct ThinkSplit {
  std::vector<std::string> reasoning;
  std::string rest;
};
ThinkSplit split_think_tags(std::string_view text);
// "<think>a</think><think>b</think>" of the non-empty texts.
std::string wrap_in_think_tags(const std::vector<std::string>& texts);

// "<prefix>_" + 32 random hex digits, like upstream's f"{prefix}_{uuid4().hex}".
std::string random_item_id(std::string_view prefix);

}  // namespace gym::models
