#include "core/logging.h"

#include "core/console.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace gym::core {

namespace {

// Log lines go through the console, so a line never lands on the progress bar's line.
class ConsoleSink final : public spdlog::sinks::sink {
 public:
  ConsoleSink() : inner_(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()) {}
  void log(const spdlog::details::log_msg& msg) override {
    console::Hold hold;
    inner_->log(msg);
    inner_->flush();
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> inner_;
};

}  // namespace

void init_logging(bool verbose) {
  spdlog::drop("gym");  // calling twice (tests, subcommands) must not throw "already exists"
  auto logger = std::make_shared<spdlog::logger>("gym", std::make_shared<ConsoleSink>());
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace gym::core
