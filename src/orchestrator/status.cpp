// `gym env status` (docs/guides/running-servers.md#gym-env-status): the servers the head server
// lists, each probed.
#include "orchestrator/orchestrator.h"

#include "core/config.h"
#include "core/json_text.h"
#include "orchestrator/probe.h"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace gym::orchestrator {
namespace json = boost::json;

namespace {

std::string uptime_text(double seconds) {
  auto total = static_cast<long>(seconds);
  long d = total / 86400, h = total % 86400 / 3600, m = total % 3600 / 60;
  double s = seconds - static_cast<double>(total - total % 60);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%ldd %ldh %ldm %.1fs", d, h, m, s);
  return buf;
}

}  // namespace

int run_env_status(const core::ConfigSources& sources, bool as_json) {
  auto cfg = core::load_config(sources);
  const auto addresses = core::DeploymentAddresses::from_config(cfg);
  const std::string& host = addresses.head_host;
  const int port = addresses.head_port;
  auto head = http_get(host, port, "/server_instances", std::chrono::seconds(5));
  boost::system::error_code ec;
  json::value list =
      head.outcome == ProbeOutcome::success ? core::parse_json(head.body, ec) : nullptr;
  if (head.outcome != ProbeOutcome::success || ec || !list.is_array()) {
    spdlog::warn("no head server answered at http://{}:{} ({})", host, port,
                 head.error.empty() ? "unexpected answer" : head.error);
    std::puts(as_json ? "[]" : "No NeMo Gym servers found running.");
    return 0;
  }
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  int healthy = 0;
  auto& servers = list.as_array();
  for (auto& v : servers) {
    auto& s = v.as_object();
    std::string shost = s.contains("host") ? std::string(s.at("host").as_string()) : host;
    int sport = s.contains("port") ? static_cast<int>(s.at("port").to_number<std::int64_t>()) : 0;
    auto probe = http_get(shost, sport, "/", std::chrono::seconds(2));
    s["status"] = to_string(probe.outcome);
    if (auto* st = s.if_contains("start_time"); st && st->is_number())
      s["uptime_seconds"] = now - st->to_number<double>();
    if (probe.outcome == ProbeOutcome::success) ++healthy;
  }
  if (as_json) {
    std::puts(core::render_json(list).c_str());
    return 0;
  }
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto& s = servers[i].as_object();
    bool ok = s.at("status") == "success";
    auto text = [&](const char* key) {
      auto* v = s.if_contains(key);
      return !v || v->is_null() ? std::string("-")
             : v->is_string()   ? std::string(v->as_string())
                                : core::render_json(*v);
    };
    std::printf("[%zu] %s %s (%s/%s)\n", i + 1, ok ? "\u2713" : "\u2717",
                text("process_name").c_str(), text("server_type").c_str(), text("name").c_str());
    std::printf(
        "    server_type: %s\n    name: %s\n    port: %s\n    pid: %s\n    uptime_seconds: %s\n",
        text("server_type").c_str(), text("name").c_str(), text("port").c_str(),
        text("pid").c_str(),
        s.at("uptime_seconds").is_number()
            ? uptime_text(s.at("uptime_seconds").to_number<double>()).c_str()
            : "-");
  }
  std::printf("%zu servers found (%d healthy, %zu unhealthy)\n", servers.size(), healthy,
              servers.size() - static_cast<std::size_t>(healthy));
  return 0;
}

}  // namespace gym::orchestrator
