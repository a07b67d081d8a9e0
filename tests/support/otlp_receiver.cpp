#include "otlp_receiver.h"

#include "npm_package.h"

#include <filesystem>

#include <fmt/format.h>

namespace gym::test {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPackage = "@opentelemetry/otlp-transformer@0.214.0";
// Runs on Node.js 20 (engines: node >= 12.10).
constexpr const char* kGrpcPackage = "@grpc/grpc-js@1.14.7";

}  // namespace

std::string OtlpRequest::path() const {
  const auto* p = headers.if_contains("path");
  return p && p->is_string() ? std::string(p->get_string()) : std::string();
}

std::string OtlpReceiver::node_modules(std::string* why) {
  return npm_install(
      {"otlp_node", kPackage, "@opentelemetry/otlp-transformer/build/src/generated/root.js"}, why);
}

std::string OtlpReceiver::grpc_node_modules(std::string* why) {
  return npm_install({"grpc_node", kGrpcPackage, "@grpc/grpc-js/build/src/index.js"}, why);
}

OtlpReceiver::OtlpReceiver(std::optional<Tls> tls)
    : OtlpReceiver([&] {
        Options o;
        o.tls = std::move(tls);
        return o;
      }()) {}

OtlpReceiver::OtlpReceiver(Options options) : options_(std::move(options)) {
  std::string why;
  const std::string node = node_binary(&why);
  if (node.empty()) {
    error_ = why;
    return;
  }
  const std::string modules = node_modules(&why);
  if (modules.empty()) {
    error_ = why;
    return;
  }
  std::vector<std::string> argv{node};
  if (grpc()) {
    const std::string grpc_modules = grpc_node_modules(&why);
    if (grpc_modules.empty()) {
      error_ = why;
      return;
    }
    argv.insert(argv.end(), {GYM_OTLP_GRPC_RECEIVER, modules, grpc_modules});
    if (options_.fail_calls != 0) {
      argv.insert(argv.end(), {"--fail", std::to_string(options_.fail_calls),
                               std::to_string(options_.fail_code)});
    }
    if (options_.hang) argv.push_back("--hang");
    if (options_.partial_success) {
      argv.insert(argv.end(), {"--partial", std::to_string(options_.partial_success->first),
                               options_.partial_success->second});
    }
  } else {
    argv.insert(argv.end(), {GYM_OTLP_RECEIVER, modules});
  }
  if (options_.tls) {
    argv.insert(argv.end(), {"--tls", options_.tls->key, options_.tls->cert});
    if (!options_.tls->client_ca.empty())
      argv.insert(argv.end(), {"--client-ca", options_.tls->client_ca});
  }
  child_ = std::make_unique<ChildProcess>(std::move(argv), std::vector<std::string>{},
                                          /*merge_stderr=*/true);
  if (grpc()) {
    const std::string control = child_->wait_for_line("CONTROL ");
    control_port_ = control.empty() ? -1 : std::stoi(control);
  }
  port_ = child_->wait_port();
  output_ = child_->output();
  if (port_ <= 0) {
    error_ = "the OTLP receiver did not start: " + output_;
    reader_done_ = true;
    return;
  }
  reader_ = std::thread([this] { read_lines(); });
}

OtlpReceiver::~OtlpReceiver() { stop(); }

std::string OtlpReceiver::endpoint() const {
  return fmt::format("{}://127.0.0.1:{}", options_.tls ? "https" : "http", port_);
}

std::string OtlpReceiver::protocol() const { return grpc() ? "grpc" : "http/protobuf"; }

