#include "models/replay_store.h"

#include "core/config.h"
#include "core/json_text.h"
#include "python_compat/json_equal.h"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>

namespace gym::models {
namespace json = boost::json;
using python_compat::canonical_json;

namespace {

constexpr std::string_view kFunctionCallOutput = "function_call_output";

// Replayed and recorded values compare with booleans apart from numbers (true != 1), the
// equality of their canonical texts.
bool same_json(const json::value& a, const json::value& b) {
  return python_compat::json_equal(a, b, python_compat::BoolRule::distinct);
}

std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  return h ^ (x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

std::uint64_t index_key(std::size_t length, std::uint64_t prefix_hash) {
  return mix(prefix_hash, 0xa0761d6478bd642full * (length + 1));
}

std::uint64_t item_hash(const std::string& canonical) {
  return std::hash<std::string>{}(canonical);
}

const json::value& member(const json::object& o, std::string_view key) {
  static const json::value kNull;
  const auto* v = o.if_contains(key);
  return v ? *v : kNull;
}

std::string_view type_of(const json::value& item) {
  if (const auto* o = item.if_object())
    if (const auto* t = o->if_contains("type"); t && t->is_string()) return t->get_string();
  return {};
}

// A short rendering of a value for messages.
std::string brief(const json::value& v, std::size_t limit = 160) {
  std::string text = core::render_json(v);
  if (text.size() > limit) {
    text.resize(limit);
    text += "…";
  }
  return text;
}

// The texts of a message's content: a string content is one text; a part contributes its
// `text`, else its `refusal`, else its canonical JSON.
json::array content_texts(const json::object& item) {
  const auto& content = member(item, "content");
  if (content.is_string()) return json::array{content};
  json::array texts;
  if (const auto* parts = content.if_array()) {
    for (const auto& part : *parts) {
      const auto* p = part.if_object();
      if (p && p->contains("text")) {
        texts.push_back(p->at("text"));
      } else if (p && p->contains("refusal")) {
        texts.push_back(p->at("refusal"));
      } else {
        texts.push_back(json::string(canonical_json(part)));
      }
    }
  } else if (!content.is_null()) {
    texts.push_back(json::string(canonical_json(content)));
  }
  return texts;
}

json::array summary_texts(const json::object& item) {
  json::array texts;
  if (const auto* parts = member(item, "summary").if_array())
    for (const auto& part : *parts)
      if (const auto* p = part.if_object()) texts.push_back(member(*p, "text"));
  return texts;
}

std::optional<json::value> parse_json_text(const json::value& v) {
  if (!v.is_string()) return std::nullopt;
  boost::system::error_code ec;
  auto parsed = core::parse_json(v.get_string(), ec);
  if (ec) return std::nullopt;
  return parsed;
}

bool tool_outputs_equal(const json::value& a, const json::value& b, ToolOutputCheck check) {
  switch (check) {
    case ToolOutputCheck::off:
      return true;
    case ToolOutputCheck::exact:
      return same_json(a, b);  // strings compare as text
    case ToolOutputCheck::semantic: {
      auto pa = parse_json_text(a);
      auto pb = parse_json_text(b);
      if (pa && pb) return same_json(*pa, *pb);
      return same_json(a, b);
    }
  }
  return false;
}

std::string field_differs(std::string_view key, const json::value& replayed,
                          const json::value& recorded) {
  std::string text = "'";  // appended piecewise: GCC 12 -O3 misreports -Wrestrict on a + chain
  text.append(key).append("' differs: ").append(brief(replayed)).append(" vs recorded ");
  text.append(brief(recorded));
  return text;
}

}  // namespace

json::value drop_null_members(const json::value& v) {
  if (const auto* o = v.if_object()) {
    json::object out;
    out.reserve(o->size());
    for (const auto& kv : *o)
      if (!kv.value().is_null()) out.emplace(kv.key(), drop_null_members(kv.value()));
    return out;
  }
  if (const auto* a = v.if_array()) {
    json::array out;
    out.reserve(a->size());
    for (const auto& item : *a) out.push_back(drop_null_members(item));
    return out;
  }
  return v;
}

json::array normalize_input(const json::value& input) {
  json::array out;
  if (input.is_string()) {
    json::object message;
    message["type"] = "message";
    message["role"] = "user";
    message["content"] = input;
    out.push_back(std::move(message));
    return out;
  }
  const auto* items = input.if_array();
  if (!items) return out;
  out.reserve(items->size());
  for (const auto& item : *items) {
    json::value v = drop_null_members(item);
    if (auto* o = v.if_object(); o && o->contains("role") && !o->contains("type"))
      (*o)["type"] = "message";
    out.push_back(std::move(v));
  }
  return out;
}

std::string item_mismatch(const json::object& replayed, const json::object& recorded,
                          ToolOutputCheck check) {
  const auto& type = member(replayed, "type");
  const auto& recorded_type = member(recorded, "type");
  if (!same_json(type, recorded_type))
    return "item types differ: " + brief(type) + " vs recorded " + brief(recorded_type);
  std::string_view t = type.is_string() ? std::string_view(type.get_string()) : "";
  auto compare = [&](std::string_view key) -> std::string {
    const auto& a = member(replayed, key);
    const auto& b = member(recorded, key);
    return same_json(a, b) ? std::string() : field_differs(key, a, b);
  };
  if (t == "function_call") {
    for (auto key : {"call_id", "name", "arguments"})
      if (auto why = compare(key); !why.empty()) return why;
    return {};
  }
  if (t == "message") {
    if (auto why = compare("role"); !why.empty()) return why;
    auto a = content_texts(replayed);
    auto b = content_texts(recorded);
    return same_json(a, b) ? std::string() : field_differs("content", a, b);
  }
  if (t == "reasoning") {
    const auto& a = member(replayed, "id");
    const auto& b = member(recorded, "id");
    if (!a.is_null() && !b.is_null())
      return same_json(a, b) ? std::string() : field_differs("id", a, b);
    auto sa = summary_texts(replayed);
    auto sb = summary_texts(recorded);
    return same_json(sa, sb) ? std::string() : field_differs("summary", sa, sb);
  }
  if (t == kFunctionCallOutput) {
    if (auto why = compare("call_id"); !why.empty()) return why;
    const auto& a = member(replayed, "output");
    const auto& b = member(recorded, "output");
    return tool_outputs_equal(a, b, check) ? std::string() : field_differs("output", a, b);
  }
  return same_json(json::value(replayed), json::value(recorded))
             ? std::string()
             : "items differ: " + brief(json::value(replayed)) + " vs recorded " +
                   brief(json::value(recorded));
}

ReplayStore::ReplayStore(ToolOutputCheck check, SessionBindings bindings)
    : check_(check), bindings_(std::move(bindings)) {}

std::size_t ReplayStore::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::ConfigError("replay_model: cannot read rollouts file '" + path + "'");
  std::string line;
  std::size_t line_no = 0, rows = 0, kept = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    boost::system::error_code ec;
    json::value v = core::parse_json(line, ec);
    if (ec || !v.is_object())
      throw core::ConfigError("replay_model: rollouts file '" + path + "' line " +
                              std::to_string(line_no) + " is not a JSON object" +
                              (ec ? " (" + ec.message() + ")" : std::string()));
    ++rows;
    if (add_row(v.get_object(), path, line_no)) ++kept;
  }
  if (kept < rows)
    spdlog::warn(
        "replay_model: skipped {} of {} rows of '{}' (no responses_create_params.input, "
        "no response.output list, or a failure row with _ng_failure_class)",
        rows - kept, rows, path);
  return kept;
}

