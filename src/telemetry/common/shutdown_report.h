#pragma once
// What the telemetry of a process (or of a whole deployment) could not export at shutdown, said
// in one line. A collector that is down makes every signal of every process fail its last export
// at once; logged one by one, that is a screen of warnings saying the same thing.
//
// From begin() on, the exporters hand their failure lines here (warn_or_hold) instead of logging
// each, and an orchestrator hands over the servers' report lines (hold_server); end() gives the
// one line. The report is process-wide and thread-safe; the exporters of any thread may add to it.
#include <optional>
#include <string>
#include <string_view>

namespace gym::telemetry::shutdown_report {

// How a process's report line starts: an orchestrator recognises its servers' lines by it.
inline constexpr std::string_view kLineStart =
    "telemetry: the last export at shutdown did not complete: ";

// Starts gathering; true for the caller that started it (it calls end()), false when a report is
// already being gathered.
bool begin();

// Logs `line` (an exporter's "telemetry: ..." warning) now, or keeps it for the report when one
// is being gathered.
void warn_or_hold(std::string line);

// A server's report line (its text after kLineStart), kept for this process's report.
void hold_server(const std::string& server, std::string detail);

// Ends the gathering: the one line (starting with kLineStart), or nullopt when nothing failed.
std::optional<std::string> end();

}  // namespace gym::telemetry::shutdown_report
