#include "core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace gym::core {

void init_logging(bool verbose) {
  spdlog::drop("gym");  // calling twice (tests, subcommands) must not throw "already exists"
  auto logger = spdlog::stderr_color_mt("gym");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace gym::core