bool ReplayStore::add_row(const json::object& row, const std::string& file, std::size_t line) {
  if (row.contains("_ng_failure_class")) return false;
  const auto* params = member(row, "responses_create_params").if_object();
  const auto* response = member(row, "response").if_object();
  if (!params || !response) return false;
  const auto& input = member(*params, "input");
  const auto* output = member(*response, "output").if_array();
  if (!(input.is_string() || input.is_array()) || !output) return false;
  auto is_object = [](const json::value& i) { return i.is_object(); };
  if (!std::all_of(output->begin(), output->end(), is_object)) return false;

  Row r;
  r.file = file;
  r.line = line;
  std::uint64_t h = 0;
  for (const auto& item : normalize_input(input)) {
    r.input_keys.push_back(canonical_json(item));
    h = mix(h, item_hash(r.input_keys.back()));
  }
  r.response = *response;
  for (const auto& item : *output) r.output.push_back(drop_null_members(item));

  std::size_t length = r.input_keys.size();
  index_[index_key(length, h)].push_back(rows_.size());
  if (auto it = std::lower_bound(lengths_.begin(), lengths_.end(), length);
      it == lengths_.end() || *it != length)
    lengths_.insert(it, length);
  rows_.push_back(std::move(r));
  return true;
}

std::string ReplayStore::where(const Row& row) const {
  return "'" + row.file + "' line " + std::to_string(row.line);
}

