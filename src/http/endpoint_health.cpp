#include "http/endpoint_health.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gym::http {

namespace {

// "60 s", "0.5 s": a setting as the user wrote it.
std::string seconds_text(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace

EndpointHealth::EndpointHealth(std::string name, std::chrono::milliseconds unavailable_after)
    : name_(std::move(name)), unavailable_after_(unavailable_after) {}

void EndpointHealth::answered(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (unavailable_)
    spdlog::warn("model endpoint {} answers again after {:.0f} s; it is available", name_,
                 std::chrono::duration<double>(now - *failing_since_).count());
  unavailable_ = false;
  failing_since_.reset();
}

bool EndpointHealth::failed(std::string_view error, Clock::time_point now) {
  std::lock_guard lock(mu_);
  last_error_ = error;
  if (!failing_since_) failing_since_ = now;
  if (unavailable_ || unavailable_after_.count() <= 0) return unavailable_;
  if (now - *failing_since_ < unavailable_after_) return false;
  unavailable_ = true;
  spdlog::warn(
      "model endpoint {} is unavailable: every call for {} was refused or answered 5xx (last: "
      "{}); calls to it now fail at their first failed attempt instead of retrying "
      "(model_endpoint_unavailable_seconds={}); the first answer makes it available again",
      name_,
      seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(now - *failing_since_)),
      last_error_, seconds_text(unavailable_after_));
  return true;
}

bool EndpointHealth::unavailable() const {
  std::lock_guard lock(mu_);
  return unavailable_;
}

std::string EndpointHealth::why_unavailable(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  const auto failing = failing_since_ ? std::chrono::duration<double>(now - *failing_since_)
                                      : std::chrono::duration<double>(0);
  return fmt::format("every call for {:.0f} s was refused or answered 5xx (last: {})",
                     failing.count(), last_error_);
}

}  // namespace gym::http
