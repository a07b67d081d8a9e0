// `gym telemetry report FILE...` (docs/guides/telemetry-report.md): reads console-exporter files
// and prints their summary. The reading and the figures live in gym_report (report.h);
// this file only opens the files and picks the output.
#include "cli/commands.h"
#include "core/json_text.h"
#include "report/report.h"
#include "report/report_format.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace gym::cli {

int run_telemetry_report(const std::vector<std::string>& files, bool json) {
  report::ReportReader reader;
  for (const std::string& file : files) {
    if (file == "-") {
      reader.add_stream(std::cin, "<stdin>");
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      std::fprintf(stderr, "gym telemetry report: cannot read '%s': it is a directory\n",
                   file.c_str());
      return 1;
    }
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "gym telemetry report: cannot read '%s': %s\n", file.c_str(),
                   std::strerror(errno));
      return 1;
    }
    reader.add_stream(in, file);
    if (in.bad()) {
      std::fprintf(stderr, "gym telemetry report: error while reading '%s': %s\n", file.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  const report::TelemetryReport report = reader.build();
  // Nothing to summarise is an error (exit 1): most often the file is a log of a run whose
  // telemetry was off or used the OTLP exporter.
  if (report.input.exports == 0) {
    std::string names;
    for (const std::string& file : files) {
      names += (names.empty() ? "" : ", ") + (file == "-" ? std::string("stdin") : file);
    }
    std::fprintf(stderr,
                 "gym telemetry report: no metrics export in %s (%zu line%s read); the console "
                 "exporter writes them (telemetry.exporter: console, telemetry.console_path)\n",
                 names.c_str(), report.input.lines, report.input.lines == 1 ? "" : "s");
    return 1;
  }
  if (json) {
    std::cout << core::render_json_indented(report::report_json(report), 2) << '\n';
  } else {
    std::cout << report::format_report(report);
  }
  return 0;
}

}  // namespace gym::cli
