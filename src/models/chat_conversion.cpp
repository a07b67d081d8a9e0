#include "models/chat_conversion.h"

#include <boost/json.hpp>

#include <array>
#include <optional>
#include <random>

namespace gym::models {
namespace json = boost::json;

namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::array<std::string_view, 3> kTokenFields{"prompt_token_ids", "generation_token_ids",
                                                       "generation_log_probs"};

std::string_view string_or_empty(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

const json::value* present(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

// The token ids of an item or message: none, or all three lists (upstream refuses a partial set).
// `routed_experts` travels with them when present.
std::optional<json::object> token_information(const json::object& o, std::string_view where) {
  std::size_t found = 0;
  for (auto f : kTokenFields) found += o.contains(f) ? 1 : 0;
  if (found == 0) return std::nullopt;
  json::object info;
  for (auto f : kTokenFields) {
    const auto* v = o.if_contains(f);
    if (!v)
      throw ConversionError(std::string(where) +
                            " has partial token metadata: prompt_token_ids, generation_token_ids "
                            "and generation_log_probs go together; missing " +
                            std::string(f));
    if (!v->is_array())
      throw ConversionError(std::string(where) + "." + std::string(f) + " must be a list");
    info[f] = *v;
  }
  if (const auto* experts = present(o, "routed_experts")) info["routed_experts"] = *experts;
  return info;
}

// Messages built so far, and the assistant turn being assembled: consecutive reasoning, message
// and function_call items of the model form one assistant message.
struct ChatBuilder {
  const ConversionOptions& options;
  json::array messages;
  std::string content;
  std::string refusal;
  json::array tool_calls;
  bool assistant_buffered = false;
  std::optional<json::object> tokens;

  void flush_assistant() {
    if (!(assistant_buffered || !content.empty() || !tool_calls.empty() || !refusal.empty())) {
      tokens.reset();
      return;
    }
    json::object m;
    m["content"] = content.empty() ? json::value(nullptr) : json::value(json::string(content));
    m["role"] = "assistant";
    if (!refusal.empty()) m["refusal"] = refusal;
    // Omitted rather than empty: OpenAI rejects `tool_calls: []`.
    if (!tool_calls.empty()) m["tool_calls"] = std::move(tool_calls);
    if (options.return_token_id_information && tokens)
      for (auto& [k, v] : *tokens) m[k] = v;
    messages.push_back(std::move(m));
    content.clear();
    refusal.clear();
    tool_calls = {};
    assistant_buffered = false;
    tokens.reset();
  }

  void add_tool_call(std::string_view id, std::string_view name, const json::value& arguments) {
    json::object fn;
    fn["arguments"] = arguments;
    fn["name"] = name;
    json::object call;
    call["id"] = id;
    call["function"] = std::move(fn);
    call["type"] = "function";
    tool_calls.push_back(std::move(call));
  }
};

std::string at_item(std::size_t i) { return "input[" + std::to_string(i) + "]"; }

// input_text / input_image / input_video parts of a non-assistant message -> chat parts.
json::array chat_parts(const json::array& parts, const std::string& where) {
  json::array out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto* part = parts[i].if_object();
    const std::string here = where + ".content[" + std::to_string(i) + "]";
    if (!part) throw ConversionError(here + " must be an object");
    const auto type = string_or_empty(*part, "type");
    json::object c;
    if (type == "input_text") {
      c["type"] = "text";
      c["text"] = part->contains("text") ? part->at("text") : json::value("");
    } else if (type == "input_image") {
      std::string url;
      if (const auto* u = part->if_contains("image_url")) {
        if (u->is_string()) url = u->get_string();
        if (const auto* uo = u->if_object()) url = string_or_empty(*uo, "url");
      }
      if (url.empty()) throw ConversionError(here + ": input_image requires a non-empty image_url");
      json::object image;
      image["url"] = url;
      const auto* detail = present(*part, "detail");
      image["detail"] = detail ? *detail : json::value("auto");
      c["type"] = "image_url";
      c["image_url"] = std::move(image);
    } else if (type == "input_video") {
      const char* key = part->contains("video_url") ? "video_url" : "video";
      std::string url;
      if (const auto* u = part->if_contains(key)) {
        if (u->is_string()) url = u->get_string();
        if (const auto* uo = u->if_object()) url = string_or_empty(*uo, "url");
      }
      if (url.empty())
        throw ConversionError(here + ": input_video." + key + " requires a non-empty URL");
      c["type"] = "video_url";
      c["video_url"] = json::object{{"url", url}};
    } else {
      throw ConversionError(here + ": unsupported content part type '" + std::string(type) +
                            "' (input_text, input_image and input_video convert to Chat "
                            "Completions)");
    }
    out.push_back(std::move(c));
  }
  return out;
}

void add_message(const json::object& m, const std::string& where, ChatBuilder& b) {
  const auto role = string_or_empty(m, "role");
  json::value content = m.contains("content") ? m.at("content") : json::value(nullptr);
  if (role == "assistant") {
    b.assistant_buffered = true;
    if (const auto* parts = content.if_array()) {
      for (const auto& p : *parts)
        if (const auto* po = p.if_object()) {
          b.content += string_or_empty(*po, "text");
          b.refusal += string_or_empty(*po, "refusal");
        }
    } else if (content.is_string()) {
      b.content += content.get_string();
    } else if (!content.is_null()) {
      throw ConversionError(where + ".content must be a string or a list of parts");
    }
    // Chat-shaped assistant turns carry their tool calls inline.
    if (const auto* calls = present(m, "tool_calls"); calls && calls->is_array())
      for (const auto& c : calls->get_array()) {
        const auto* co = c.if_object();
        const auto* fn = co ? co->if_contains("function") : nullptr;
        if (!fn || !fn->is_object())
          throw ConversionError(where + ".tool_calls entries need id and function");
        b.add_tool_call(string_or_empty(*co, "id"), string_or_empty(fn->get_object(), "name"),
                        fn->get_object().contains("arguments") ? fn->get_object().at("arguments")
                                                               : json::value(""));
      }
    return;
  }
  if (role != "user" && role != "system" && role != "developer" && role != "tool")
    throw ConversionError(where + ": unknown message role '" + std::string(role) +
                          "' (user, assistant, system, developer, tool)");
  b.flush_assistant();
  if (const auto* parts = content.if_array()) content = chat_parts(*parts, where);
  json::object out;
  out["content"] = std::move(content);
  out["role"] = role;
  if (role == "tool") out["tool_call_id"] = m.contains("tool_call_id") ? m.at("tool_call_id") : "";
  b.messages.push_back(std::move(out));
}

void add_function_call_output(const json::object& m, const std::string& where, ChatBuilder& b) {
  b.flush_assistant();
  if (!m.contains("call_id")) throw ConversionError(where + ": function_call_output needs call_id");
  json::value content;
  const json::value output = m.contains("output") ? m.at("output") : json::value("");
  if (output.is_string()) {
    content = output;
  } else if (const auto* parts = output.if_array()) {
    json::array converted;
    for (const auto& p : *parts) {
      const auto* po = p.if_object();
      if (!po || string_or_empty(*po, "type") != "input_text")
        throw ConversionError(where +
                              ": a Chat Completions tool message holds only text, but this "
                              "function_call_output has a part that is not input_text");
      converted.push_back(json::object{{"type", "text"}, {"text", po->at("text")}});
    }
    content = std::move(converted);
  } else {
    throw ConversionError(where + ".output must be a string or a list of input_text parts");
  }
  json::object tool;
  tool["content"] = std::move(content);
  tool["role"] = "tool";
  tool["tool_call_id"] = m.at("call_id");
  b.messages.push_back(std::move(tool));
}

void add_item(const json::object& m, std::size_t index, ChatBuilder& b) {
  const std::string where = at_item(index);
  std::string_view type = string_or_empty(m, "type");
  if (type.empty() && m.contains("role")) type = "message";
  if (type == "message") {
    add_message(m, where, b);
  } else if (type == "reasoning") {
    b.assistant_buffered = true;
    std::vector<std::string> texts;
    if (const auto* summary = present(m, "summary"); summary && summary->is_array())
      for (const auto& s : summary->get_array())
        if (const auto* so = s.if_object()) texts.emplace_back(string_or_empty(*so, "text"));
    b.content += wrap_in_think_tags(texts);
  } else if (type == "function_call") {
    b.assistant_buffered = true;
    if (!m.contains("call_id")) throw ConversionError(where + ": function_call needs call_id");
    b.add_tool_call(string_or_empty(m, "call_id"), string_or_empty(m, "name"),
                    m.contains("arguments") ? m.at("arguments") : json::value(""));
  } else if (type == "function_call_output") {
    add_function_call_output(m, where, b);
  } else {
    throw ConversionError(where + ": item type '" + std::string(type) +
                          "' has no Chat Completions form, so this conversation cannot be sent "
                          "to a chat endpoint; use a Responses-native model server (openai_model, "
                          "or vllm_model with is_responses_native: true)");
  }
  if (b.options.return_token_id_information)
    if (auto info = token_information(m, where)) b.tokens = std::move(info);
}

}  // namespace

namespace {

// The plain text of a chat message's content: a string, or the text of its parts.
std::string content_text(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string out;
  if (const auto* parts = content.if_array())
    for (const auto& p : *parts)
      if (const auto* po = p.if_object()) out += string_or_empty(*po, "text");
  return out;
}

// The fields of the Responses create params that Chat Completions has under the same name;
// the others (background, include, max_tool_calls, previous_response_id, prompt, text,
// truncation) have no chat form and are left out, as upstream's chat schema ignores them.
constexpr std::array<std::string_view, 11> kSameNameFields{
    "model",       "metadata",    "parallel_tool_calls", "service_tier", "store",
    "temperature", "tool_choice", "top_logprobs",        "top_p",        "user",
    "stream"};

// Responses names a forced function {"type": "function", "name"}; Chat Completions nests it.
json::value chat_tool_choice(const json::value& choice) {
  const auto* o = choice.if_object();
  if (!o || string_or_empty(*o, "type") != "function" || o->contains("function")) return choice;
  return json::object{{"type", "function"},
                      {"function", json::object{{"name", string_or_empty(*o, "name")}}}};
}

json::array chat_tools(const json::array& tools) {
  json::array out;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const auto* t = tools[i].if_object();
    if (!t) throw ConversionError("tools[" + std::to_string(i) + "] must be an object");
    const auto type = string_or_empty(*t, "type");
    if (!type.empty() && type != "function")
      throw ConversionError("tools[" + std::to_string(i) + "]: tool type '" + std::string(type) +
                            "' has no Chat Completions form (only function tools convert)");
    json::object fn;
    for (const auto& [k, v] : *t)
      if (k != "type" && k != "strict") fn[k] = v;
    out.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

json::object reasoning_item(std::vector<std::string> texts) {
  json::array summary;
  for (auto& t : texts)
    summary.push_back(json::object{{"text", std::move(t)}, {"type", "summary_text"}});
  json::object item;
  item["id"] = random_item_id("rs");
  item["summary"] = std::move(summary);
  item["type"] = "reasoning";
  item["encrypted_content"] = nullptr;
  item["status"] = "completed";
  return item;
}

json::object output_message(json::array content) {
  json::object item;
  item["id"] = random_item_id("msg");
  item["content"] = std::move(content);
  item["role"] = "assistant";
  item["status"] = "completed";
  item["type"] = "message";
  return item;
}

json::object output_text(std::string text) {
  json::object part;
  part["annotations"] = json::array();
  part["text"] = std::move(text);
  part["type"] = "output_text";
  part["logprobs"] = nullptr;
  return part;
}

// A provider's token count: a non-negative integer, else none (never coerced to 0).
json::value token_count(const json::value* v) {
  if (v && v->is_int64() && v->get_int64() >= 0) return *v;
  if (v && v->is_uint64()) return *v;
  return nullptr;
}

// usage.<group>.<name>, else the first of the top-level aliases providers use.
json::value usage_detail(const json::object& usage, std::string_view group, std::string_view name,
                         std::initializer_list<std::string_view> aliases) {
  if (const auto* g = present(usage, group); g && g->is_object())
    if (auto v = token_count(g->get_object().if_contains(name)); !v.is_null()) return v;
  for (auto alias : aliases)
    if (auto v = token_count(usage.if_contains(alias)); !v.is_null()) return v;
  return nullptr;
}

json::value response_usage(const json::object& completion) {
  const auto* u = present(completion, "usage");
  if (!u || !u->is_object()) return nullptr;
  const auto& usage = u->get_object();
  json::object out;
  out["input_tokens"] = token_count(usage.if_contains("prompt_tokens"));
  out["input_tokens_details"] = json::object{
      {"cached_tokens", usage_detail(usage, "prompt_tokens_details", "cached_tokens",
                                     {"cached_input_tokens", "cache_read_input_tokens"})}};
  out["output_tokens"] = token_count(usage.if_contains("completion_tokens"));
  out["output_tokens_details"] = json::object{
      {"reasoning_tokens", usage_detail(usage, "completion_tokens_details", "reasoning_tokens",
                                        {"reasoning_output_tokens"})}};
  // Provider totals may count differently from prompt + completion: taken as given.
  out["total_tokens"] = token_count(usage.if_contains("total_tokens"));
  return out;
}

const json::value& param_or(const json::object& params, std::string_view key,
                            const json::value& fallback) {
  const auto* v = params.if_contains(key);
  return v && !v->is_null() ? *v : fallback;
}

}  // namespace

json::object responses_to_chat_params(const json::object& params,
                                      const ConversionOptions& options) {
  ChatBuilder b{options, {}, {}, {}, {}, false, std::nullopt};
  const auto* input = params.if_contains("input");
  if (!input || input->is_null()) throw ConversionError("input is required");
  if (input->is_string()) {
    json::object part{{"text", input->get_string()}, {"type", "input_text"}};
    json::object wrapped{{"content", json::array{part}}, {"role", "user"}, {"type", "message"}};
    add_item(wrapped, 0, b);
  } else if (const auto* items = input->if_array()) {
    for (std::size_t i = 0; i < items->size(); ++i) {
      const auto* m = (*items)[i].if_object();
      if (!m) throw ConversionError(at_item(i) + " must be an object");
      add_item(*m, i, b);
    }
  } else {
    throw ConversionError("input must be a string or a list of items");
  }
  b.flush_assistant();

  // Chat Completions has no `instructions`: they become one leading system message, folded
  // together with the leading system/developer messages (chat templates often admit only one
  // system message, first).
  if (const auto* instructions = present(params, "instructions");
      instructions && instructions->is_string() && !instructions->get_string().empty()) {
    std::string text(instructions->get_string());
    auto& msgs = b.messages;
    while (!msgs.empty()) {
      const auto role = string_or_empty(msgs.front().get_object(), "role");
      if (role != "system" && role != "developer") break;
      text += "\n\n" + content_text(msgs.front().get_object().at("content"));
      msgs.erase(msgs.begin());
    }
    msgs.insert(msgs.begin(), json::object{{"content", text}, {"role", "system"}});
  }

  json::object out;
  out["messages"] = std::move(b.messages);
  for (auto key : kSameNameFields)
    if (const auto* v = params.if_contains(key))
      out[key] = key == "tool_choice" ? chat_tool_choice(*v) : *v;
  if (const auto* max = present(params, "max_output_tokens")) out["max_tokens"] = *max;
  if (const auto* reasoning = present(params, "reasoning"); reasoning && reasoning->is_object())
    if (const auto* effort = present(reasoning->get_object(), "effort"))
      out["reasoning_effort"] = *effort;
  const auto* tools = present(params, "tools");
  if (tools && tools->is_array() && !tools->get_array().empty()) {
    out["tools"] = chat_tools(tools->get_array());
  } else {
    if (const auto* choice = out.if_contains("tool_choice");
        choice && choice->is_string() && choice->get_string() == "required")
      throw ConversionError("tool_choice 'required' needs at least one tool in `tools`");
    out.erase("tool_choice");
    out.erase("parallel_tool_calls");
  }
  return out;
}

json::array assistant_message_to_items(const json::object& message,
                                       const ConversionOptions& options) {
  json::array items;
  std::string content(string_or_empty(message, "content"));
  if (options.uses_reasoning_parser) {
    auto split = split_think_tags(content);
    if (!split.reasoning.empty()) items.push_back(reasoning_item(std::move(split.reasoning)));
    content = std::move(split.rest);
  }
  const auto* calls = present(message, "tool_calls");
  const bool has_calls = calls && calls->is_array() && !calls->get_array().empty();
  const auto refusal = string_or_empty(message, "refusal");
  if (!refusal.empty()) {
    json::object part{{"refusal", refusal}, {"type", "refusal"}};
    json::array parts;
    if (!content.empty()) parts.push_back(output_text(std::move(content)));
    parts.push_back(std::move(part));
    items.push_back(output_message(std::move(parts)));
  } else if (!content.empty() || (items.empty() && !has_calls)) {
    items.push_back(output_message(json::array{output_text(std::move(content))}));
  }
  if (has_calls)
    for (const auto& c : calls->get_array()) {
      const auto* co = c.if_object();
      const auto* fn = co ? co->if_contains("function") : nullptr;
      if (!fn || !fn->is_object() || !co->contains("id"))
        throw ConversionError("a tool call of the answer has no id or function");
      const auto& f = fn->get_object();
      json::object item;
      item["arguments"] = f.contains("arguments") ? f.at("arguments") : json::value("");
      item["call_id"] = co->at("id");
      item["name"] = f.contains("name") ? f.at("name") : json::value("");
      item["type"] = "function_call";
      item["id"] = co->at("id");
      item["status"] = "completed";
      items.push_back(std::move(item));
    }
  if (options.return_token_id_information)
    if (auto info = token_information(message, "the answer's message"))
      for (auto& [k, v] : *info) items.back().as_object()[k] = v;
  return items;
}

json::object chat_completion_to_response(const json::object& params, const json::object& completion,
                                         const ConversionOptions& options) {
  const auto* choices = present(completion, "choices");
  if (!choices || !choices->is_array() || choices->get_array().empty() ||
      !choices->get_array()[0].is_object())
    throw ConversionError("the chat.completion has no choices");
  const auto& choice = choices->get_array()[0].get_object();
  const auto* message = present(choice, "message");
  if (!message || !message->is_object())
    throw ConversionError("the chat.completion's first choice has no message");

  json::value incomplete = nullptr;
  const auto finish = string_or_empty(choice, "finish_reason");
  if (finish == "length") incomplete = json::object{{"reason", "max_output_tokens"}};
  if (finish == "content_filter") incomplete = json::object{{"reason", "content_filter"}};

  static const json::value kAuto = "auto", kTrue = true, kNoTools = json::array();
  auto echo = [&](std::string_view key) -> json::value {
    const auto* v = params.if_contains(key);
    return v ? *v : json::value(nullptr);
  };
  json::object r;
  r["id"] = random_item_id("resp");
  const auto* created = completion.if_contains("created");
  r["created_at"] = created && created->is_number() ? created->to_number<double>() : 0.0;
  r["error"] = nullptr;
  r["incomplete_details"] = incomplete;
  r["instructions"] = echo("instructions");
  r["metadata"] = echo("metadata");
  r["model"] = echo("model");
  r["object"] = "response";
  r["output"] = assistant_message_to_items(message->get_object(), options);
  r["parallel_tool_calls"] = param_or(params, "parallel_tool_calls", kTrue);
  r["temperature"] = echo("temperature");
  r["tool_choice"] = param_or(params, "tool_choice", kAuto);
  r["tools"] = param_or(params, "tools", kNoTools);
  r["top_p"] = echo("top_p");
  r["background"] = echo("background");
  r["max_output_tokens"] = echo("max_output_tokens");
  r["max_tool_calls"] = echo("max_tool_calls");
  r["previous_response_id"] = echo("previous_response_id");
  r["prompt"] = echo("prompt");
  r["reasoning"] = echo("reasoning");
  r["service_tier"] = echo("service_tier");
  r["status"] = incomplete.is_null() ? "completed" : "incomplete";
  r["text"] = echo("text");
  r["top_logprobs"] = echo("top_logprobs");
  r["truncation"] = echo("truncation");
  r["usage"] = response_usage(completion);
  r["user"] = echo("user");
  return r;
}

ThinkSplit split_think_tags(std::string_view text) {
  ThinkSplit out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto open = text.find(kThinkOpen, pos);
    if (open == std::string_view::npos) break;
    const auto close = text.find(kThinkClose, open + kThinkOpen.size());
    if (close == std::string_view::npos) break;
    out.rest.append(text.substr(pos, open - pos));
    out.reasoning.emplace_back(
        text.substr(open + kThinkOpen.size(), close - open - kThinkOpen.size()));
    pos = close + kThinkClose.size();
  }
  out.rest.append(text.substr(pos));
  return out;
}

std::string wrap_in_think_tags(const std::vector<std::string>& texts) {
  std::string out;
  for (const auto& t : texts)
    if (!t.empty()) out.append(kThinkOpen).append(t).append(kThinkClose);
  return out;
}

std::string random_item_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  id += '_';
  for (int word = 0; word < 2; ++word) {
    std::uint64_t bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) id += kHex[bits & 0xF];
  }
  return id;
}

}  // namespace gym::models