std::string ReplayStore::continuation_mismatch(const Row& row, const json::array& input,
                                               std::size_t start, std::size_t& at) const {
  const std::size_t n = input.size() - start;
  const auto& recorded = row.output;
  const std::size_t common = std::min(n, recorded.size());
  for (std::size_t j = 0; j < common; ++j) {
    const auto* item = input[start + j].if_object();
    std::string why = item ? item_mismatch(*item, recorded[j].get_object(), check_)
                           : "input item is not an object";
    if (!why.empty()) {
      at = j;
      return "input item " + std::to_string(start + j) + " ('" +
             std::string(type_of(input[start + j])) + "') vs recorded output item " +
             std::to_string(j) + " ('" + std::string(type_of(recorded[j])) + "'): " + why;
    }
  }
  at = common;
  if (n > recorded.size())
    return "input item " + std::to_string(start + recorded.size()) + " ('" +
           std::string(type_of(input[start + recorded.size()])) +
           "') continues past the end of the recording (" + std::to_string(recorded.size()) +
           " output items)";
  if (n > 0 && type_of(input.back()) != kFunctionCallOutput)
    return "the input does not end at a turn boundary: its last item (input item " +
           std::to_string(input.size() - 1) + ") is '" + std::string(type_of(input.back())) +
           "', not a function_call_output";
  if (n < recorded.size() && type_of(recorded[n]) == kFunctionCallOutput)
    return "the recording continues with a function_call_output (output item " + std::to_string(n) +
           ") that the input (item " + std::to_string(input.size()) + ") does not carry";
  return {};
}

std::vector<ReplayStore::Candidate> ReplayStore::candidates(const json::array& input) const {
  std::vector<Candidate> out;
  if (lengths_.empty()) return out;
  const std::size_t longest = std::min(input.size(), lengths_.back());
  std::vector<std::string> keys;
  std::vector<std::uint64_t> prefix{0};
  keys.reserve(longest);
  for (std::size_t i = 0; i < longest; ++i) {
    keys.push_back(canonical_json(input[i]));
    prefix.push_back(mix(prefix.back(), item_hash(keys.back())));
  }
  for (std::size_t length : lengths_) {
    if (length > longest) break;
    auto it = index_.find(index_key(length, prefix[length]));
    if (it == index_.end()) continue;
    for (std::size_t r : it->second) {
      const Row& row = rows_[r];
      if (row.input_keys.size() != length ||
          !std::equal(row.input_keys.begin(), row.input_keys.end(), keys.begin()))
        continue;
      Candidate c{r, input.size() - length, {}, 0};
      c.mismatch = continuation_mismatch(row, input, length, c.mismatch_at);
      out.push_back(std::move(c));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Candidate& a, const Candidate& b) { return a.row < b.row; });
  return out;
}

namespace {

ReplayAnswer failure(std::string_view type, std::string message) {
  json::object detail;
  detail["type"] = type;
  detail["message"] = std::move(message);
  json::object body;
  body["detail"] = std::move(detail);
  return {409, std::move(body)};
}

bool absent(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return !v || v->is_null();
}

}  // namespace

