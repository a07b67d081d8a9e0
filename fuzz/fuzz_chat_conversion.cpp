// Responses <-> Chat Completions conversion: any JSON gives a result or a ConversionError,
// never a crash. Input: a JSON object {"params": ..., "completion": ..., "message": ...};
// a missing part is taken as the whole object, so plain create params or completions work too.
#include "core/json_text.h"
#include "models/chat_conversion.h"

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {
namespace models = gym::models;

const boost::json::object& part(const boost::json::object& whole, std::string_view key) {
  const auto* v = whole.if_contains(key);
  return v && v->is_object() ? v->get_object() : whole;
}

void convert(const boost::json::object& whole, const models::ConversionOptions& options) {
  const auto& params = part(whole, "params");
  try {
    (void)gym::core::render_json(models::responses_to_chat_params(params, options));
  } catch (const models::ConversionError&) {
  }
  try {
    (void)gym::core::render_json(
        models::chat_completion_to_response(params, part(whole, "completion"), options));
  } catch (const models::ConversionError&) {
  }
  try {
    (void)models::assistant_message_to_items(part(whole, "message"), options);
  } catch (const models::ConversionError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::system::error_code ec;
  const boost::json::value v = gym::core::parse_json(text, ec);
  if (ec) return 0;
  if (!v.is_object()) {
    if (v.is_string()) (void)models::split_think_tags(v.get_string());
    return 0;
  }
  for (const bool token_ids : {false, true}) {
    for (const bool reasoning_parser : {false, true}) {
      convert(v.get_object(), {.return_token_id_information = token_ids,
                               .uses_reasoning_parser = reasoning_parser});
    }
  }
  return 0;
}
