#include "exporters/otlp/retry.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "http/retry_policy.h"

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace gym::exporters {

AttemptOutcome classify(std::optional<int> status) {
  if (!status) return AttemptOutcome::retryable;
  if (*status >= 200 && *status < 300) return AttemptOutcome::success;
  if (http::is_transient_status(*status)) return AttemptOutcome::retryable;
  return AttemptOutcome::permanent;
}

AttemptOutcome classify_grpc(int code) {
  switch (code) {
    case 0:  // OK
      return AttemptOutcome::success;
    case 4:   // DEADLINE_EXCEEDED
    case 8:   // RESOURCE_EXHAUSTED
    case 14:  // UNAVAILABLE
      return AttemptOutcome::retryable;
    default:
      return AttemptOutcome::permanent;
  }
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

std::optional<std::chrono::milliseconds> retry_delay(
    int retry, double jitter, std::optional<std::chrono::milliseconds> retry_after,
    Clock::time_point now, Clock::time_point end) {
  const auto delay = backoff(retry, jitter, retry_after);
  if (now + delay >= end) return std::nullopt;
  return delay;
}

namespace {

// The partial_success of one signal's response message type.
template <class Response>
std::optional<PartialSuccess> protobuf_partial_success(std::string_view body) {
  Response response;
  if (!response.ParseFromArray(body.data(), static_cast<int>(body.size())) ||
      !response.has_partial_success()) {
    return std::nullopt;
  }
  PartialSuccess out;
  const auto& ps = response.partial_success();
  if constexpr (requires { ps.rejected_data_points(); }) {
    out.rejected = ps.rejected_data_points();
  } else if constexpr (requires { ps.rejected_spans(); }) {
    out.rejected = ps.rejected_spans();
  } else {
    out.rejected = ps.rejected_log_records();
  }
  out.error_message = ps.error_message();
  return out;
}

}  // namespace

std::string_view item_noun(Signal signal) {
  switch (signal) {
    case Signal::metrics:
      return "point";
    case Signal::traces:
      return "span";
    case Signal::logs:
      return "log record";
  }
  return "item";
}

std::optional<PartialSuccess> parse_partial_success(std::string_view body, OtlpProtocol protocol,
                                                    Signal signal) {
  namespace collector = opentelemetry::proto::collector;
  if (body.empty()) return std::nullopt;
  std::optional<PartialSuccess> parsed;
  if (protocol != OtlpProtocol::http_json) {
    switch (signal) {
      case Signal::metrics:
        parsed =
            protobuf_partial_success<collector::metrics::v1::ExportMetricsServiceResponse>(body);
        break;
      case Signal::traces:
        parsed = protobuf_partial_success<collector::trace::v1::ExportTraceServiceResponse>(body);
        break;
      case Signal::logs:
        parsed = protobuf_partial_success<collector::logs::v1::ExportLogsServiceResponse>(body);
        break;
    }
    if (!parsed) return std::nullopt;
  } else {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(body, ec);
    if (ec || !v.is_object()) return std::nullopt;
    const auto* ps = v.as_object().if_contains("partialSuccess");
    if (!ps || !ps->is_object()) return std::nullopt;
    parsed.emplace();
    const char* key = signal == Signal::metrics  ? "rejectedDataPoints"
                      : signal == Signal::traces ? "rejectedSpans"
                                                 : "rejectedLogRecords";
    if (const auto* r = ps->as_object().if_contains(key)) {
      if (r->is_int64()) {
        parsed->rejected = r->as_int64();
      } else if (r->is_uint64()) {
        parsed->rejected = static_cast<std::int64_t>(r->as_uint64());
      } else if (r->is_string()) {
        std::string_view s = r->as_string();
        std::from_chars(s.data(), s.data() + s.size(), parsed->rejected);
      }
    }
    if (const auto* m = ps->as_object().if_contains("errorMessage"); m && m->is_string()) {
      parsed->error_message = std::string(m->as_string());
    }
  }
  if (parsed->rejected == 0 && parsed->error_message.empty()) return std::nullopt;
  return parsed;
}

std::optional<std::string> FailureLog::dropped(std::size_t items, const std::string& error,
                                               Clock::time_point now) {
  ++batches_;
  items_ += items;
  last_error_ = error;
  if (logged_any_ && now - last_line_ < interval_) return std::nullopt;
  std::string line =
      logged_any_ ? summary(now)
                  : fmt::format(
                        "telemetry: {} export failed, dropped {} {}(s): {} (further failures are "
                        "summarised at most once per export interval)",
                        signal_name(signal_), items_, item_noun(signal_), error);
  logged_any_ = true;
  last_line_ = now;
  batches_ = 0;
  items_ = 0;
  return line;
}

std::optional<std::string> FailureLog::pending(Clock::time_point now) {
  if (batches_ == 0) return std::nullopt;
  std::string line = summary(now);
  last_line_ = now;
  batches_ = 0;
  items_ = 0;
  return line;
}

std::string FailureLog::summary(Clock::time_point now) const {
  return fmt::format(
      "telemetry: {} export failing: dropped {} batch(es), {} {}(s) in the last {:.1f} s; last "
      "error: {}",
      signal_name(signal_), batches_, items_, item_noun(signal_),
      std::chrono::duration<double>(now - last_line_).count(), last_error_);
}

}  // namespace gym::exporters