void OtlpReceiver::read_lines() {
  for (;;) {
    // Every line matches the empty prefix; "" means a quiet second or the end of the output.
    std::string line = child_->wait_for_line("", std::chrono::seconds(1));
    if (line.empty()) {
      if (!child_->running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    take(line);
  }
  std::lock_guard lock(mutex_);
  reader_done_ = true;
  changed_.notify_all();
}

void OtlpReceiver::take(const std::string& line) {
  std::lock_guard lock(mutex_);
  output_ += line;
  output_ += '\n';
  auto rest = [&](std::string_view prefix) -> std::optional<std::string_view> {
    if (line.rfind(prefix, 0) != 0) return std::nullopt;
    return std::string_view(line).substr(prefix.size());
  };
  if (auto h = rest("HEADERS ")) {
    boost::system::error_code ec;
    auto v = json::parse(*h, ec);
    pending_headers_ = !ec && v.is_object() ? v.as_object() : json::object{};
    return;
  }
  OtlpRequest r;
  if (auto d = rest("DECODED ")) {
    // "<content-type> <encoding> <json>"
    const auto first = d->find(' ');
    const auto second = d->find(' ', first + 1);
    r.content_type = std::string(d->substr(0, first));
    r.encoding = std::string(d->substr(first + 1, second - first - 1));
    boost::system::error_code ec;
    r.decoded = json::parse(d->substr(second + 1), ec);
    if (ec) r.error = "the receiver's JSON does not parse: " + ec.message();
  } else if (auto e = rest("ERROR ")) {
    r.error = std::string(*e);
  } else {
    return;  // LISTENING, HANDSHAKE_FAILED, Node.js messages: in output() only
  }
  r.headers = pending_headers_.value_or(json::object{});
  pending_headers_.reset();
  requests_.push_back(std::make_shared<const OtlpRequest>(std::move(r)));
  changed_.notify_all();
}

std::vector<OtlpRequest> OtlpReceiver::requests() const {
  std::lock_guard lock(mutex_);
  std::vector<OtlpRequest> out;
  out.reserve(requests_.size());
  for (const auto& r : requests_) out.push_back(*r);
  return out;
}

std::size_t OtlpReceiver::size() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

bool OtlpReceiver::wait_for(std::size_t n, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [&] { return requests_.size() >= n || reader_done_; }) &&
         requests_.size() >= n;
}

std::optional<OtlpRequest> OtlpReceiver::wait_for_request(
    const std::function<bool(const OtlpRequest&)>& match, std::chrono::milliseconds limit) const {
  const auto deadline = Clock::now() + limit;
  std::unique_lock lock(mutex_);
  for (std::size_t next = 0;;) {
    while (next < requests_.size()) {
      const auto r = requests_[next++];
      lock.unlock();  // `match` runs without the lock
      if (match(*r)) return *r;
      lock.lock();
    }
    if (reader_done_) return std::nullopt;
    if (!changed_.wait_until(lock, deadline,
                             [&] { return next < requests_.size() || reader_done_; }))
      return std::nullopt;
  }
}

std::optional<ProcessExport> OtlpReceiver::wait_for_export(
    const std::function<bool(const ProcessExport&)>& match, std::chrono::milliseconds limit) const {
  std::optional<ProcessExport> found;
  wait_for_request(
      [&](const OtlpRequest& r) {
        for (auto& p : process_exports(r))
          if (match(p)) {
            found = std::move(p);
            return true;
          }
        return false;
      },
      limit);
  return found;
}

bool OtlpReceiver::sync(std::chrono::milliseconds limit) {
  if (port_ <= 0) return false;
  const std::string tag = fmt::format("sync-{}", ++syncs_);
  // The HTTP receiver over https would need a TLS client: tests sync only plain receivers.
  const auto raw =
      grpc() ? http_raw(control_port_, post("/sync", "{}", "x-gym-test: " + tag + "\r\n"), limit)
             : http_raw(
                   port_,
                   post("/v1/metrics", R"({"resourceMetrics":[]})", "x-gym-test: " + tag + "\r\n"),
                   limit);
  if (status_of(raw) != 200) return false;
  return wait_for_request(
             [&](const OtlpRequest& r) {
               const auto* v = r.headers.if_contains("x-gym-test");
               return v && v->is_string() && v->get_string() == tag;
             },
             limit)
      .has_value();
}

std::string OtlpReceiver::output() const {
  std::lock_guard lock(mutex_);
  return output_;
}

void OtlpReceiver::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!child_) return;
  if (!reader_.joinable()) return;  // it never listened; ~ChildProcess kills it
  child_->signal(SIGTERM);
  {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::seconds(5), [&] { return reader_done_; }))
      child_->signal(SIGKILL);
  }
  reader_.join();
}

// ---- Queries ------------------------------------------------------------------------------------

json::value plain_value(const json::value& any_value) {
  const auto* o = any_value.if_object();
  if (!o) return nullptr;
  if (const auto* s = o->if_contains("stringValue")) return *s;
  if (const auto* b = o->if_contains("boolValue")) return *b;
  if (const auto* d = o->if_contains("doubleValue")) return d->to_number<double>();
  if (const auto* i = o->if_contains("intValue")) {
    // longs: String in the receiver
    if (i->is_string()) return static_cast<std::int64_t>(std::stoll(std::string(i->get_string())));
    return i->to_number<std::int64_t>();
  }
  if (const auto* a = o->if_contains("arrayValue")) {
    json::array out;
    if (const auto* values = a->as_object().if_contains("values"))
      for (const auto& v : values->as_array()) out.push_back(plain_value(v));
    return out;
  }
  return nullptr;
}

Attributes attribute_map(const json::value& key_values) {
  Attributes out;
  if (!key_values.is_array()) return out;
  for (const auto& kv : key_values.get_array()) {
    const auto& o = kv.as_object();
    const auto* value = o.if_contains("value");
    out[std::string(o.at("key").as_string())] = value ? plain_value(*value) : json::value();
  }
  return out;
}

