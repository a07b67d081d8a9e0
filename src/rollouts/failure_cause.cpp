#include "rollouts/failure_cause.h"

#include "core/json_text.h"

#include <boost/json.hpp>

#include <cctype>
#include <string_view>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

constexpr std::string_view kChainHead = "Hit an exception in ";
constexpr std::string_view kChainMiddle = " calling an inner server: ";
constexpr int kMaxDepth = 16;                   // chains are as deep as the agents nest
constexpr std::size_t kMaxMessageBytes = 1000;  // the console line stays readable

std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > kMaxMessageBytes) {
    std::size_t n = kMaxMessageBytes;
    while (n > 0 && (static_cast<unsigned char>(out[n]) & 0xC0) == 0x80) --n;
    out = out.substr(0, n) + "...";
  }
  return out;
}

std::string text_of(const json::value& v) {
  return v.is_string() ? std::string(v.get_string()) : core::render_json(v);
}

// `{"type": ..., "message": ...}` as FastAPI details and OpenAI errors carry them; false when
// `v` is not such an object.
bool read_typed_error(const json::value& v, FailureCause& cause) {
  if (!v.is_object()) return false;
  const auto& o = v.get_object();
  const auto* message = o.if_contains("message");
  if (!message) message = o.if_contains("msg");
  const auto* type = o.if_contains("type");
  if (!message && !type) return false;
  if (type && type->is_string()) cause.type = std::string(type->get_string());
  if (message) cause.message = one_line(text_of(*message));
  return true;
}

bool three_digits(std::string_view text, int& value) {
  if (text.size() < 3) return false;
  value = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    value = value * 10 + (text[i] - '0');
  }
  return text.size() == 3 || text[3] == ' ';
}

// Splits "Hit an exception in <via> calling an inner server: [<callee>: ]<status> <rest>".
// NeMo Gym's agents write no <callee>; gym-cpp's name the call ("resources POST /verify").
bool split_chain_link(std::string_view text, std::string& via, std::string& callee, int& status,
                      std::string_view& rest) {
  if (!text.starts_with(kChainHead)) return false;
  auto middle = text.find(kChainMiddle);
  if (middle == std::string_view::npos) return false;
  auto after = text.substr(middle + kChainMiddle.size());
  int value = 0;
  std::string_view target;
  if (!three_digits(after, value)) {
    // The callee is one short line ending in ": " before the status.
    constexpr std::size_t kMaxCallee = 300;
    auto colon = after.find(": ");
    if (colon == std::string_view::npos || colon == 0 || colon > kMaxCallee) return false;
    target = after.substr(0, colon);
    if (target.find_first_of("\n\r\"{") != std::string_view::npos) return false;
    after.remove_prefix(colon + 2);
    if (!three_digits(after, value)) return false;
  }
  via = std::string(text.substr(kChainHead.size(), middle - kChainHead.size()));
  callee = std::string(target);
  status = value;
  rest = after.substr(3);
  if (rest.starts_with(' ')) rest.remove_prefix(1);
  return true;
}

}  // namespace

std::string FailureCause::text() const {
  std::string out;
  if (status) out = "HTTP " + std::to_string(*status);
  if (!type.empty()) out += (out.empty() ? "" : " ") + type;
  if (!message.empty()) out += (out.empty() ? "" : ": ") + message;
  if (!callee.empty() && !via.empty())
    out += " (from " + callee + ", called by " + via + ")";
  else if (!via.empty())
    out += " (called by " + via + ")";
  return out;
}

std::optional<FailureCause> innermost_cause(int status, const std::string& body) {
  FailureCause cause;
  cause.status = status;
  std::string current = body;  // owned: each step may replace it with a decoded string
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    std::string via, callee;
    int inner_status = 0;
    std::string_view rest;
    if (split_chain_link(current, via, callee, inner_status, rest)) {
      cause.via = std::move(via);
      cause.callee = std::move(callee);
      cause.status = inner_status;
      cause.type.clear();
      cause.message.clear();
      current = std::string(rest);
      continue;
    }
    boost::system::error_code ec;
    json::value parsed = core::parse_json(current, ec);
    if (ec) {
      cause.message = one_line(current);
      break;
    }
    if (parsed.is_string()) {
      current = std::string(parsed.get_string());
      continue;
    }
    const json::value* inner = nullptr;
    if (parsed.is_object()) {
      const auto& o = parsed.get_object();
      inner = o.if_contains("detail");
      if (!inner) inner = o.if_contains("error");
    }
    if (inner && read_typed_error(*inner, cause)) break;
    if (inner && inner->is_string()) {
      current = std::string(inner->get_string());  // may be a chain again
      continue;
    }
    cause.message = one_line(text_of(inner ? *inner : parsed));
    break;
  }
  if (cause.message.empty() && cause.type.empty() && cause.via.empty()) return std::nullopt;
  return cause;
}

namespace {
constexpr std::string_view kEndpointHead = "model endpoint ";
constexpr std::pair<EndpointFault, std::string_view> kFaultNames[] = {
    {EndpointFault::unreachable, "unreachable"},   {EndpointFault::server_error, "server_error"},
    {EndpointFault::rate_limited, "rate_limited"}, {EndpointFault::unavailable, "unavailable"},
    {EndpointFault::rejected, "rejected"},
};
}  // namespace

std::string_view to_string(EndpointFault fault) {
  for (const auto& [f, name] : kFaultNames)
    if (f == fault) return name;
  return "unknown";
}

std::optional<EndpointFault> endpoint_fault_named(std::string_view name) {
  for (const auto& [f, n] : kFaultNames)
    if (n == name) return f;
  return std::nullopt;
}

std::optional<EndpointFailure> endpoint_failure_of(const FailureCause& cause) {
  std::string_view text = cause.message;
  if (!text.starts_with(kEndpointHead)) return std::nullopt;
  text.remove_prefix(kEndpointHead.size());
  const auto space = text.find(' ');
  if (space == std::string_view::npos || space == 0) return std::nullopt;
  EndpointFailure out{EndpointFault::rejected, std::string(text.substr(0, space))};
  const std::string_view rest = text.substr(space + 1);
  if (rest.starts_with("gave no answer")) {
    out.fault = EndpointFault::unreachable;
  } else if (rest.starts_with("is unavailable")) {
    out.fault = EndpointFault::unavailable;
  } else if (rest.starts_with("answered HTTP ") && rest.size() >= 17) {
    int status = 0;
    for (char c : rest.substr(14, 3)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      status = status * 10 + (c - '0');
    }
    out.status = status;
    if (status == 429)
      out.fault = EndpointFault::rate_limited;
    else if (status >= 500)
      out.fault = EndpointFault::server_error;
    else if (status >= 400)
      out.fault = EndpointFault::rejected;
    else
      return std::nullopt;  // a 2xx the model server could not use: the answer's fault
  } else {
    return std::nullopt;
  }
  return out;
}

bool is_endpoint_outage(EndpointFault fault) { return fault != EndpointFault::rejected; }

}  // namespace gym::rollouts
