// Loading and merging the config sources, overrides, and defaults
// (docs/reference/configuration.md#where-values-come-from).
#include "core/config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "core/config_steps.h"
#include "core/yaml_json.h"

namespace gym::core {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kConfigPaths = "config_paths";

bool is_missing_marker(const json::value& v) { return v.is_string() && v.get_string() == "???"; }

void merge_into(json::object& base, const json::object& over, ConfigOrigins* origins,
                const std::string& origin, const std::string& prefix) {
  for (const auto& [key, value] : over) {
    std::string path = child_path(prefix, key);
    json::value* existing = base.if_contains(key);
    if (existing && existing->is_object() && value.is_object()) {
      merge_into(existing->as_object(), value.get_object(), origins, origin, path);
    } else if (existing && is_missing_marker(value)) {
      // OmegaConf: a later `???` only says "required", it does not erase a value.
    } else {
      base[key] = value;
      if (origins) origins->record(value, origin, path);
    }
  }
}

json::object as_config_mapping(json::value v, const std::string& origin) {
  if (v.is_null()) return {};
  if (!v.is_object()) {
    throw ConfigError(
        fmt::format("config error in {}: the top level must be a mapping of keys "
                    "to values, got {}",
                    origin, describe(v)));
  }
  return std::move(v.as_object());
}

// What a file that is not a regular file is, for the error that refuses it.
std::string_view file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

ConfigError not_a_regular_file(const std::string& path, mode_t mode) {
  return ConfigError(fmt::format(
      "config error: config file '{}' is {}; only regular files are read as config files", path,
      file_kind(mode)));
}

ConfigError unreadable(const std::string& path, int err) {
  return ConfigError(fmt::format("config error: cannot read config file '{}': {}", path,
                                 err == ELOOP ? "it is a symlink loop (too many levels of "
                                                "symbolic links)"
                                              : std::strerror(err)));
}

// A config file's YAML. Only a regular file is read: a FIFO would block the load until something
// writes to it, a device has no end or acts when opened, a socket is no file. Checked before the
// open (opening a device can have effects) and again on the open file, opened non-blocking:
// nothing swapped in between can block either.
json::value load_config_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      throw ConfigError(fmt::format("config error: config file '{}' does not exist", path));
    throw unreadable(path, errno);
  }
  if (!S_ISREG(st.st_mode)) throw not_a_regular_file(path, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw unreadable(path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) throw unreadable(path, errno);
  if (!S_ISREG(st.st_mode)) throw not_a_regular_file(path, st.st_mode);
  // One byte past the limit at most: parse_yaml refuses a text over it.
  std::string text(kMaxYamlBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw unreadable(path, errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return parse_yaml(text, path);
}

// Removes and returns a file's own `config_paths` (a list of paths, or one path).
std::vector<std::string> take_config_paths(json::object& tree, const std::string& origin) {
  std::vector<std::string> paths;
  json::value* v = tree.if_contains(kConfigPaths);
  if (!v) return paths;
  json::array list = v->is_array() ? v->get_array() : json::array{*v};
  for (const auto& item : list) {
    if (item.is_null()) continue;
    if (!item.is_string()) {
      throw ConfigError(
          fmt::format("config error in {}: `config_paths` must be a list of file "
                      "paths, got {}; e.g. config_paths: [resources_servers/x/"
                      "configs/x.yaml]",
                      origin, describe(*v)));
    }
    paths.emplace_back(item.get_string());
  }
  tree.stable_erase(kConfigPaths);
  return paths;
}

// Loads config files with their includes, flattened so that each file comes after (overrides)
// everything it includes and each include tree stays contiguous (a later sibling overrides an
// earlier one with its whole subtree). A file reached twice is loaded at its first position.
class IncludeLoader {
 public:
  IncludeLoader(const std::vector<std::string>& roots, const BundledConfig& bundled)
      : roots_(roots), bundled_(bundled) {}

  void load(const std::string& entry, const std::string& included_by) {
    std::string origin;  // the file, or what a bundled preset is called
    std::optional<std::string> bundled_text;
    try {
      origin = resolve_search_path(entry, roots_, "config file", included_by);
    } catch (const ConfigError&) {
      // NeMo Gym's preset paths (responses_api_models/vllm_model/configs/vllm_model.yaml) work
      // from any directory: the binary carries them.
      if (!bundled_ || !(bundled_text = bundled_(entry))) throw;
      origin = "the built-in preset " + fs::path(entry).lexically_normal().string();
    }
    std::error_code ec;
    std::string canonical = bundled_text ? origin : fs::weakly_canonical(origin, ec).string();
    if (!seen_.insert(ec ? origin : canonical).second) {
      spdlog::warn(
          "config file '{}' is included more than once (again by {}); it is loaded once, "
          "at its first position. To configure two servers from one file, give the second "
          "one `_inherit_from: <first instance>` instead.",
          entry, included_by.empty() ? "the command line" : included_by);
      return;
    }
    json::object tree = as_config_mapping(
        bundled_text ? parse_yaml(*bundled_text, origin) : load_config_file(origin), origin);
    for (const auto& include : take_config_paths(tree, origin)) load(include, origin);
    entries_.push_back(entry);
    files_.emplace_back(origin, std::move(tree));
  }

  // (path, tree) in merge order.
  std::vector<std::pair<std::string, json::object>>& files() { return files_; }
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  const std::vector<std::string>& roots_;
  const BundledConfig& bundled_;
  std::set<std::string> seen_;
  std::vector<std::string> entries_;
  std::vector<std::pair<std::string, json::object>> files_;
};

std::optional<std::string> process_getenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

// The env file of `sources`: --env-file (which must exist), else the first env.yaml of the
// search roots; empty for none (also with load_env_yaml false).
std::string env_file_path(const ConfigSources& sources, const std::vector<std::string>& roots) {
  if (!sources.load_env_yaml) return "";
  std::error_code ec;
  if (!sources.env_file.empty()) {
    if (!fs::is_regular_file(sources.env_file, ec))
      throw ConfigError(fmt::format(
          "config error: the env file '{}' (--env-file) {}; give an existing YAML file, or "
          "--no-env-file to load none",
          sources.env_file,
          fs::exists(sources.env_file, ec) ? "is not a regular file" : "does not exist"));
    return sources.env_file;
  }
  for (const auto& root : roots)
    if (fs::is_regular_file(fs::path(root) / "env.yaml", ec))
      return (fs::path(root) / "env.yaml").lexically_normal().string();
  return "";
}

constexpr std::string_view kPolicyApiKey = "policy_api_key";

// A top-level block that is a vllm_model instance: {responses_api_models: {vllm_model: {...}}}.
bool is_vllm_model_block(std::string_view key, const json::value& v) {
  if (is_reserved_key(key) || !v.is_object() || v.get_object().size() != 1) return false;
  const auto* type = v.get_object().if_contains("responses_api_models");
  return type && type->is_object() && type->get_object().size() == 1 &&
         type->get_object().contains("vllm_model");
}

bool refers_to_policy_api_key(const json::value& v) {
  if (v.is_string()) return v.get_string().find("${policy_api_key}") != json::string::npos;
  if (const auto* o = v.if_object()) {
    for (const auto& entry : *o)
      if (refers_to_policy_api_key(entry.value())) return true;
  } else if (const auto* a = v.if_array()) {
    for (const auto& item : *a)
      if (refers_to_policy_api_key(item)) return true;
  }
  return false;
}

// A local vLLM needs no key, so vllm_model's `api_key: ${policy_api_key}` (its preset) works
// without one: with a vllm_model instance, policy_api_key unset (or null) and no reference to it
// outside vllm_model instances, policy_api_key is "EMPTY". Other model servers (openai_model,
// azure_openai_model) that refer to it still need it set.
void default_policy_api_key(json::object& cfg, ConfigOrigins& origins) {
  if (const auto* key = cfg.if_contains(kPolicyApiKey); key && !key->is_null()) return;
  bool vllm = false;
  for (const auto& entry : cfg) {
    if (is_vllm_model_block(entry.key(), entry.value())) {
      vllm = true;
    } else if (refers_to_policy_api_key(entry.value())) {
      return;
    }
  }
  if (!vllm) return;
  cfg[kPolicyApiKey] = "EMPTY";
  origins.set(std::string(kPolicyApiKey),
              "gym-cpp's default for vllm_model (EMPTY: a local vLLM needs no key)");
}

void set_default(json::object& cfg, std::string_view key, json::value v) {
  json::value* existing = cfg.if_contains(key);
  if (!existing || existing->is_null()) cfg[key] = std::move(v);
}

}  // namespace

std::vector<fs::path> search_candidates(const std::string& path,
                                        const std::vector<std::string>& roots) {
  std::vector<fs::path> tried;
  if (fs::path(path).is_absolute()) {
    tried.emplace_back(path);
    return tried;
  }
  constexpr std::string_view kResources = "resources_servers/";
  for (const auto& root : roots) {
    tried.push_back(fs::path(root) / path);
    // gym-cpp's own resources servers live in environments/ (docs/architecture.md), so upstream's
    // `resources_servers/<env>/...` paths of the bundled presets find them there.
    if (root == install_root() && std::string_view(path).starts_with(kResources))
      tried.push_back(fs::path(root) / "environments" / path.substr(kResources.size()));
  }
  return tried;
}

std::string resolve_search_path(const std::string& path, const std::vector<std::string>& roots,
                                std::string_view what, std::string_view referrer) {
  const std::vector<fs::path> tried = search_candidates(path, roots);
  for (const auto& candidate : tried) {
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
    // A loop is there, broken: say so rather than "not found".
    if (ec == std::errc::too_many_symbolic_link_levels)
      throw ConfigError(fmt::format(
          "config error{}: {} '{}' is a symlink loop (too many levels of symbolic links): make "
          "it point at a file",
          referrer.empty() ? "" : " in " + std::string(referrer), what, candidate.string()));
  }
  std::string looked;
  for (const auto& candidate : tried) {
    looked += "\n  - " + candidate.string();
    std::error_code ec;
    (void)fs::status(candidate, ec);  // why it could not be seen, when it is not just missing
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
      looked += " (" + ec.message() + ")";
  }
  throw ConfigError(fmt::format(
      "config error{}: {} '{}' was not found. Looked in:{}\nCheck the spelling, or add the "
      "directory that holds it with --search-dir (NEMO_GYM_EXTRA_ROOTS).",
      referrer.empty() ? "" : " in " + std::string(referrer), what, path, looked));
}

void deep_merge(json::object& base, const json::object& over) {
  merge_into(base, over, nullptr, "", "");
}

const std::string& install_root() {
  static const std::string root = [] {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const fs::path shared = exe.parent_path().parent_path() / "share" / "gym-cpp";
      if (fs::is_directory(shared / "environments", ec)) return shared.string();
    }
    return std::string(GYM_SOURCE_ROOT);
  }();
  return root;
}

