#include "bunsenbench_chemistry_mcq/bunsen_extract.h"
#include "mcqa/mcqa_common.h"
#include "mcqa/mcqa_metrics.h"

#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::py_isalpha;
using python_compat::py_len;
using python_compat::py_str;
using python_compat::py_strip;
using python_compat::py_strip_chars;
using python_compat::py_truthy;
using python_compat::py_type_name;
using python_compat::py_upper;
using python_compat::PyRegex;

namespace {

// The six mutually exclusive classes of a rollout, in upstream's order.
constexpr std::array<std::string_view, 6> kErrorModes = {"correct",          "wrong_answer",
                                                         "refusal",          "early_termination",
                                                         "malformed_choice", "format_violation"};

// pydantic's error when upstream builds its response model from invalid values.
class ValidationError : public python_compat::PyException {
 public:
  using python_compat::PyException::PyException;
};

// _options_from_body: the row's `options` (null texts dropped) when it has any, else its
// `choices` lettered by position (at most 26): a string is the text of the next letter; an
// object gives its first truthy `letter`/`label`/`key`/`id` (else the positional letter) and
// its first truthy `text`/`content`/`value` (else its `choice`), kept only when both are
// strings and the letter is one character once stripped.
BunsenOptions options_of(const json::object& row) {
  BunsenOptions out;
  const json::value& options = mcqa_field(row, "options");
  if (py_truthy(options)) {
    for (const auto& entry : options.get_array())
      for (const auto& kv : entry.get_object())
        if (!kv.value().is_null()) out.push_back({kv.key(), std::string(kv.value().get_string())});
    return out;
  }
  const json::value& choices = mcqa_field(row, "choices");
  if (!choices.is_array()) return out;
  std::size_t index = 0;
  for (const auto& choice : choices.get_array()) {
    if (index >= 26) break;
    std::string fallback(1, static_cast<char>('A' + index));
    ++index;
    if (choice.is_string()) {
      out.push_back({fallback, std::string(choice.get_string())});
      continue;
    }
    const json::object& fields = choice.get_object();
    auto first_truthy = [&fields](std::initializer_list<std::string_view> keys,
                                  const json::value& otherwise) -> json::value {
      for (auto key : keys)
        if (const auto* v = fields.if_contains(key); v && py_truthy(*v)) return *v;
      return otherwise;
    };
    json::value letter = first_truthy({"letter", "label", "key", "id"}, json::value(fallback));
    json::value text = first_truthy({"text", "content", "value"}, mcqa_field(fields, "choice"));
    if (!letter.is_string() || !text.is_string()) continue;
    std::string stripped = py_strip(letter.get_string());
    if (py_len(stripped) == 1) out.push_back({py_upper(stripped), std::string(text.get_string())});
  }
  return out;
}

// _get_allowed_letters_from_options over the options as _options_from_body built them.
McqaLetters allowed_letters(const BunsenOptions& options) {
  McqaLetters letters;
  for (const auto& option : options)
    if (py_len(option.letter) == 1 && py_isalpha(option.letter))
      letters.insert(py_upper(option.letter));
  return letters;
}

// _expected_answer_letter: the wrapper-stripped expected answer when it is one letter, else the
// letter its text parses to, else the stripped text itself (upper-cased).
std::string gold_letter(const json::object& row, const BunsenOptions& options) {
  const json::value& expected = mcqa_field(row, "expected_answer");
  std::string answer = expected.is_string() ? std::string(expected.get_string()) : "";
  std::string stripped = py_upper(bunsen_strip_wrappers(answer));
  if (py_len(stripped) == 1 && py_isalpha(stripped)) return stripped;
  auto parsed = bunsen_parse_candidate(answer, options, allowed_letters(options));
  return parsed ? *parsed : stripped;
}

// _metadata_value for bunsen_id, source, bct_field and bct_subfield: the row's own field when
// not null, else the one in `metadata`. The response model takes only a string or null there;
// anything else fails it (500, one line per field as pydantic lists them).
std::vector<std::pair<std::string_view, json::value>> taxonomy(const json::object& row) {
  std::vector<std::pair<std::string_view, json::value>> values;
  std::string problems;
  std::size_t count = 0;
  for (std::string_view key : {"bunsen_id", "source", "bct_field", "bct_subfield"}) {
    json::value value = mcqa_field(row, key);
    if (value.is_null()) {
      const json::value& metadata = mcqa_field(row, "metadata");
      if (metadata.is_object()) value = mcqa_field(metadata.get_object(), key);
    }
    if (!value.is_null() && !value.is_string()) {
      ++count;
      problems += "\n" + std::string(key) +
                  "\n  Input should be a valid string [type=string_type, input_type=" +
                  py_type_name(value) + "]";
    }
    values.emplace_back(key, std::move(value));
  }
  if (count > 0)
    throw ValidationError(std::to_string(count) + " validation error" + (count == 1 ? "" : "s") +
                          " for BunsenChemVerifyResponse" + problems);
  return values;
}

json::object verify(const json::object& row) {
  BunsenOptions options = options_of(row);
  McqaLetters allowed = allowed_letters(options);
  std::string gold = gold_letter(row, options);
  if (py_len(gold) == 1 && py_isalpha(gold)) allowed.insert(gold);

  const json::object& response = row.at("response").get_object();
  std::string raw_text = mcqa_output_text(response.at("output").get_array());
  std::string text = py_strip(raw_text);
  std::optional<std::string> pred;
  if (!text.empty()) pred = bunsen_extract_answer(text, options, allowed);

  double reward = pred && *pred == gold ? 1.0 : 0.0;
  std::string error_mode = bunsen_error_mode(response, raw_text, pred, gold);

  auto values = taxonomy(row);  // bunsen_id, source, bct_field, bct_subfield

  json::object out = servers::verify_response(row, reward);
  out["expected_answer"] = gold;
  out["extracted_answer"] = pred ? json::value(*pred) : json::value(nullptr);
  out["uuid"] = mcqa_field(row, "uuid");
  out["bunsen_id"] = values[0].second;
  out["choices"] = mcqa_field(row, "choices");
  out["no_answer"] = !pred.has_value();
  out["error_mode"] = error_mode;
  for (std::size_t k = 1; k < values.size(); ++k) out[values[k].first] = values[k].second;
  out["metadata"] = mcqa_field(row, "metadata");
  return out;
}

// ---- aggregate metrics ----

// _metric_segment: str(value) stripped, whitespace runs -> "_", "/" -> "__", other characters
// outside [A-Za-z0-9_.:+-] -> "_", then "_" stripped from both ends; "unknown" if nothing is left.
std::string metric_segment(const json::value& value) {
  static const PyRegex whitespace(R"(\s+)");
  static const PyRegex other(R"([^A-Za-z0-9_.:+-]+)");
  std::string segment = whitespace.sub("_", py_strip(py_str(value)));
  segment = python_compat::py_replace(segment, "/", "__");
  segment = py_strip_chars(other.sub("_", segment), "_");
  return segment.empty() ? "unknown" : segment;
}

// _first_value: the first truthy value of `key` among a task's rollouts.
const json::value* first_value(const std::vector<const json::object*>& rollouts,
                               std::string_view key) {
  for (const json::object* rollout : rollouts)
    if (const auto* v = rollout->if_contains(key); v && py_truthy(*v)) return v;
  return nullptr;
}

// Tasks grouped by a segment, groups in order of first appearance.
using Buckets = std::vector<std::pair<std::string, servers::TaskRollouts>>;

void add_to_bucket(Buckets& buckets, const std::string& name,
                   const std::vector<const json::object*>& task) {
  for (auto& [bucket, tasks] : buckets) {
    if (bucket == name) {
      tasks.push_back(task);
      return;
    }
  }
  buckets.push_back({name, {task}});
}

// The pass@k family of every bucket, as `<prefix>/<bucket>/<metric>` (per_sample_aggregate
// left out).
void add_bucket_metrics(const Buckets& buckets, std::string_view prefix, json::object& metrics) {
  for (const auto& [bucket, tasks] : buckets) {
    auto subset = servers::compute_pass_majority_metrics(tasks, servers::accuracy_from_reward,
                                                         "extracted_answer");
    for (const auto& kv : subset.metrics)
      if (kv.key() != "per_sample_aggregate")
        metrics[std::string(prefix) + "/" + bucket + "/" + std::string(kv.key())] = kv.value();
  }
}

// _error_mode_metrics: each rollout's `error_mode` (when truthy; else correct for a truthy
// reward, wrong_answer for an extracted answer, format_violation) counted; every mode gets
// `error_modes/<mode>/count` and `error_modes/<mode>` (percent of all rollouts), the six known
// modes first even when unseen.
json::object error_mode_metrics(const servers::TaskRollouts& tasks) {
  std::vector<std::pair<json::value, std::size_t>> counts;
  for (auto mode : kErrorModes) counts.emplace_back(json::value(mode), 0);
  std::size_t total = 0;
  for (const auto& task : tasks) {
    for (const json::object* rollout : task) {
      json::value mode = mcqa_field(*rollout, "error_mode");
      if (!py_truthy(mode)) {
        mode = py_truthy(mcqa_field(*rollout, "reward"))             ? "correct"
               : !mcqa_field(*rollout, "extracted_answer").is_null() ? "wrong_answer"
                                                                     : "format_violation";
      }
      if (!python_compat::py_hashable(mode))
        throw python_compat::TypeError("unhashable type: '" + py_type_name(mode) + "'");
      bool found = false;
      for (auto& [key, count] : counts) {
        if (python_compat::json_equal(key, mode, python_compat::BoolRule::as_integers)) {
          ++count;
          found = true;
          break;
        }
      }
      if (!found) counts.emplace_back(mode, 1);
      ++total;
    }
  }
  json::object metrics;
  for (const auto& [mode, count] : counts) {
    std::string name = "error_modes/" + py_str(mode);
    metrics[name + "/count"] = static_cast<double>(count);
    metrics[name] = total ? 100.0 * static_cast<double>(count) / static_cast<double>(total) : 0.0;
  }
  return metrics;
}

// compute_metrics: mcqa's pass@k family, then the same per `source`, per `bct_field` and per
// `bct_field`/`bct_subfield` (tasks with a truthy value), then the error modes.
json::object compute_metrics(const servers::TaskRollouts& tasks) {
  json::object metrics = mcqa_compute_metrics(tasks);
  for (std::string_view key : {"source", "bct_field"}) {
    Buckets buckets;
    for (const auto& task : tasks)
      if (const json::value* v = first_value(task, key))
        add_to_bucket(buckets, metric_segment(*v), task);
    add_bucket_metrics(buckets, "by_" + std::string(key), metrics);
  }
  Buckets subfields;
  for (const auto& task : tasks) {
    const json::value* field = first_value(task, "bct_field");
    const json::value* subfield = first_value(task, "bct_subfield");
    if (field && subfield)
      add_to_bucket(subfields, metric_segment(*field) + "/" + metric_segment(*subfield), task);
  }
  add_bucket_metrics(subfields, "by_bct_subfield", metrics);
  for (const auto& kv : error_mode_metrics(tasks)) metrics[kv.key()] = kv.value();
  return metrics;
}

// get_key_metrics: mcqa's, then the highest-k pass@{k}/accuracy, pass@1/accuracy,
// pass@1/no_answer and the six error-mode percentages.
json::object key_metrics(const json::object& agent_metrics) {
  json::object key = mcqa_key_metrics(agent_metrics);
  for (const auto& kv :
       servers::highest_k_metrics(agent_metrics, "pass@{k}", std::vector<std::string>{"accuracy"}))
    key[kv.key()] = kv.value();
  for (std::string_view name : {"pass@1/accuracy", "pass@1/no_answer"})
    if (const auto* v = agent_metrics.if_contains(name)) key[name] = *v;
  for (auto mode : kErrorModes) {
    std::string name = "error_modes/" + std::string(mode);
    if (const auto* v = agent_metrics.if_contains(name)) key[name] = *v;
  }
  return key;
}

}  // namespace

