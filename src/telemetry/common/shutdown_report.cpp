#include "telemetry/common/shutdown_report.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <vector>

namespace gym::telemetry::shutdown_report {

namespace {

struct Report {
  std::mutex mu;
  bool gathering = false;
  std::vector<std::string> own;      // this process's failures, in order
  std::vector<std::string> servers;  // servers that reported one
  std::string first_server_detail;   // what the first of them said
};

Report& report() {
  static Report r;  // never destroyed before the exporters' threads stop: see end()
  return r;
}

std::string without_prefix(std::string line) {
  constexpr std::string_view prefix = "telemetry: ";
  if (std::string_view(line).starts_with(prefix)) line.erase(0, prefix.size());
  // The rate-limit note of a first failure says nothing at shutdown: nothing follows.
  const std::string_view note =
      " (further failures are summarised at most once per export interval)";
  if (std::string_view(line).ends_with(note)) line.erase(line.size() - note.size());
  return line;
}

}  // namespace

bool begin() {
  auto& r = report();
  std::lock_guard lock(r.mu);
  if (r.gathering) return false;
  r.gathering = true;
  r.own.clear();
  r.servers.clear();
  r.first_server_detail.clear();
  return true;
}

void warn_or_hold(std::string line) {
  auto& r = report();
  {
    std::lock_guard lock(r.mu);
    if (r.gathering) {
      r.own.push_back(without_prefix(std::move(line)));
      return;
    }
  }
  spdlog::warn("{}", line);
}

void hold_server(const std::string& server, std::string detail) {
  auto& r = report();
  std::lock_guard lock(r.mu);
  if (r.servers.empty()) r.first_server_detail = std::move(detail);
  r.servers.push_back(server);
}

std::optional<std::string> end() {
  auto& r = report();
  std::lock_guard lock(r.mu);
  r.gathering = false;
  if (r.own.empty() && r.servers.empty()) return std::nullopt;
  std::string line(kLineStart);
  for (std::size_t i = 0; i < r.own.size(); ++i) line += (i ? "; " : "") + r.own[i];
  if (!r.servers.empty()) {
    line += r.own.empty() ? "" : "; ";
    line += r.servers.size() == 1 ? "server " : std::to_string(r.servers.size()) + " servers (";
    for (std::size_t i = 0; i < r.servers.size(); ++i) line += (i ? ", " : "") + r.servers[i];
    line += r.servers.size() == 1 ? ": " : "), the first: ";
    line += r.first_server_detail;
  }
  return line;
}

}  // namespace gym::telemetry::shutdown_report