ReplayAnswer ReplayStore::respond(const Row& row, std::size_t continuation,
                                  const json::object& params) const {
  const auto& recorded = row.response.at("output").get_array();
  std::size_t end = continuation;
  while (end < recorded.size() && type_of(recorded[end]) != kFunctionCallOutput) ++end;
  if (end == continuation)
    return failure("replay_exhausted",
                   "the recording " + where(row) + " has no items left: all " +
                       std::to_string(recorded.size()) +
                       " recorded output items were replayed (it ends with a "
                       "function_call_output, e.g. it was recorded with max_steps)");
  json::object body = row.response;
  json::array segment(recorded.begin() + static_cast<std::ptrdiff_t>(continuation),
                      recorded.begin() + static_cast<std::ptrdiff_t>(end));
  body["output"] = std::move(segment);

  // Missing required envelope fields.
  if (absent(body, "id")) body["id"] = "resp_replay_" + std::to_string(row.line);
  if (absent(body, "created_at"))
    body["created_at"] =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (absent(body, "model")) {
    const auto& model = member(params, "model");
    body["model"] = model.is_string() ? model : json::value("replay_model");
  }
  if (absent(body, "object")) body["object"] = "response";
  if (absent(body, "parallel_tool_calls")) {
    const auto& v = member(params, "parallel_tool_calls");
    body["parallel_tool_calls"] = v.is_null() ? json::value(true) : v;
  }
  if (absent(body, "tool_choice")) {
    const auto& v = member(params, "tool_choice");
    body["tool_choice"] = v.is_null() ? json::value("auto") : v;
  }
  if (absent(body, "tools")) {
    const auto& v = member(params, "tools");
    body["tools"] = v.is_null() ? json::value(json::array{}) : v;
  }

  if (end < recorded.size()) {  // not the final segment
    std::size_t turn = 1;
    for (std::size_t i = 0; i < continuation; ++i)
      if (type_of(recorded[i]) != kFunctionCallOutput &&
          (i == 0 || type_of(recorded[i - 1]) == kFunctionCallOutput))
        ++turn;
    const auto& id = body.at("id");
    std::string base = id.is_string() ? std::string(id.get_string()) : core::render_json(id);
    body["id"] = base + "_t" + std::to_string(turn);
    body["usage"] = nullptr;
    body["status"] = "completed";
    body["incomplete_details"] = nullptr;
  }
  return {200, std::move(body)};
}

ReplayAnswer ReplayStore::answer(const json::object& params, std::string_view session,
                                 Clock::time_point now) {
  json::array input = normalize_input(member(params, "input"));
  auto found = candidates(input);
  if (found.empty()) {
    std::string last = input.empty() ? std::string("none") : brief(input.back(), 200);
    return failure("replay_no_match", "no recorded input is a prefix of the request's input (" +
                                          std::to_string(input.size()) + " items, the last one " +
                                          last + "); " + std::to_string(rows_.size()) +
                                          " recorded rows are loaded");
  }
  auto bound = bindings_.find(session, now);
  const Candidate* chosen = nullptr;
  std::size_t consistent = 0;
  for (const auto& c : found) {
    if (!c.mismatch.empty()) continue;
    ++consistent;
    if (bound && c.row == *bound) {
      chosen = &c;
      break;
    }
    if (!chosen || rows_[c.row].bindings < rows_[chosen->row].bindings) chosen = &c;
  }
  if (consistent == 0) {
    const Candidate* closest = &found.front();
    for (const auto& c : found) {
      if (bound && c.row == *bound) {
        closest = &c;
        break;
      }
      if (c.mismatch_at > closest->mismatch_at) closest = &c;
    }
    std::string message = "the request's input starts with " + std::to_string(found.size()) +
                          " recorded input(s) but continues differently from every recording; "
                          "closest: " +
                          where(rows_[closest->row]) + ": " + closest->mismatch;
    return failure("replay_diverged", std::move(message));
  }
  if (!bound || *bound != chosen->row) {
    ++rows_[chosen->row].bindings;
    bindings_.bind(session, chosen->row, now);
  }
  return respond(rows_[chosen->row], chosen->continuation, params);
}

}  // namespace gym::models