ConfigSources default_sources() {
  ConfigSources sources;
  auto add_root = [&](std::string root) {
    if (root.empty()) return;
    for (const auto& r : sources.search_roots) {
      if (r == root) return;
    }
    sources.search_roots.push_back(std::move(root));
  };
  if (const char* extra = std::getenv("NEMO_GYM_EXTRA_ROOTS")) {
    std::string_view rest = extra;
    while (!rest.empty()) {
      std::size_t colon = std::min(rest.find(':'), rest.size());
      add_root(std::string(rest.substr(0, colon)));
      rest.remove_prefix(std::min(colon + 1, rest.size()));
    }
  }
  std::error_code ec;
  add_root(fs::current_path(ec).string());
  add_root(install_root());
  sources.getenv = process_getenv;
  return sources;
}

std::string this_machine_address() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name, nullptr, &hints, &found) != 0 || !found) return name;
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
              sizeof text);
  ::freeaddrinfo(found);
  return text;
}

void fill_defaults(json::object& cfg, const ConfigOrigins& origins) {
  // As upstream: the machine's own address replaces default_host (issue 16).
  if (get_bool(cfg, "use_absolute_ip", false)) cfg["default_host"] = this_machine_address();
  json::value* head = cfg.if_contains("head_server");
  if (!head || head->is_null()) head = &(cfg["head_server"] = json::object());
  if (!head->is_object()) {
    throw ConfigError(
        fmt::format("{}`head_server` must be a mapping such as {{host: 127.0.0.1, "
                    "port: 11000}}, got {}",
                    error_prefix(&origins, "head_server"), describe(*head)));
  }
  const DeploymentAddresses defaults;
  const json::value* default_host = cfg.if_contains("default_host");
  bool has_host = default_host && default_host->is_string() && !default_host->get_string().empty();
  set_default(head->as_object(), "host",
              has_host ? *default_host : json::value(defaults.default_host));
  set_default(head->as_object(), "port", defaults.head_port);
  set_default(cfg, "port_range_low", defaults.port_range_low);
  set_default(cfg, "port_range_high", defaults.port_range_high);
  set_default(cfg, "dry_run", false);
  set_default(cfg, "model_endpoint_readiness_timeout_seconds", 600);
  // The model servers' calls to their endpoint (docs/reference/model-servers.md), checked here so a
  // bad value stops every command before any server starts.
  set_default(cfg, "model_endpoint_unavailable_seconds", 60);
  set_default(cfg, "model_call_timeout_seconds", 0);
  get_double(cfg, "model_endpoint_unavailable_seconds", 60, 0, 1e9);
  get_double(cfg, "model_call_timeout_seconds", 0, 0, 1e9);
  get_int(cfg, "model_response_max_bytes", 64ll << 20, 0, 1ll << 50);

  // Global skip_verification* are defaults for every agent (as in NeMo Gym).
  for (const auto& instance : find_server_instances(cfg, &origins)) {
    if (instance.server_type != "responses_api_agents") continue;
    json::object& agent =
        cfg[instance.name].as_object()[instance.server_type].as_object()[instance.impl].as_object();
    for (std::string_view key : {"skip_verification", "skip_verification_reward"}) {
      const json::value* global = cfg.if_contains(key);
      if (global && !global->is_null() && !agent.contains(key)) agent[key] = *global;
    }
  }
}

