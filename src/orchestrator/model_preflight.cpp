#include "orchestrator/model_preflight.h"

#include "core/config.h"
#include "core/json_text.h"
#include "core/secrets.h"

#include <boost/json.hpp>

#include <strings.h>

namespace gym::orchestrator {
namespace json = boost::json;

namespace {

constexpr std::size_t kListedIds = 20;
constexpr std::size_t kBodyExcerpt = 160;

const char* kSkipHint = " (model_endpoint_preflight: false skips these checks)";

std::string string_at(const json::object& o, std::string_view key, std::string def = "") {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : def;
}

// The start of a body on one line, for a message; an echoed key is masked.
std::string excerpt(const std::string& body, const std::string& api_key) {
  std::string out;
  for (char c : body.substr(0, kBodyExcerpt)) out += c == '\n' || c == '\r' ? ' ' : c;
  if (body.size() > kBodyExcerpt) out += "...";
  // However the endpoint escaped it (JSON, percent-encoding).
  return api_key == "EMPTY" ? out : core::masked_secret(out, api_key);
}

std::string strip_slashes(std::string url) {
  while (url.ends_with("/")) url.pop_back();
  return url;
}

// The ids of an OpenAI model list, or nothing when the body is not one.
std::optional<std::vector<const json::object*>> model_entries(const json::value& body) {
  const auto* o = body.if_object();
  const auto* data = o ? o->if_contains("data") : nullptr;
  if (!data || !data->is_array()) return std::nullopt;
  if (const auto* kind = o->if_contains("object"); kind && !(kind->is_string() && *kind == "list"))
    return std::nullopt;
  std::vector<const json::object*> entries;
  for (const auto& e : data->get_array())
    if (const auto* eo = e.if_object(); eo && eo->contains("id") && eo->at("id").is_string())
      entries.push_back(eo);
  return entries;
}

std::optional<std::int64_t> whole_number(const json::value* v) {
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  if (v->is_double() && v->get_double() >= 1 && v->get_double() < 1e15)
    return static_cast<std::int64_t>(v->get_double());
  return std::nullopt;
}

}  // namespace

std::string models_url(const std::string& base_url) { return strip_slashes(base_url) + "/models"; }

std::string ModelEndpoint::probe_url() const {
  if (check) return models_url(url);
  std::string probe = strip_slashes(url);
  if (probe.ends_with("/v1")) probe += "/models";
  return probe;
}

namespace {

// Appends every `*base_url` under `value` (at dotted `path`), strings and lists of strings.
void add_base_urls(const json::value& value, const std::string& path,
                   std::vector<ModelEndpoint>& endpoints) {
  if (!value.is_object()) return;
  for (const auto& kv : value.get_object()) {
    const std::string key = path + "." + std::string(kv.key());
    if (kv.key().ends_with("base_url")) {
      if (kv.value().is_string())
        endpoints.push_back({key, std::string(kv.value().get_string()), std::nullopt});
      if (kv.value().is_array())
        for (const auto& u : kv.value().get_array())
          if (u.is_string()) endpoints.push_back({key, std::string(u.get_string()), std::nullopt});
    }
    add_base_urls(kv.value(), key, endpoints);
  }
}

}  // namespace

std::vector<ModelEndpoint> model_endpoints(const json::object& cfg,
                                           const std::vector<core::ServerInstance>& instances,
                                           bool preflight) {
  std::vector<ModelEndpoint> endpoints;
  for (const auto& inst : instances) {
    if (inst.server_type != "responses_api_models") continue;
    const std::string prefix = inst.name + "." + inst.server_type + "." + inst.impl;
    const auto first = endpoints.size();
    add_base_urls(inst.config, prefix, endpoints);
    if (!preflight) continue;
    // Each check goes to the first endpoint of its key and URL that has none yet.
    for (auto& check : model_endpoint_checks(cfg, inst.impl, inst.config, prefix))
      for (auto i = first; i < endpoints.size(); ++i)
        if (!endpoints[i].check && endpoints[i].key == check.url_key &&
            endpoints[i].url == check.url) {
          endpoints[i].check = std::move(check);
          break;
        }
  }
  return endpoints;
}

std::vector<ModelEndpointCheck> model_endpoint_checks(const json::object& cfg,
                                                      const std::string& impl,
                                                      const json::object& instance_config,
                                                      const std::string& prefix) {
  // The keys each live model server reads (src/models/configs); azure_openai_model's endpoint
  // has no /models route, so it keeps the plain readiness probe.
  std::string url_key, model_key, api_key_key, headers_key;
  if (impl == "vllm_model") {
    url_key = "base_url", model_key = "model", api_key_key = "api_key";
    headers_key = "default_headers";
  } else if (impl == "openai_model") {
    url_key = "openai_base_url", model_key = "openai_model", api_key_key = "openai_api_key";
    headers_key = "openai_default_headers";
  } else {
    return {};
  }
  ModelEndpointCheck base;
  base.url_key = prefix + "." + url_key;
  base.model = string_at(instance_config, model_key);
  base.model_key = prefix + "." + model_key;
  base.model_from_flag = !base.model.empty() && string_at(cfg, "policy_model_name") == base.model;
  base.api_key_key = prefix + "." + api_key_key;
  // As the model server sends them (upstream_client.cpp): its default headers, the key header
  // winning over one of the same name.
  if (const auto* h = instance_config.if_contains(headers_key); h && h->is_object())
    for (const auto& [name, value] : h->get_object())
      if (strcasecmp(std::string(name).c_str(), "authorization") != 0)
        base.headers.emplace_back(std::string(name), value.is_string()
                                                         ? std::string(value.get_string())
                                                         : core::render_json(value));
  base.api_key = string_at(instance_config, api_key_key, "EMPTY");
  base.headers.emplace_back("Authorization", "Bearer " + base.api_key);
  base.max_output_tokens =
      whole_number(core::find_path(cfg, "responses_create_params.max_output_tokens"));
  std::vector<ModelEndpointCheck> checks;
  const auto* urls = instance_config.if_contains(url_key);
  auto add = [&](const json::value& u) {
    if (!u.is_string()) return;
    checks.push_back(base);
    checks.back().url = std::string(u.get_string());
  };
  if (urls && urls->is_string()) add(*urls);
  if (urls && urls->is_array())
    for (const auto& u : urls->get_array()) add(u);
  return checks;
}

PreflightVerdict check_models_answer(const ModelEndpointCheck& check, int status,
                                     const std::string& body) {
  using Kind = PreflightVerdict::Kind;
  const std::string shown = core::masked_url(check.url);  // a password or key in it masked
  const std::string url = models_url(shown);
  const std::string where = "model endpoint " + shown + " (" + check.url_key + "): GET " + url +
                            " answered " + std::to_string(status);
  if (status == 401 || status == 403)
    return {Kind::fail, where + ": the endpoint refused the API key; check " + check.api_key_key +
                            " (--model-api-key, policy_api_key)" + kSkipHint};
  boost::system::error_code ec;
  const auto parsed = core::parse_json(body, ec);
  const auto entries = ec ? std::nullopt : model_entries(parsed);
  if (!entries) {
    // A wrong base URL: a 404, or a web page or some other JSON where a model list belongs.
    if (status == 404 || (status >= 200 && status < 300)) {
      std::string message = where + " (" + excerpt(body, check.api_key) +
                            "), not an OpenAI model list ({\"object\": \"list\", \"data\": "
                            "[{\"id\": ...}]}): the base URL is probably wrong";
      const std::string base = strip_slashes(shown);
      if (!base.ends_with("/v1"))
        message += "; OpenAI-compatible base URLs usually end in /v1: try " + base + "/v1";
      return {Kind::fail, message + kSkipHint};
    }
    // Not what a wrong URL looks like (a 5xx, a gateway without /models): the model calls may
    // still work, so do not block them.
    return {Kind::warn,
            where + " (" + excerpt(body, check.api_key) + "); cannot check the served models"};
  }
  if (check.model.empty()) return {};
  const json::object* served = nullptr;
  for (const auto* e : *entries)
    if (e->at("id").get_string() == check.model) served = e;
  if (!served) {
    std::string ids;
    for (std::size_t i = 0; i < entries->size() && i < kListedIds; ++i)
      ids += (i ? ", " : "") + std::string((*entries)[i]->at("id").get_string());
    if (entries->size() > kListedIds)
      ids += " (and " + std::to_string(entries->size() - kListedIds) + " more)";
    const std::string from = check.model_from_flag ? "--model / policy_model_name, " : "";
    return {Kind::fail, "model endpoint " + shown + " (" + check.url_key +
                            ") does not serve model '" + check.model + "' (" + from +
                            check.model_key + "); it serves: " + (ids.empty() ? "none" : ids) +
                            ". Set " + (check.model_from_flag ? "--model" : check.model_key) +
                            " to one of them" + kSkipHint};
  }
  const auto max_len = whole_number(served->if_contains("max_model_len"));
  if (check.max_output_tokens && max_len && *check.max_output_tokens >= *max_len)
    return {Kind::fail, "--max-output-tokens " + std::to_string(*check.max_output_tokens) +
                            " (responses_create_params.max_output_tokens) cannot fit: " + shown +
                            " serves " + check.model + " with max_model_len " +
                            std::to_string(*max_len) +
                            " (prompt + output must fit); lower --max-output-tokens"};
  return {};
}

}  // namespace gym::orchestrator
