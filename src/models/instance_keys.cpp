#include "models/instance_keys.h"

#include "http/url.h"

#include <boost/json.hpp>

namespace gym::models {
namespace json = boost::json;

namespace {

bool is_empty_value(const json::value& v) {
  if (v.is_null()) return true;
  if (v.is_bool()) return !v.get_bool();
  if (v.is_string()) return v.get_string().empty();
  if (v.is_object()) return v.get_object().empty();
  if (v.is_array()) return v.get_array().empty();
  return false;
}

}  // namespace

InstanceKeys::InstanceKeys(const core::ServerInstance& instance)
    : config_(instance.config),
      prefix_(instance.name + "." + instance.server_type + "." + instance.impl) {}

std::string InstanceKeys::required_string(std::string_view name, std::string_view how) const {
  const auto* v = config_.if_contains(name);
  if (!v || v->is_null() || (v->is_string() && v->get_string().empty()))
    throw core::ConfigError("config error: " + key(name) + " is required: set it with " +
                            std::string(how));
  if (!v->is_string())
    throw core::ConfigError("config error: " + key(name) + " must be a string (got " +
                            json::serialize(*v) + "); set it with " + std::string(how));
  return std::string(v->get_string());
}

std::vector<std::string> InstanceKeys::required_strings(std::string_view name,
                                                        std::string_view how) const {
  const auto* v = config_.if_contains(name);
  if (v && v->is_array()) {
    std::vector<std::string> out;
    for (const auto& item : v->get_array()) {
      if (!item.is_string() || item.get_string().empty())
        throw core::ConfigError("config error: " + key(name) +
                                " must be a URL or a list of URLs (got " + json::serialize(*v) +
                                ")");
      out.emplace_back(item.get_string());
    }
    if (out.empty())
      throw core::ConfigError("config error: " + key(name) + " is an empty list: set it with " +
                              std::string(how));
    return out;
  }
  return {required_string(name, how)};
}

std::string InstanceKeys::string_or(std::string_view name, std::string_view def) const {
  const auto* v = config_.if_contains(name);
  if (!v || v->is_null() || (v->is_string() && v->get_string().empty())) return std::string(def);
  if (!v->is_string())
    throw core::ConfigError("config error: " + key(name) + " must be a string (got " +
                            json::serialize(*v) + ")");
  return std::string(v->get_string());
}

bool InstanceKeys::flag(std::string_view name, bool def) const {
  try {
    return core::get_bool(config_, name, def);
  } catch (const core::ConfigError&) {
    throw core::ConfigError("config error: " + key(name) + " must be true or false (got " +
                            json::serialize(config_.at(name)) + "); e.g. ++" + key(name) + "=" +
                            (def ? "true" : "false"));
  }
}

std::int64_t InstanceKeys::count(std::string_view name, std::int64_t def, std::int64_t min) const {
  try {
    return core::get_int(config_, name, def, min, 1'000'000'000);
  } catch (const core::ConfigError&) {
    throw core::ConfigError("config error: " + key(name) +
                            " must be an integer >= " + std::to_string(min) + " (got " +
                            json::serialize(config_.at(name)) + ")");
  }
}

const json::object* InstanceKeys::mapping(std::string_view name) const {
  const auto* v = config_.if_contains(name);
  if (!v || v->is_null()) return nullptr;
  if (!v->is_object())
    throw core::ConfigError("config error: " + key(name) + " must be a mapping (got " +
                            json::serialize(*v) + ")");
  return &v->get_object();
}

void InstanceKeys::reject_unsupported(std::string_view name, std::string_view why) const {
  const auto* v = config_.if_contains(name);
  if (!v || is_empty_value(*v)) return;
  throw core::ConfigError("config error: " + key(name) + " is not supported by gym-cpp (" +
                          std::string(why) + "); remove it or set it to its default");
}

std::string checked_base_url(std::string url, const std::string& key) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  std::string why;
  if (!http::parse_url(url, why))
    throw core::ConfigError("config error: " + key + " is not a usable endpoint URL: " + why +
                            " (e.g. http://localhost:8000/v1)");
  return url;
}

}  // namespace gym::models