DeploymentAddresses DeploymentAddresses::from_config(const json::object& cfg) {
  DeploymentAddresses a;
  a.default_host = get_string(cfg, "default_host", a.default_host);
  if (a.default_host.empty()) a.default_host = DeploymentAddresses{}.default_host;
  a.head_host = get_string(cfg, "head_server.host", a.default_host);
  a.head_port = static_cast<int>(get_int(cfg, "head_server.port", a.head_port, 0, 65535));
  a.port_range_low = static_cast<int>(get_int(cfg, "port_range_low", a.port_range_low, 1, 65535));
  a.port_range_high =
      static_cast<int>(get_int(cfg, "port_range_high", a.port_range_high, a.port_range_low, 65535));
  return a;
}

namespace {

// Why `text` would not survive the trip to the servers (their config is YAML in an environment
// variable, and NeMo Gym's are Python str): invalid UTF-8 or a control character other than
// tab, newline and carriage return. Empty when it is fine.
std::string text_problem(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
        return fmt::format("a control character (0x{:02x}) at byte {}", c, i);
      ++i;
      continue;
    }
    int length = 0;  // of the sequence `c` starts; 0: no sequence starts with it
    if (c >= 0xc2 && c <= 0xdf) length = 2;
    if (c >= 0xe0 && c <= 0xef) length = 3;
    if (c >= 0xf0 && c <= 0xf4) length = 4;
    if (length == 0 || i + static_cast<std::size_t>(length) > text.size())
      return fmt::format("invalid UTF-8 at byte {}", i);
    std::uint32_t cp = c & (0x7fu >> length);
    for (int k = 1; k < length; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return fmt::format("invalid UTF-8 at byte {}", i);
      cp = (cp << 6) | (cc & 0x3f);
    }
    const bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
    if (overlong || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
      return fmt::format("invalid UTF-8 at byte {}", i);
    i += static_cast<std::size_t>(length);
  }
  return {};
}

}  // namespace

