#pragma once
// The report of `gym telemetry report` (report.h) rendered for a terminal or as JSON
// (docs/guides/telemetry-report.md). Pure functions.
#include <string>

#include <boost/json/value.hpp>

#include "report/report.h"

namespace gym::report {

// The report as plain text for a terminal (about 90 columns): a summary of the input, then the
// sections in order, each a small aligned table or one "no data" line.
std::string format_report(const TelemetryReport& report);

// The same figures as one JSON object (`gym telemetry report --json`).
boost::json::value report_json(const TelemetryReport& report);

}  // namespace gym::report