// BunsenChemResourcesServer: chemistry multiple-choice answers extracted from tags, boxes,
// `Answer:` lines and exact option texts (chemistry-normalised), an error-mode class per
// rollout, and aggregate metrics broken down by source and taxonomy.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment bunsenbench_chemistry_mcq_environment() {
  return {
      "bunsenbench_chemistry_mcq",
      "BunsenChemResourcesServer",
      [](servers::ServerContext& ctx, http::Router&) -> servers::VerifyRoute {
        // The config model is mcqa's: its grading_mode is checked, then never used.
        mcqa_config_grading_mode(ctx.instance.config, "bunsenbench_chemistry_mcq");
        auto fields = mcqa_request_fields();
        Schema choice = Schema::union_of({{"str", Schema::of(Schema::Kind::string)},
                                          {"dict[str,any]", Schema::of(Schema::Kind::dict)}});
        fields.push_back({"bunsen_id", Schema::of(Schema::Kind::string, true), false});
        fields.push_back({"choices", Schema::list_of(std::move(choice), true), false});
        for (const char* name : {"source", "bct_field", "bct_subfield"})
          fields.push_back({name, Schema::of(Schema::Kind::string, true), false});
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object()));
                },
                servers::verify_request_schema(std::move(fields))};
      },
      "unknown",  // upstream pins mcqa's "stateless" back to the default
      {compute_metrics, key_metrics},
  };
}

}  // namespace gym::environments
