#include "telemetry/resource.h"

#include <unistd.h>

#include <climits>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gym::telemetry {

HostFacts current_host() {
  HostFacts h;
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) h.host_name = name;
  h.pid = static_cast<long>(::getpid());
  return h;
}

Resource build_resource(const TelemetrySettings& settings, const std::string& run_id,
                        const ProcessIdentity& identity, const GetEnv& getenv_in,
                        const HostFacts& host) {
  const GetEnv getenv = getenv_in ? getenv_in : process_env();
  auto env = [&](const char* name) -> std::optional<std::string> {
    auto v = getenv(name);
    if (!v || v->find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
    return v;
  };

  // Lowest precedence first; later insertions replace earlier ones.
  std::map<std::string, AttributeValue, std::less<>> attrs;
  if (auto raw = env("OTEL_RESOURCE_ATTRIBUTES")) {
    if (auto pairs = parse_key_values(*raw)) {
      for (auto& [k, v] : *pairs) attrs[k] = std::move(v);
    } else {
      spdlog::warn(
          "telemetry: ignoring OTEL_RESOURCE_ATTRIBUTES: every entry must be "
          "key=value, separated by commas");
    }
  }
  const std::string service =
      settings.service_name_per_server
          ? fmt::format("{}/{}", settings.service_name, identity.server_name)
          : settings.service_name;
  attrs["service.name"] = service;
  attrs["service.instance.id"] = fmt::format("{}-{}-{}", run_id, identity.server_name, host.pid);
  attrs["service.version"] = std::string(GYM_VERSION);
  attrs["nemo.gym.service_group"] = settings.service_name;
  attrs["nemo.gym.server.name"] = identity.server_name;
  attrs["nemo.gym.server.type"] = identity.server_type;
  attrs["nemo.gym.version"] = std::string(kNemoGymVersion);
  attrs["nemo.run.id"] = run_id;
  attrs["nv.dl.rank"] = std::int64_t{0};
  attrs["nv.dl.world_size"] = std::int64_t{1};
  attrs["host.name"] = host.host_name;
  attrs["process.pid"] = static_cast<std::int64_t>(host.pid);
  if (settings.user_id) attrs["nemo.user.id"] = *settings.user_id;
  if (auto d = env("DEPLOYMENT_ENV")) {
    attrs["deployment.environment"] = *d;
  } else if (auto e = env("ENVIRONMENT")) {
    attrs["deployment.environment"] = *e;
  }
  attrs["telemetry.sdk.name"] = std::string("gym-cpp");
  attrs["telemetry.sdk.language"] = std::string("cpp");
  attrs["telemetry.sdk.version"] = std::string(GYM_VERSION);

  std::vector<AttributeView> views;
  views.reserve(attrs.size());
  for (const auto& [k, v] : attrs) views.emplace_back(k, view_of(v));
  return Resource{AttributeSet(views)};
}

}  // namespace gym::telemetry
