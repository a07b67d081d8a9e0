// The merged configuration (docs/reference/configuration.md): loading and merging YAML sources, CLI
// overrides, directives, interpolation, defaults, server instances and typed access. The tree is a
// boost::json::object (insertion ordered, like the YAML it came from).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/config_error.h"

namespace gym::core {

// Where each key of a merged config came from: a file path or "the command line (++k=v)".
// Keys are dotted paths of mappings; a list counts as one leaf.
class ConfigOrigins {
 public:
  void set(const std::string& dotted, const std::string& origin);
  // Records `origin` for `tree` itself (when `prefix` is not empty) and every key under it.
  void record(const boost::json::value& tree, const std::string& origin,
              const std::string& prefix = "");
  // The origin of `dotted`, else of its nearest recorded ancestor; empty when unknown.
  std::string find(std::string_view dotted) const;

 private:
  std::map<std::string, std::string, std::less<>> by_key_;
};

using GetEnv = std::function<std::optional<std::string>(const std::string&)>;

// The text of a bundled preset for a relative config path (e.g.
// `responses_api_models/vllm_model/configs/vllm_model.yaml`), or nullopt when none has that path.
using BundledConfig = std::function<std::optional<std::string>(const std::string& path)>;

struct ConfigSources {
  std::vector<std::string> config_paths;  // --config flags, in order
  std::vector<std::string> overrides;     // "key=v", "+key=v", "++key=v"
  // Where relative config paths and env.yaml are looked up, in order (search roots); empty means
  // the working directory only.
  std::vector<std::string> search_roots;
  GetEnv getenv;  // for ${oc.env:...}; empty means ::getenv
  // false (--no-env-file, upstream's skip_load_from_dotenv): no env file at all.
  bool load_env_yaml = true;
  // --env-file: this file (which must exist) instead of the first env.yaml of the search roots.
  std::string env_file;
  // --initial-config (upstream's initial_global_config_dict): a YAML mapping merged above the
  // env file and below the overrides; its `config_paths` are used when the command line gives
  // none, before the env file's.
  std::string initial_config;
  // The last resort of the config path lookup, when no search root holds a file: the presets
  // compiled into the binary (set by the cli; core knows no presets). Empty: none.
  BundledConfig bundled_config;
};

// gym-cpp's install root: the tree holding its own environments/ (presets, example data,
// python_example). An installed gym uses <prefix>/share/gym-cpp beside its bin/ (found from
// /proc/self/exe, so a moved prefix still works); a gym run from its build tree, the source
// tree it was built from.
const std::string& install_root();

// search_roots = NEMO_GYM_EXTRA_ROOTS (':'-separated), the working directory, the install root;
// getenv = ::getenv.
ConfigSources default_sources();

// Every place a relative `path` may live, in `roots` order: `root/path`, and in gym-cpp's install
// root a `resources_servers/<env>/...` path also as `environments/<env>/...` (where its own
// environments are). An absolute path is its only candidate.
std::vector<std::filesystem::path> search_candidates(const std::string& path,
                                                     const std::vector<std::string>& roots);

// Where a relative path lives: the first `root/path` that exists, in `roots` order (an
// absolute path must exist as given). Otherwise a ConfigError naming `what` ("config file",
// "dataset"), who referred to it (`referrer`, may be empty) and every place looked at.
std::string resolve_search_path(const std::string& path, const std::vector<std::string>& roots,
                                std::string_view what, std::string_view referrer = "");

// The whole pipeline: config files (includes flattened; a path no search root
// holds may be a bundled preset), env.yaml (or the env file), the initial config, overrides,
// directives, one error for every `???`, the policy_api_key default of vllm_model,
// interpolation, defaults. `config_paths` of the result lists every file loaded, as written, in
// merge order. Fills `origins` when given. Throws ConfigError.
boost::json::object load_config(const ConfigSources& sources, ConfigOrigins* origins = nullptr);

// Mappings merge recursively; lists and scalars are replaced. As in OmegaConf, a `???` in
// `over` never replaces a value `base` already has.
void deep_merge(boost::json::object& base, const boost::json::object& over);

// "a.b=v" sets an existing key, "+a.b=v" adds a new one, "++a.b=v" does either (creating
// intermediate mappings). `v` is YAML: 5, 5.0, true, null, 'quoted', [a, b], {a: 1}; an empty
// value is the empty string. Paths may index lists (a.b.0 or a.b[0]). Throws ConfigError.
void apply_override(boost::json::object& cfg, std::string_view override_text,
                    ConfigOrigins* origins = nullptr);

// ---- Where the deployment listens (docs/design/processes.md#start-up) ----

// The address of this machine as upstream's `use_absolute_ip: true` means it: its host name
// resolved (IPv4), or the host name itself when it does not resolve. With that key load_config
// makes it the default_host (and so the head server's host unless head_server.host is set).
std::string this_machine_address();

// The address keys of a merged config, with their defaults written once: load_config fills
// these in, and every reader goes through from_config rather than its own literal.
struct DeploymentAddresses {
  std::string default_host = "127.0.0.1";  // default_host: servers without `host` listen here
  std::string head_host = "127.0.0.1";     // head_server.host (default: default_host)
  int head_port = 11000;                   // head_server.port
  int port_range_low = 10001;              // servers without a port get a free one in
  int port_range_high = 20000;             //   [port_range_low, port_range_high]

