// Server instance blocks, references and their validation
// (docs/reference/configuration.md#server-instances).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "core/config.h"
#include "core/config_steps.h"

namespace gym::core {
namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 36> kReservedKeys{"config_paths",
                                                         "entrypoint",
                                                         "default_host",
                                                         "head_server",
                                                         "disallowed_ports",
                                                         "head_server_deps",
                                                         "python_version",
                                                         "pip_install_verbose",
                                                         "use_absolute_ip",
                                                         "uv_pip_set_python",
                                                         "skip_venv_if_present",
                                                         "hf_token",
                                                         "ray_head_node_address",
                                                         "port_range_low",
                                                         "port_range_high",
                                                         "dry_run",
                                                         "model_endpoint_readiness_timeout_seconds",
                                                         "allow_openai_version_skew",
                                                         "uv_cache_dir",
                                                         "uv_venv_dir",
                                                         "results_dir",
                                                         "cache_dir",
                                                         "_inherit_from",
                                                         "_copy",
                                                         "nemo_gym_log_dir",
                                                         "verbose",
                                                         "json",
                                                         "query",
                                                         "observability_enabled",
                                                         "model_call_capture_dir",
                                                         "token_id_capture",
                                                         "component_name",
                                                         "skip_verification",
                                                         "skip_verification_reward",
                                                         "telemetry",
                                                         "slurm"};  // gym eval submit

constexpr std::array<std::string_view, 12> kDomains{
    "math",         "coding", "agent", "knowledge",   "instruction_following",
    "long_context", "safety", "games", "translation", "e2e",
    "rlhf",         "other"};

// Not supported: an error, not silently ignored (docs/design/deviations.md#config).
constexpr std::array<std::string_view, 3> kUnsupportedKeys{"prompt_config", "skills",
                                                           "rollout_collection_driver"};

// NeMo Gym's training-token capture writes token ids to a store beside the rollouts; gym-cpp
// has none: the ids travel on the rollout rows themselves.
constexpr std::string_view kTokenIdCaptureWhy =
    "gym-cpp does not implement NeMo Gym's training-token capture; token ids reach the rollout "
    "rows through vllm_model's `return_token_id_information: true` (the preset "
    "--model-type vllm_model/vllm_model_for_training). Remove it or set it to false";

// Whether a token_id_capture value turns the capture on: `true`, or a mapping whose `enabled`
// is true (booleans as the typed getters read them; anything unreadable counts as on).
bool token_capture_enabled(const json::value& v) {
  if (v.is_null()) return false;
  if (const auto* block = v.if_object()) {
    try {
      return get_bool(*block, "enabled", false);
    } catch (const ConfigError&) {
      return true;
    }
  }
  const json::object holder{{"v", v}};
  try {
    return get_bool(holder, "v", false);
  } catch (const ConfigError&) {
    return true;
  }
}

bool is_server_type(std::string_view key) {
  return std::find(kServerTypes.begin(), kServerTypes.end(), key) != kServerTypes.end();
}

// Why a block that has a server-type key is not an instance; empty when it is one, or when
// it has no server-type key at all.
std::string almost_server_problem(const json::object& block) {
  std::vector<std::string> types;
  std::vector<std::string> others;
  for (const auto& entry : block) {
    (is_server_type(entry.key()) ? types : others).emplace_back(entry.key());
  }
  if (types.empty()) return "";
  if (types.size() > 1) {
    return fmt::format("it has {} server types ({}); an instance has exactly one", types.size(),
                       fmt::join(types, ", "));
  }
  const std::string& type = types.front();
  if (!others.empty()) {
    return fmt::format(
        "it has keys beside '{}' ({}); move them into the implementation block "
        "{}.<impl>",
        type, fmt::join(others, ", "), type);
  }
  const json::value& impls = block.at(type);
  if (!impls.is_object() || impls.get_object().size() != 1) {
    std::vector<std::string> names;
    if (impls.is_object()) {
      for (const auto& entry : impls.get_object()) names.emplace_back(entry.key());
    }
    return fmt::format(
        "'{}' must hold exactly one implementation block such as "
        "{{{}: {{<impl>: {{...}}}}}}, got {}",
        type, type,
        !impls.is_object() ? describe(impls)
        : names.empty()    ? std::string("none")
                           : fmt::format("{} ({})", names.size(), fmt::join(names, ", ")));
  }
  const auto& impl = *impls.get_object().begin();
  if (!impl.value().is_object()) {
    return fmt::format("'{}.{}' must be a mapping of settings, got {}", type,
                       std::string_view(impl.key()), describe(impl.value()));
  }
  return "";
}

// "config error in F: <problem>" for one, a list for several.
[[noreturn]] void throw_problems(const std::vector<std::pair<std::string, std::string>>& problems,
                                 const ConfigOrigins* origins, std::string_view what,
                                 std::string_view footer) {
  if (problems.size() == 1) {
    throw ConfigError(fmt::format("{}{}{}", error_prefix(origins, problems[0].first),
                                  problems[0].second,
                                  footer.empty() ? "" : "\n" + std::string(footer)));
  }
  std::string list;
  for (const auto& [key, problem] : problems) {
    std::string origin = origins ? origins->find(key) : "";
    list += fmt::format("\n  - {}{}", problem, origin.empty() ? "" : " (in " + origin + ")");
  }
  throw ConfigError(fmt::format("config error: {} {}:{}{}", problems.size(), what, list,
                                footer.empty() ? "" : "\n" + std::string(footer)));
}

template <typename Range>
std::string quoted_list(const Range& names) {
  std::vector<std::string> quoted;
  for (const auto& n : names) quoted.push_back(fmt::format("'{}'", n));
  return quoted.empty() ? "(none)" : fmt::format("{}", fmt::join(quoted, ", "));
}

// How to add a missing instance of `server_type` from the command line.
std::string selector_hint(std::string_view server_type) {
  if (server_type == "responses_api_models")
    return "; add a model server with --model-type NAME (e.g. --model-type replay_model, or "
           "vllm_model with --model-url and --model; `gym list` shows the model types)";
  if (server_type == "resources_servers")
    return "; add an environment with --resources-server NAME (`gym list` shows them)";
  return "";
}

void check_references(const json::value& v, const std::string& path,
                      const std::vector<ServerInstance>& instances,
                      std::vector<std::pair<std::string, std::string>>& problems) {
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.get_array().size(); ++i) {
      check_references(v.get_array()[i], child_path(path, i), instances, problems);
    }
    return;
  }
  if (!v.is_object()) return;
  const json::object& object = v.get_object();
  const json::value* type = object.if_contains("type");
  const json::value* name = object.if_contains("name");
  if (type && type->is_string() && is_server_type(type->get_string()) && name) {
    std::vector<std::string> names;
    for (const auto& instance : instances) {
      if (instance.server_type == type->get_string()) names.push_back(instance.name);
    }
    if (!name->is_string()) {
      problems.emplace_back(path, fmt::format("'{}.name' must be the name of a {} instance; got "
                                              "{}; available: {}",
                                              path, std::string_view(type->get_string()),
                                              describe(*name), quoted_list(names)));
    } else if (std::find(names.begin(), names.end(), name->get_string()) == names.end()) {
      auto guess = did_you_mean(name->get_string(), names);
      problems.emplace_back(
          path,
          fmt::format("'{}' refers to {} '{}', which is not defined; {}{}", path,
                      std::string_view(type->get_string()), std::string_view(name->get_string()),
                      guess ? fmt::format("did you mean '{}'?", *guess)
                            : fmt::format("available {}: {}", std::string_view(type->get_string()),
                                          quoted_list(names)),
                      guess ? "" : selector_hint(type->get_string())));
    }
  }
  for (const auto& entry : object) {
    check_references(entry.value(), child_path(path, entry.key()), instances, problems);
  }
}

}  // namespace