std::string ProcessExport::instance_id() const { return string_attribute("service.instance.id"); }

std::string ProcessExport::string_attribute(const std::string& key) const {
  auto it = resource.find(key);
  return it != resource.end() && it->second.is_string() ? std::string(it->second.get_string())
                                                        : std::string();
}

const json::object* ProcessExport::metric(std::string_view name) const {
  for (const auto& m : metrics)
    if (const auto* n = m.if_contains("name"); n && n->is_string() && n->get_string() == name)
      return &m;
  return nullptr;
}

std::set<std::string> ProcessExport::metric_names() const {
  std::set<std::string> out;
  for (const auto& m : metrics) out.insert(std::string(m.at("name").as_string()));
  return out;
}

std::vector<OtlpRequest> exports_only(const std::vector<OtlpRequest>& requests) {
  std::vector<OtlpRequest> out;
  for (const auto& r : requests) {
    const auto* tag = r.headers.if_contains("x-gym-test");
    const bool sync = tag && tag->is_string() && tag->get_string().starts_with("sync-");
    if (!sync) out.push_back(r);
  }
  return out;
}

std::vector<ProcessExport> process_exports(const OtlpRequest& r) {
  std::vector<ProcessExport> out;
  const auto* request = r.decoded.if_object();
  const auto* list = request ? request->if_contains("resourceMetrics") : nullptr;
  if (!list || !list->is_array()) return out;
  for (const auto& rm : list->get_array()) {
    ProcessExport p;
    if (const auto* res = rm.as_object().if_contains("resource"))
      if (const auto* attrs = res->as_object().if_contains("attributes"))
        p.resource = attribute_map(*attrs);
    if (const auto* scopes = rm.as_object().if_contains("scopeMetrics")) {
      for (const auto& sm : scopes->as_array()) {
        if (const auto* scope = sm.as_object().if_contains("scope"); scope && p.metrics.empty()) {
          const auto& s = scope->as_object();
          if (const auto* n = s.if_contains("name")) p.scope_name = std::string(n->as_string());
          if (const auto* v = s.if_contains("version"))
            p.scope_version = std::string(v->as_string());
        }
        if (const auto* metrics = sm.as_object().if_contains("metrics"))
          for (const auto& m : metrics->as_array()) p.metrics.push_back(m.as_object());
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ProcessExport> process_exports(const std::vector<OtlpRequest>& requests) {
  std::vector<ProcessExport> out;
  for (const auto& r : requests)
    for (auto& p : process_exports(r)) out.push_back(std::move(p));
  return out;
}

std::map<std::string, std::vector<ProcessExport>> exports_by_instance(
    const std::vector<OtlpRequest>& requests) {
  std::map<std::string, std::vector<ProcessExport>> out;
  for (auto& p : process_exports(requests)) out[p.instance_id()].push_back(std::move(p));
  return out;
}

std::string metric_kind(const json::object& metric) {
  for (const char* kind : {"sum", "gauge", "histogram"})
    if (metric.contains(kind)) return kind;
  return "";
}

std::vector<const json::object*> points(const json::object& metric, const Attributes& filter) {
  std::vector<const json::object*> out;
  const std::string kind = metric_kind(metric);
  if (kind.empty()) return out;
  const auto* list = metric.at(kind).as_object().if_contains("dataPoints");
  if (!list) return out;
  for (const auto& p : list->as_array()) {
    const auto& point = p.as_object();
    const auto* attrs = point.if_contains("attributes");
    const Attributes have = attrs ? attribute_map(*attrs) : Attributes{};
    bool match = true;
    for (const auto& [key, value] : filter) {
      auto it = have.find(key);
      match = match && it != have.end() && it->second == value;
    }
    if (match) out.push_back(&point);
  }
  return out;
}

double point_value(const json::object& point) {
  if (const auto* i = point.if_contains("asInt"))
    return i->is_string() ? std::stod(std::string(i->get_string())) : i->to_number<double>();
  if (const auto* d = point.if_contains("asDouble")) return d->to_number<double>();
  return 0;
}

std::uint64_t point_count(const json::object& point) {
  const auto* c = point.if_contains("count");
  if (!c) return 0;
  return c->is_string() ? std::stoull(std::string(c->get_string())) : c->to_number<std::uint64_t>();
}

double total(const json::object* metric, const Attributes& filter) {
  if (!metric) return 0;
  const bool histogram = metric_kind(*metric) == "histogram";
  double sum = 0;
  for (const auto* p : points(*metric, filter))
    sum += histogram ? static_cast<double>(point_count(*p)) : point_value(*p);
  return sum;
}

}  // namespace gym::test