  // ConfigError naming the key for an invalid value.
  static DeploymentAddresses from_config(const boost::json::object& cfg);
};

// ---- Server instances (docs/reference/configuration.md#server-instances) ----

inline constexpr std::array<std::string_view, 3> kServerTypes{
    "responses_api_models", "resources_servers", "responses_api_agents"};

// NeMo Gym's reserved top-level keys, plus gym-cpp's `slurm` (never server instances).
bool is_reserved_key(std::string_view top_level_key);

struct ServerInstance {
  std::string name;         // top-level key
  std::string server_type;  // one of kServerTypes
  std::string impl;         // built-in implementation name
  boost::json::object config;
};

// Instances in config order. A top-level key is one when it is not reserved and its value is
// a mapping with exactly one server-type key holding exactly one implementation mapping. A
// block that has a server-type key but is otherwise malformed ("almost server") is a
// ConfigError naming every such key, unless `error_on_almost_servers: false` (then a warning).
std::vector<ServerInstance> find_server_instances(const boost::json::object& cfg,
                                                  const ConfigOrigins* origins = nullptr);

// "http://host:port" of a configured instance of the merged config (its `host`, else
// `default_host`, else 127.0.0.1). ConfigError when it is unknown or has no port.
std::string instance_url(const boost::json::object& cfg, std::string_view instance_name);

// Built-in implementation names per server type, supplied by the caller.
using ImplCatalog = std::map<std::string, std::vector<std::string>, std::less<>>;

// Checks every instance's implementation against `catalog` (one that is not built in must be an
// external server: an `entrypoint` that find_server_folder finds in `search_roots`), resources
// servers' `domain`, every reference {type: <server type>, name: X} anywhere in the tree, and the
// unsupported keys (prompt_config, skills, rollout_collection_driver: an error rather than silently
// ignored, docs/design/deviations.md#config). One ConfigError lists all problems.
void validate_server_instances(const boost::json::object& cfg, const ImplCatalog& catalog,
                               const std::vector<std::string>& search_roots,
                               const ConfigOrigins* origins = nullptr);

// Whether `instance` names a built-in implementation of `catalog`.
bool is_builtin(const ServerInstance& instance, const ImplCatalog& catalog);

// The folder of an external server as upstream's ng_run finds it: `<server_type>/<impl>` in
// `search_roots` (search_candidates), the first that holds the instance's `entrypoint` (a relative
// path). nullopt when none does or there is no relative entrypoint; `looked` (optional) gets every
// folder tried.
std::optional<std::filesystem::path> find_server_folder(
    const ServerInstance& instance, const std::vector<std::string>& search_roots,
    std::vector<std::string>* looked = nullptr);

// The candidate closest to `word` by edit distance, if within max(2, size/3) edits.
std::optional<std::string> did_you_mean(std::string_view word,
                                        const std::vector<std::string>& candidates);

// ---- Typed access ----
// Dotted paths (a.b.c, lists by index: a.b.0 or a.b[0]). An absent or null key gives the
// default; a value of the wrong type or out of range is a ConfigError naming the key, the rule
// and an override that fixes it. Lax like OmegaConf + pydantic: integers accept integral
// doubles and numeric strings, doubles accept integers and numeric strings, bools accept
// true/false and the strings "true"/"false" (any case), strings accept numbers.

const boost::json::value* find_path(const boost::json::object& cfg, std::string_view dotted);
std::int64_t get_int(const boost::json::object& cfg, std::string_view dotted, std::int64_t def,
                     std::int64_t min, std::int64_t max);
double get_double(const boost::json::object& cfg, std::string_view dotted, double def, double min,
                  double max);
bool get_bool(const boost::json::object& cfg, std::string_view dotted, bool def);
std::string get_string(const boost::json::object& cfg, std::string_view dotted,
                       std::string_view def);

}  // namespace gym::core