bool is_reserved_key(std::string_view top_level_key) {
  return std::find(kReservedKeys.begin(), kReservedKeys.end(), top_level_key) !=
         kReservedKeys.end();
}

std::vector<ServerInstance> find_server_instances(const json::object& cfg,
                                                  const ConfigOrigins* origins) {
  std::vector<ServerInstance> instances;
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& entry : cfg) {
    if (is_reserved_key(entry.key()) || !entry.value().is_object()) continue;
    const json::object& block = entry.value().get_object();
    if (std::string problem = almost_server_problem(block); !problem.empty()) {
      problems.emplace_back(entry.key(), fmt::format("'{}' looks like a server instance, but {}",
                                                     std::string_view(entry.key()), problem));
      continue;
    }
    if (block.size() != 1 || !is_server_type(block.begin()->key())) continue;
    const auto& impl = *block.begin()->value().get_object().begin();
    instances.push_back(ServerInstance{std::string(entry.key()), std::string(block.begin()->key()),
                                       std::string(impl.key()), impl.value().get_object()});
  }
  if (problems.empty()) return instances;
  if (get_bool(cfg, "error_on_almost_servers", true)) {
    throw_problems(problems, origins,
                   "top-level blocks look like server instances but are "
                   "malformed",
                   "An instance is <name>: {<server type>: {<impl>: {<settings>}}}; set "
                   "error_on_almost_servers: false to ignore such blocks.");
  }
  for (const auto& [key, problem] : problems) spdlog::warn("config: {}; ignoring it", problem);
  return instances;
}

