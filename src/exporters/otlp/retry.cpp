#include "exporters/otlp/retry.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "http/retry_policy.h"

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace gym::exporters {

AttemptOutcome classify(std::optional<int> status) {
  if (!status) return AttemptOutcome::retryable;
  if (*status >= 200 && *status < 300) return AttemptOutcome::success;
  if (http::is_transient_status(*status)) return AttemptOutcome::retryable;
  return AttemptOutcome::permanent;
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  std::int64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc{} || ptr != value.data() + value.size() || seconds < 0 ||
      seconds > 86'400) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(seconds * 1000);
}

std::chrono::milliseconds backoff(int retry, double jitter,
                                  std::optional<std::chrono::milliseconds> retry_after) {
  if (retry_after) return *retry_after;
  const double base_ms = 1000.0 * std::ldexp(1.0, std::clamp(retry, 1, 30) - 1);
  const double scaled = base_ms * (1.0 + 0.2 * std::clamp(jitter, -1.0, 1.0));
  return std::chrono::milliseconds(static_cast<std::int64_t>(scaled));
}

std::optional<PartialSuccess> parse_partial_success(std::string_view body, OtlpProtocol protocol) {
  if (body.empty()) return std::nullopt;
  PartialSuccess out;
  if (protocol == OtlpProtocol::http_protobuf) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse response;
    if (!response.ParseFromArray(body.data(), static_cast<int>(body.size())) ||
        !response.has_partial_success()) {
      return std::nullopt;
    }
    out.rejected_data_points = response.partial_success().rejected_data_points();
    out.error_message = response.partial_success().error_message();
  } else {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(body, ec);
    if (ec || !v.is_object()) return std::nullopt;
    const auto* ps = v.as_object().if_contains("partialSuccess");
    if (!ps || !ps->is_object()) return std::nullopt;
    if (const auto* r = ps->as_object().if_contains("rejectedDataPoints")) {
      if (r->is_int64()) {
        out.rejected_data_points = r->as_int64();
      } else if (r->is_uint64()) {
        out.rejected_data_points = static_cast<std::int64_t>(r->as_uint64());
      } else if (r->is_string()) {
        std::string_view s = r->as_string();
        std::from_chars(s.data(), s.data() + s.size(), out.rejected_data_points);
      }
    }
    if (const auto* m = ps->as_object().if_contains("errorMessage"); m && m->is_string()) {
      out.error_message = std::string(m->as_string());
    }
  }
  if (out.rejected_data_points == 0 && out.error_message.empty()) return std::nullopt;
  return out;
}

std::optional<std::string> FailureLog::dropped(std::size_t points, const std::string& error,
                                               Clock::time_point now) {
  ++batches_;
  points_ += points;
  last_error_ = error;
  if (logged_any_ && now - last_line_ < interval_) return std::nullopt;
  std::string line = logged_any_
                         ? summary(now)
                         : fmt::format(
                               "telemetry: metrics export failed, dropped {} point(s): {} (further "
                               "failures are summarised at most once per export interval)",
                               points_, error);
  logged_any_ = true;
  last_line_ = now;
  batches_ = 0;
  points_ = 0;
  return line;
}

std::optional<std::string> FailureLog::pending(Clock::time_point now) {
  if (batches_ == 0) return std::nullopt;
  std::string line = summary(now);
  last_line_ = now;
  batches_ = 0;
  points_ = 0;
  return line;
}

std::string FailureLog::summary(Clock::time_point now) const {
  return fmt::format(
      "telemetry: metrics export failing: dropped {} batch(es), {} point(s) in the last {:.1f} "
      "s; last error: {}",
      batches_, points_, std::chrono::duration<double>(now - last_line_).count(), last_error_);
}

}  // namespace gym::exporters
