#include "mcqa/mcqa_common.h"
#include "mcqa/mcqa_metrics.h"

#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <optional>
#include <string>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using python_compat::py_isupper;
using python_compat::py_len;
using python_compat::py_strip;
using python_compat::py_upper;
using python_compat::PyRegex;

namespace {

// Upstream's extract_letter: the content of the last \boxed{...} without a '}' inside, when it
// is one upper-case character or holds a standalone capital A-Z (the last one); else the last
// `Answer: X` (markdown emphasis allowed around the word, any case, X not followed by a letter
// or digit), upper-cased. A box that yields no letter falls through to `Answer:`.
std::optional<std::string> extract_letter(std::string_view text) {
  static const PyRegex boxed(R"(\\boxed\{([^}]*)\})", PyRegex::kDotAll);
  static const PyRegex standalone(R"(\b([A-Z])\b)", PyRegex::kDotAll);
  static const PyRegex answer(
      R"((?i)[\*\_]{0,2}Answer[\*\_]{0,2}\s*:[\s\*\_]{0,2}\s*([A-Z])(?![a-zA-Z0-9]))");
  auto boxes = boxed.findall(text);
  if (!boxes.empty()) {
    std::string extracted = py_strip(boxes.back());
    if (py_len(extracted) == 1 && py_isupper(extracted)) return extracted;
    auto letters = standalone.findall(extracted);
    if (!letters.empty()) return py_strip(letters.back());
  }
  auto answers = answer.findall(text);
  if (!answers.empty()) return py_upper(py_strip(answers.back()));
  return std::nullopt;
}

json::object verify(const json::object& row) {
  // Unlike mcqa, an empty text is not a shortcut, the grading mode is never consulted, and a
  // list of custom patterns is handed to re.findall as it is (which raises).
  std::string text = py_strip(mcqa_output_text(row.at("response").at("output").get_array()));
  const json::value& options = mcqa_field(row, "options");
  McqaLetters allowed = mcqa_allowed_letters(options);

  std::optional<std::string> pred;
  const json::value& metadata = mcqa_field(row, "template_metadata");
  if (metadata.is_object() && metadata.get_object().contains("output_regex"))
    pred = mcqa_custom_regex(text, metadata.at("output_regex"), options, allowed);
  if (!pred) {
    pred = extract_letter(text);
    if (pred) {
      *pred = py_upper(*pred);
      // Without options every letter stands; with them it must be one of theirs.
      if (!allowed.empty() && !allowed.contains(*pred)) pred.reset();
    }
  }

  return mcqa_verify_answer(row, pred);
}

}  // namespace

// GPQADiamondResourcesServer: mcqa's request model, option letters, custom patterns and
// aggregate metrics, with GPQA's own letter extraction (\boxed{X} or `Answer: X`).
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment gpqa_diamond_environment() {
  return {
      "gpqa_diamond",
      "GPQADiamondResourcesServer",
      [](servers::ServerContext& ctx, http::Router&) -> servers::VerifyRoute {
        // The config model is mcqa's: its grading_mode is checked, then never used.
        mcqa_config_grading_mode(ctx.instance.config, "gpqa_diamond");
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object()));
                },
                servers::verify_request_schema(mcqa_request_fields())};
      },
      "unknown",  // upstream pins mcqa's "stateless" back to the default
      mcqa_aggregate_hooks(),
  };
}

}  // namespace gym::environments