bool is_builtin(const ServerInstance& instance, const ImplCatalog& catalog) {
  auto builtins = catalog.find(instance.server_type);
  return builtins != catalog.end() && std::find(builtins->second.begin(), builtins->second.end(),
                                                instance.impl) != builtins->second.end();
}

std::optional<std::filesystem::path> find_server_folder(
    const ServerInstance& instance, const std::vector<std::string>& search_roots,
    std::vector<std::string>* looked) {
  const json::value* entrypoint = instance.config.if_contains("entrypoint");
  if (!entrypoint || !entrypoint->is_string() || entrypoint->get_string().empty()) return {};
  const std::filesystem::path file(std::string(entrypoint->get_string()));
  if (file.is_absolute()) return {};
  const std::vector<std::string> cwd_only{"."};
  for (const auto& folder : search_candidates(instance.server_type + "/" + instance.impl,
                                              search_roots.empty() ? cwd_only : search_roots)) {
    if (looked) looked->push_back(folder.string());
    std::error_code ec;
    if (std::filesystem::is_regular_file(folder / file, ec))
      return std::filesystem::absolute(folder, ec).lexically_normal();
  }
  return {};
}

namespace {

// Why a non-built-in instance cannot run as an external server
// (docs/design/wire-compatibility.md#external-servers), or empty when it can.
std::string external_server_problem(const ServerInstance& instance, const ImplCatalog& catalog,
                                    const std::vector<std::string>& search_roots) {
  auto builtins = catalog.find(instance.server_type);
  std::vector<std::string> names =
      builtins == catalog.end() ? std::vector<std::string>{} : builtins->second;
  auto guess = did_you_mean(instance.impl, names);
  std::string not_builtin =
      fmt::format("instance '{}': '{}' is not a built-in {} implementation{}; built-in: {}",
                  instance.name, instance.impl, instance.server_type,
                  guess ? fmt::format(" (did you mean '{}'?)", *guess) : "", quoted_list(names));
  const json::value* entrypoint = instance.config.if_contains("entrypoint");
  if (!entrypoint || entrypoint->is_null())
    return not_builtin + fmt::format(
                             ". To run your own server instead, give it an `entrypoint` (e.g. "
                             "app.py) in the folder {}/{}/",
                             instance.server_type, instance.impl);
  if (!entrypoint->is_string() || entrypoint->get_string().empty() ||
      std::filesystem::path(std::string(entrypoint->get_string())).is_absolute())
    return not_builtin + fmt::format(
                             "; its `entrypoint` must be a file name relative to the server's "
                             "folder {}/{}/, such as app.py; got {}",
                             instance.server_type, instance.impl, describe(*entrypoint));
  std::vector<std::string> looked;
  if (find_server_folder(instance, search_roots, &looked)) return "";
  return not_builtin + fmt::format(
                           ", and no folder {}/{}/ holding its entrypoint '{}' was found to run "
                           "it as an external server. Looked in: {}. Check the spelling, or add "
                           "the directory that holds {}/ with --search-dir",
                           instance.server_type, instance.impl,
                           std::string(entrypoint->get_string()), fmt::join(looked, ", "),
                           instance.server_type);
}

}  // namespace

