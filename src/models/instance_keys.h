#pragma once
// Reading a live model server's keys with errors that name the full key
// (`policy_model.responses_api_models.vllm_model.base_url`) and the flag or override that sets
// it. Startup only: every problem is a core::ConfigError before the server listens.
#include "core/config.h"

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gym::models {

// How a user sets the endpoint keys of a live model server (for "is required" errors).
inline constexpr std::string_view kModelUrlHow = "--model-url or ++policy_base_url=<url>";
inline constexpr std::string_view kModelApiKeyHow = "--model-api-key or ++policy_api_key=<key>";
inline constexpr std::string_view kModelNameHow = "--model or ++policy_model_name=<name>";

class InstanceKeys {
 public:
  explicit InstanceKeys(const core::ServerInstance& instance);

  const std::string& prefix() const { return prefix_; }  // name.server_type.impl
  std::string key(std::string_view name) const { return prefix_ + "." + std::string(name); }

  // A non-empty string; `how` says how a user sets it (e.g. "--model-url or policy_base_url").
  std::string required_string(std::string_view name, std::string_view how) const;
  // A non-empty string or a non-empty list of them (vllm_model's base_url).
  std::vector<std::string> required_strings(std::string_view name, std::string_view how) const;
  // A string; `def` when the key is absent, null or empty.
  std::string string_or(std::string_view name, std::string_view def) const;
  bool flag(std::string_view name, bool def) const;
  std::int64_t count(std::string_view name, std::int64_t def, std::int64_t min) const;
  // A mapping or null/absent (nullptr).
  const boost::json::object* mapping(std::string_view name) const;
  // Keys upstream has and gym-cpp does not implement: set to anything but an empty value
  // (null, false, "", {}) they are a ConfigError naming the key and `why`.
  void reject_unsupported(std::string_view name, std::string_view why) const;

 private:
  const boost::json::object& config_;
  std::string prefix_;
};

// A base URL as given, without a trailing slash; a ConfigError naming `key` unless it is an
// http:// or https:// URL.
std::string checked_base_url(std::string url, const std::string& key);

}  // namespace gym::models
