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

// Whether a key names a secret, the rule NeMo Gym masks config leaves by: the key contains "key"
// or "token" (so hf_token, policy_api_key, Ocp-Apim-Subscription-Key), or "secret", "password",
// "passwd", "credential", "authorization", "subscription", "private" (case-insensitive, '-' read
// as '_'). Two settings of ours that only name tokenisation (tokenizer,
// on_token_contiguity_break) are not. Only non-empty strings under such a key are masked
// (masked_secrets): max_output_tokens: 1024 stays readable.
bool is_secret_key(std::string_view key);

// Whether a request header carries a credential: a secret key (Authorization,
// Proxy-Authorization, api-key, x-api-key, ...) or Cookie.
bool is_secret_header(std::string_view name);

// Whether a URL query parameter carries a credential: a secret key (api-key, key, token,
// access_token, ...) or a signature (sig, X-Amz-Signature), as presigned URLs have.
bool is_secret_query_parameter(std::string_view name);

// `text` with the password of its userinfo (or its user when it has no password: a token, as
// in https://<token>@host/) and the value of every secret query parameter replaced by
// kMaskedSecret, when it is a URL ("http://u:****@h/v1?api-key=****"); anything else as is, and
// a URL without secrets unchanged to the byte.
std::string masked_url(std::string_view text);

// `text` with every URL in it (scheme://...) masked by masked_url: a message or log line that
// names an endpoint.
std::string masked_urls_in(std::string_view text);

// `text` with every spelling of `secret` replaced by kMaskedSecret: as is, JSON-escaped (\u0073,
// \/, at any depth of escaping) or percent-encoded, character by character. What an endpoint
// echoes back of a key it was sent. A secret shorter than 4 characters is not looked for (it
// would mask ordinary words).
std::string masked_secret(std::string_view text, std::string_view secret);

// A copy of `cfg` with every non-empty string under a secret key (alone, in a list or in a
// mapping under it) replaced by kMaskedSecret, at any depth, and every other string masked by
// masked_url.
boost::json::object masked_secrets(const boost::json::object& cfg);

// An override (`k=v`, `+k=v`, `++k=v`) of a secret (is_secret_key of the key's last part) whose
// value is a literal string, not an interpolation such as ${oc.env:KEY} nor a number or boolean:
// its "++a.api_key=" part and its value.
std::optional<std::pair<std::string, std::string>> secret_override(const std::string& arg);

// A command line as a user can paste it back (core::shell_word per word), with the secrets it
// carries masked: the value of --model-api-key (either form) and of any override of a secret
// key (`++policy_api_key=...`, `+a.b.hf_token=...`; not one whose value is a number or a
// boolean, such as `++max_output_tokens=1024`), and the secrets of any URL (masked_urls_in).
// The user gives those again.
std::string masked_command_line(const std::vector<std::string>& args);

}  // namespace gym::core