void validate_server_instances(const json::object& cfg, const ImplCatalog& catalog,
                               const std::vector<std::string>& search_roots,
                               const ConfigOrigins* origins) {
  std::vector<ServerInstance> instances = find_server_instances(cfg, origins);
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& key : kUnsupportedKeys) {
    const json::value* v = cfg.if_contains(key);
    if (v && !v->is_null()) {
      problems.emplace_back(std::string(key),
                            fmt::format("'{}' is not supported in this release; remove it", key));
    }
  }
  if (const auto* capture = cfg.if_contains("token_id_capture");
      capture && token_capture_enabled(*capture)) {
    const bool block = capture->is_object();
    problems.emplace_back(
        block ? "token_id_capture.enabled" : "token_id_capture",
        fmt::format("'{}' is set: {}", block ? "token_id_capture.enabled" : "token_id_capture",
                    kTokenIdCaptureWhy));
  }
  for (const auto& instance : instances) {
    std::string base = fmt::format("{}.{}.{}", instance.name, instance.server_type, instance.impl);
    if (const auto* capture = instance.config.if_contains("token_id_capture");
        capture && instance.server_type == "responses_api_agents" &&
        token_capture_enabled(*capture))
      problems.emplace_back(
          base + ".token_id_capture",
          fmt::format("'{}.token_id_capture' is true: {}", base, kTokenIdCaptureWhy));
    if (!is_builtin(instance, catalog)) {
      if (auto problem = external_server_problem(instance, catalog, search_roots); !problem.empty())
        problems.emplace_back(instance.name, std::move(problem));
    }
    if (instance.server_type == "resources_servers") {
      const json::value* domain = instance.config.if_contains("domain");
      bool valid =
          domain && domain->is_string() &&
          std::find(kDomains.begin(), kDomains.end(), domain->get_string()) != kDomains.end();
      if (!valid) {
        std::optional<std::string> guess;
        if (domain && domain->is_string()) {
          guess = did_you_mean(domain->get_string(),
                               std::vector<std::string>(kDomains.begin(), kDomains.end()));
        }
        problems.emplace_back(
            base + ".domain",
            fmt::format("instance '{}' needs `domain`, one of {}; got {}{}; set it with "
                        "++{}.domain=<domain>",
                        instance.name, fmt::join(kDomains, ", "),
                        domain ? describe(*domain) : "nothing",
                        guess ? fmt::format(" (did you mean '{}'?)", *guess) : "", base));
      }
    }
    for (const auto& key : kUnsupportedKeys) {
      const json::value* v = instance.config.if_contains(key);
      if (v && !v->is_null()) {
        problems.emplace_back(
            base + "." + std::string(key),
            fmt::format("'{}.{}' is not supported in this release; remove it", base, key));
      }
    }
  }
  for (const auto& entry : cfg) {
    check_references(entry.value(), std::string(entry.key()), instances, problems);
  }
  if (!problems.empty()) throw_problems(problems, origins, "problems in the server config", "");
}

std::optional<std::string> did_you_mean(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  std::vector<std::size_t> previous(word.size() + 1);
  std::vector<std::size_t> current(word.size() + 1);
  for (const auto& candidate : candidates) {
    // The distance is at least the difference in length: skip what cannot beat the best.
    const std::size_t longer = std::max(candidate.size(), word.size());
    if (longer - std::min(candidate.size(), word.size()) >= best_distance) continue;
    // Levenshtein distance, two rows. A row's smallest entry never decreases further down, so
    // once it reaches the best distance this candidate cannot win.
    for (std::size_t j = 0; j <= word.size(); ++j) previous[j] = j;
    bool beaten = false;
    for (std::size_t i = 1; i <= candidate.size() && !beaten; ++i) {
      current[0] = i;
      std::size_t row_min = i;
      for (std::size_t j = 1; j <= word.size(); ++j) {
        std::size_t substitute = previous[j - 1] + (candidate[i - 1] == word[j - 1] ? 0 : 1);
        current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
        row_min = std::min(row_min, current[j]);
      }
      std::swap(previous, current);
      beaten = row_min >= best_distance;
    }
    if (!beaten && previous[word.size()] < best_distance) {
      best_distance = previous[word.size()];
      best = candidate;
    }
  }
  return best;
}

std::string instance_url(const json::object& cfg, std::string_view instance_name) {
  for (const auto& inst : find_server_instances(cfg)) {
    if (inst.name != instance_name) continue;
    if (!inst.config.contains("port"))
      throw ConfigError("server instance '" + inst.name + "' has no port in the merged config");
    return "http://" +
           get_string(inst.config, "host", DeploymentAddresses::from_config(cfg).default_host) +
           ":" + std::to_string(get_int(inst.config, "port", 0, 1, 65535));
  }
  throw ConfigError("no server instance named '" + std::string(instance_name) + "'");
}

}  // namespace gym::core