void check_text(const json::value& v, const ConfigOrigins& origins, const std::string& path) {
  auto fail = [&](const std::string& where, const std::string& problem) {
    throw ConfigError(fmt::format("{}{} holds {}; write it as plain UTF-8 text",
                                  error_prefix(&origins, where), where.empty() ? "a key" : where,
                                  problem));
  };
  if (v.is_string()) {
    if (auto problem = text_problem(v.get_string()); !problem.empty()) fail(path, problem);
  } else if (const auto* o = v.if_object()) {
    for (const auto& [k, child] : *o) {
      const std::string child_at = child_path(path, k);
      if (auto problem = text_problem(k); !problem.empty()) fail(child_at, "a key with " + problem);
      check_text(child, origins, child_at);
    }
  } else if (const auto* a = v.if_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) check_text((*a)[i], origins, child_path(path, i));
  }
}

json::object load_config(const ConfigSources& sources, ConfigOrigins* origins_out) {
  ConfigOrigins local_origins;
  ConfigOrigins& origins = origins_out ? *origins_out : local_origins;
  std::vector<std::string> roots = sources.search_roots;
  if (roots.empty()) roots.push_back(fs::current_path().string());

  // `config_paths` given as an override lists files to load, like --config.
  std::vector<std::string> cli_paths = sources.config_paths;
  std::vector<Override> overrides;
  for (const auto& text : sources.overrides) {
    Override o = parse_override(text);
    if (o.key != kConfigPaths) {
      overrides.push_back(std::move(o));
      continue;
    }
    json::object holder{{kConfigPaths, o.value}};
    for (auto& path : take_config_paths(holder, "the command line (" + o.text + ")")) {
      cli_paths.push_back(std::move(path));
    }
  }

  const std::string env_path = env_file_path(sources, roots);
  json::object env;
  if (!env_path.empty()) env = as_config_mapping(load_config_file(env_path), env_path);
  json::object initial;
  if (!sources.initial_config.empty())
    initial = as_config_mapping(load_config_file(sources.initial_config), sources.initial_config);
  // As in NeMo Gym, config paths from the command line replace the initial config's list, which
  // replaces env.yaml's.
  const bool initial_lists_paths = initial.contains(kConfigPaths);
  std::vector<std::string> initial_paths = take_config_paths(initial, sources.initial_config);
  std::vector<std::string> env_paths = take_config_paths(env, env_path);
  if (cli_paths.empty()) cli_paths = initial_lists_paths ? initial_paths : env_paths;

  IncludeLoader loader(roots, sources.bundled_config);
  for (const auto& path : cli_paths) loader.load(path, "");
  json::object cfg;
  for (auto& [path, tree] : loader.files()) merge_into(cfg, tree, &origins, path, "");
  merge_into(cfg, env, &origins, env_path, "");
  merge_into(cfg, initial, &origins, sources.initial_config, "");
  for (const auto& o : overrides) apply_override(cfg, o, &origins);
  if (!loader.entries().empty()) {
    json::array entries;
    for (const auto& entry : loader.entries()) entries.emplace_back(entry);
    cfg[kConfigPaths] = std::move(entries);
  }

  apply_directives(cfg, origins);
  check_missing_values(cfg, origins);
  default_policy_api_key(cfg, origins);
  resolve_interpolations(cfg, origins, sources.getenv ? sources.getenv : GetEnv(process_getenv));
  check_text(cfg, origins, "");
  fill_defaults(cfg, origins);
  return cfg;
}

}  // namespace gym::core
