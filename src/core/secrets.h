#pragma once
// Secrets in a config (API keys, tokens, passwords) masked wherever a config is shown: `gym
// config show`, the head server's /global_config_dict_yaml, logs. Servers that need a key get
// the unmasked config through their environment (NEMO_GYM_CONFIG_DICT), never over HTTP.
#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::core {

inline constexpr std::string_view kMaskedSecret = "****";  // upstream's mask

// Whether a key names a secret: *api_key, *_token, token, *access_key, authorization, *secret*,
// *password* (case-insensitive, '-' read as '_'), e.g. policy_api_key, hf_token, api-key.
// Keys that only count tokens (max_output_tokens, return_token_id_information) are not secrets.
bool is_secret_key(std::string_view key);

// A copy of `cfg` with every non-empty string (or list of strings) under a secret key replaced by
// kMaskedSecret, at any depth.
boost::json::object masked_secrets(const boost::json::object& cfg);

// An override (`k=v`, `+k=v`, `++k=v`) of a secret (is_secret_key of the key's last part) whose
// value is a literal, not an interpolation such as ${oc.env:KEY}: its "++a.api_key=" part and
// its value.
std::optional<std::pair<std::string, std::string>> secret_override(const std::string& arg);

// A command line as a user can paste it back (core::shell_word per word), with the secrets it
// carries masked: the value of --model-api-key (either form) and of any override of a secret
// key (`++policy_api_key=...`, `+a.b.hf_token=...`). The user gives those again.
std::string masked_command_line(const std::vector<std::string>& args);

}  // namespace gym::core
