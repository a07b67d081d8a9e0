// JSON body -> schema validation: any body the JSON parser accepts is validated (with its lax
// coercions in place) against the schemas the servers use, and the strict create params of
// POST /v1/responses, without throwing or crashing; each 422 detail renders.
#include "core/json_text.h"
#include "http/message.h"
#include "http/schema.h"
#include "servers/agent_server.h"
#include "servers/model_server.h"
#include "servers/resources_server.h"
#include "servers/responses_api.h"

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace {
using gym::http::Schema;
using gym::http::SchemaField;
using Kind = Schema::Kind;

// A /verify schema with one field of every kind, as environments declare them.
std::shared_ptr<const Schema> every_kind_schema() {
  return gym::servers::verify_request_schema({
      {"expected_answer", Schema::of(Kind::string)},
      {"num_choices", Schema::of(Kind::integer, true), false},
      {"threshold", Schema::of(Kind::number), false},
      {"strict", Schema::of(Kind::boolean), false},
      {"options", Schema::list_of(Schema::of(Kind::string)), false},
      {"template_metadata", Schema::of(Kind::dict, true), false},
      {"grading_mode", Schema::literal_of({"lenient_boxed", "strict_single_letter"}), false},
      {"nested", Schema::object_of({{"depth", Schema::of(Kind::integer)}}, true), false},
  });
}

const std::vector<std::shared_ptr<const Schema>>& schemas() {
  static const std::vector<std::shared_ptr<const Schema>> all = {
      gym::servers::create_params_schema(),
      gym::servers::verify_request_schema(),
      gym::servers::run_request_schema(),
      gym::servers::aggregate_metrics_request_schema(),
      every_kind_schema(),
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::system::error_code ec;
  const boost::json::value body = gym::core::parse_json(text, ec);
  if (ec) return 0;

  for (const auto& schema : schemas()) {
    boost::json::value copy = body;
    const boost::json::array detail = gym::http::validate_body(*schema, copy);
    if (!detail.empty()) (void)gym::http::Response::detail(422, detail);
  }
  boost::json::value params = body;
  const boost::json::array detail = gym::servers::validate_model_create_params(params);
  if (detail.empty() && params.is_object()) {
    (void)gym::servers::expand_create_params(params.get_object());
  }
  (void)gym::servers::response_problem(body);
  return 0;
}
