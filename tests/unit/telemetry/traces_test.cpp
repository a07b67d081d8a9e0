// Traces (docs/design/telemetry-contract.md#spans-and-propagation): W3C trace context, samplers,
// the tracer's spans and hygiene, the batch span processor's bounded queue and flushes. No sockets:
// a recording exporter stands in for the network (the OTLP and console exporters are tested beside
// their encodings).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "telemetry/config.h"
#include "telemetry/traces/batch_span_processor.h"
#include "telemetry/traces/sampler.h"
#include "telemetry/traces/trace_context.h"
#include "telemetry/traces/tracer.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

namespace gym::telemetry {
namespace {

using namespace std::chrono_literals;

core::GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// ---- traceparent ----

TEST(TraceParent, RoundTripsAndKeepsTheSampledFlag) {
  const std::string header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto ctx = parse_traceparent(header);
  ASSERT_TRUE(ctx);
  EXPECT_TRUE(ctx->sampled);
  EXPECT_TRUE(ctx->remote);
  EXPECT_EQ(to_hex(ctx->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(to_hex(ctx->span_id), "00f067aa0ba902b7");
  EXPECT_EQ(format_traceparent(*ctx), header);
  auto off = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->sampled);
  // Surrounding whitespace of a header value is not part of it.
  EXPECT_TRUE(parse_traceparent(" " + header + "\t"));
}

TEST(TraceParent, MalformedHeadersAreIgnored) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // v00 with more
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
       })
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
  // A later version may carry more fields; its first four are read.
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
}

// Every byte value at every digit of both ids: accepted exactly when it is a lowercase hex digit,
// and then read as that digit's value.
TEST(TraceParent, EveryDigitPositionAcceptsExactlyLowercaseHex) {
  const std::string valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  constexpr std::string_view digits = "0123456789abcdef";
  for (std::size_t pos = 3; pos < 52; ++pos) {
    if (pos == 35) continue;  // the separator
    for (int c = 0; c < 256; ++c) {
      std::string header = valid;
      header[pos] = static_cast<char>(c);
      const auto ctx = parse_traceparent(header);
      const auto digit = digits.find(static_cast<char>(c));
      if (digit == std::string_view::npos) {
        EXPECT_FALSE(ctx) << "byte " << c << " at " << pos;
        continue;
      }
      ASSERT_TRUE(ctx) << "digit " << static_cast<char>(c) << " at " << pos;
      const std::string trace = to_hex(ctx->trace_id), span = to_hex(ctx->span_id);
      EXPECT_EQ(pos < 35 ? trace : span, header.substr(pos < 35 ? 3 : 36, pos < 35 ? 32 : 16));
    }
  }
}

TEST(TraceState, OnlyPrintableBoundedValuesArePassedOn) {
  EXPECT_TRUE(acceptable_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
  EXPECT_FALSE(acceptable_tracestate(""));
  EXPECT_FALSE(acceptable_tracestate(std::string(513, 'a')));
  EXPECT_FALSE(acceptable_tracestate("a=b\r\nx: y"));
  EXPECT_TRUE(acceptable_baggage("userId=alice,serverNode=DF%2028"));
  EXPECT_FALSE(acceptable_baggage(std::string(8193, 'a')));
}

TEST(TraceState, OnlyWellFormedW3CListsArePassedOn) {
  // What W3C Trace Context allows: spaces around members, empty members, multi-tenant keys,
  // digits first, spaces inside a value, 32 members.
  EXPECT_TRUE(acceptable_tracestate("rojo=00f067aa0ba902b7 , ,congo=t61rcWkgMzE"));
  EXPECT_TRUE(acceptable_tracestate("fw529a3039@dt=00f067aa0ba902b7"));
  EXPECT_TRUE(acceptable_tracestate("1vendor=x,a_b-c*d/e=one two"));
  EXPECT_TRUE(acceptable_tracestate("k=~!\"#$%&'()*+-./:;<>?@[]^_`{|}"));
  std::string members;
  for (int i = 0; i < 32; ++i)
    members += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  EXPECT_TRUE(acceptable_tracestate(members));
  // And what it does not: each of these would be forwarded by a printable-ASCII check.
  EXPECT_FALSE(acceptable_tracestate(members + ",k32=v")) << "33 members";
  EXPECT_FALSE(acceptable_tracestate("Rojo=1")) << "uppercase key";
  EXPECT_FALSE(acceptable_tracestate("rojo")) << "no '='";
  EXPECT_FALSE(acceptable_tracestate("rojo=")) << "empty value";
  EXPECT_FALSE(acceptable_tracestate("=1")) << "empty key";
  EXPECT_FALSE(acceptable_tracestate("rojo=a=b")) << "'=' in a value";
  EXPECT_FALSE(acceptable_tracestate("rojo=1 , x")) << "a member without a value";
  EXPECT_FALSE(acceptable_tracestate("ro jo=1")) << "space in a key";
  EXPECT_FALSE(acceptable_tracestate("rojo=1,rojo=2")) << "a key twice";
  EXPECT_FALSE(acceptable_tracestate("_rojo=1")) << "key starting with '_'";
  EXPECT_FALSE(acceptable_tracestate("t@Sys=1")) << "uppercase system";
  EXPECT_FALSE(acceptable_tracestate("t@1sys=1")) << "system starting with a digit";
  EXPECT_FALSE(acceptable_tracestate("t@abcdefghijklmno=1")) << "system of 15 characters";
  EXPECT_FALSE(acceptable_tracestate("a@b@c=1")) << "two '@'";
  EXPECT_FALSE(acceptable_tracestate("rojo=\x7f")) << "DEL in a value";
  EXPECT_FALSE(acceptable_tracestate("rojo=\xc3\xa9")) << "non-ASCII value";
  EXPECT_FALSE(acceptable_tracestate("k=" + std::string(257, 'v'))) << "value of 257";
  EXPECT_TRUE(acceptable_tracestate("k=" + std::string(256, 'v')));
  EXPECT_FALSE(acceptable_tracestate(" , ")) << "no member at all";
}

// ---- samplers ----

TraceId id_with_low(std::uint64_t low) {
  TraceId id{};
  id[0] = 1;
  for (int i = 0; i < 8; ++i) id[15 - i] = static_cast<std::uint8_t>(low >> (8 * i));
  return id;
}

TEST(Sampler, KindsAndParentBasedDecisions) {
  SpanContext sampled_parent =
      *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  SpanContext unsampled_parent = sampled_parent;
  unsampled_parent.sampled = false;
  const TraceId id = id_with_low(1);
  EXPECT_TRUE((Sampler{SamplerKind::always_on}.sample(&unsampled_parent, id)));
  EXPECT_FALSE((Sampler{SamplerKind::always_off}.sample(&sampled_parent, id)));
  Sampler on{SamplerKind::parentbased_always_on};
  EXPECT_TRUE(on.sample(nullptr, id));
  EXPECT_TRUE(on.sample(&sampled_parent, id));
  EXPECT_FALSE(on.sample(&unsampled_parent, id));
  Sampler off{SamplerKind::parentbased_always_off};
  EXPECT_FALSE(off.sample(nullptr, id));
  EXPECT_TRUE(off.sample(&sampled_parent, id));
}

TEST(Sampler, TraceIdRatioKeepsTheLowerShareOfIdsEverywhereAlike) {
  Sampler half{SamplerKind::traceidratio, 0.5};
  EXPECT_TRUE(half.sample(nullptr, id_with_low(0)));
  EXPECT_TRUE(half.sample(nullptr, id_with_low((1ull << 63) - 1)));
  EXPECT_FALSE(half.sample(nullptr, id_with_low(1ull << 63)));
  EXPECT_FALSE(half.sample(nullptr, id_with_low(~0ull)));
  EXPECT_FALSE((Sampler{SamplerKind::traceidratio, 0.0}.sample(nullptr, id_with_low(0))));
  EXPECT_TRUE((Sampler{SamplerKind::traceidratio, 1.0}.sample(nullptr, id_with_low(~0ull))));
  // The parent-based ratio follows a parent, samples a root by ratio.
  SpanContext parent =
      *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  Sampler pb{SamplerKind::parentbased_traceidratio, 0.0};
  EXPECT_TRUE(pb.sample(&parent, id_with_low(~0ull)));
  EXPECT_FALSE(pb.sample(nullptr, id_with_low(0)));
}

TEST(Sampler, ResolvedFromTheStandardVariables) {
  EXPECT_EQ(resolve_sampler(env_of({})).kind, SamplerKind::parentbased_always_on);
  auto s = resolve_sampler(
      env_of({{"OTEL_TRACES_SAMPLER", "TraceIdRatio"}, {"OTEL_TRACES_SAMPLER_ARG", "0.25"}}));
  EXPECT_EQ(s.kind, SamplerKind::traceidratio);
  EXPECT_DOUBLE_EQ(s.ratio, 0.25);
  // The argument of a sampler without a ratio is not read.
  EXPECT_EQ(resolve_sampler(env_of({{"OTEL_TRACES_SAMPLER", "always_off"},
                                    {"OTEL_TRACES_SAMPLER_ARG", "nonsense"}}))
                .kind,
            SamplerKind::always_off);
  for (auto vars : std::vector<std::map<std::string, std::string>>{
           {{"OTEL_TRACES_SAMPLER", "jaeger_remote"}},
           {{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "1.5"}},
           {{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "half"}}}) {
    try {
      resolve_sampler(env_of(vars));
      ADD_FAILURE() << "accepted " << vars.begin()->second;
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("OTEL_TRACES_SAMPLER"), std::string::npos) << e.what();
    }
  }
}

BatchSettings bsp(std::map<std::string, std::string> vars) {
  return resolve_batch_settings(env_of(std::move(vars)), "OTEL_BSP", BatchSettings{});
}

TEST(BatchSettings, ResolvedWithTheirLimits) {
  auto b = bsp({{"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
                {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10"},
                {"OTEL_BSP_SCHEDULE_DELAY", "250"}});
  EXPECT_EQ(b.max_queue_size, 100u);
  EXPECT_EQ(b.max_export_batch_size, 10u);
  EXPECT_EQ(b.schedule_delay, 250ms);
  EXPECT_THROW(bsp({{"OTEL_BSP_MAX_QUEUE_SIZE", "10"}, {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "11"}}),
               core::ConfigError);
  EXPECT_THROW(bsp({{"OTEL_BSP_MAX_QUEUE_SIZE", "0"}}), core::ConfigError);
  EXPECT_THROW(bsp({{"OTEL_BSP_SCHEDULE_DELAY", "-1"}}), core::ConfigError);
  // The log-record processor's own variables and defaults.
  auto blrp =
      resolve_batch_settings(env_of({{"OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "7"}}), "OTEL_BLRP",
                             BatchSettings{2048, 512, std::chrono::milliseconds(1000)});
  EXPECT_EQ(blrp.max_export_batch_size, 7u);
  EXPECT_EQ(blrp.schedule_delay, 1000ms);
}

// An invalid sampler stops only a process whose traces are active (a start-up error, without
// breaking runs that export no span).
TEST(Sampler, CheckedOnlyWhenTracesAreActive) {
  boost::json::object cfg;
  auto vars = std::map<std::string, std::string>{{"OTEL_TRACES_SAMPLER", "bogus"}};
  EXPECT_NO_THROW(resolve_settings(cfg, env_of(vars)));
  vars["NEMO_GYM_OTEL_ENABLED"] = "1";
  EXPECT_THROW(resolve_settings(cfg, env_of(vars)), core::ConfigError);
  vars["NEMO_GYM_OTEL_TRACES_ENABLED"] = "0";
  EXPECT_NO_THROW(resolve_settings(cfg, env_of(vars)));
}

// ---- tracer ----

// Keeps every finished span.
class Recorder final : public SpanProcessor {
 public:
  void on_end(std::unique_ptr<SpanData> span) noexcept override {
    std::lock_guard lock(mu);
    spans.push_back(std::move(*span));
  }
  bool force_flush(std::chrono::milliseconds) noexcept override { return true; }
  bool shutdown(std::chrono::milliseconds) noexcept override { return true; }
  std::mutex mu;
  std::vector<SpanData> spans;
};

SpanGroups groups(std::string_view spec) { return resolve_span_groups(spec, "test"); }

TEST(Tracer, GroupsGateSitesAndChildrenJoinTheirParentsTrace) {
  Recorder rec;
  Tracer tracer(groups("per_rollout"), Sampler{}, &rec);
  EXPECT_TRUE(tracer.on(SpanGroup::verify));
  EXPECT_FALSE(tracer.on(SpanGroup::job));
  SpanContext root_ctx;
  {
    Span root = tracer.start("gym.rollout", SpanKind::internal, {});
    root_ctx = root.context();
    ASSERT_TRUE(root_ctx.valid());
    Span child = tracer.start("HTTP POST", SpanKind::client, root.context());
    EXPECT_EQ(child.context().trace_id, root_ctx.trace_id);
    EXPECT_NE(child.context().span_id, root_ctx.span_id);
  }  // both end here
  ASSERT_EQ(rec.spans.size(), 2u);
  EXPECT_EQ(rec.spans[0].name, "HTTP POST");
  EXPECT_EQ(rec.spans[0].parent_span_id, root_ctx.span_id);
  EXPECT_EQ(rec.spans[1].name, "gym.rollout");
  EXPECT_TRUE(is_zero(rec.spans[1].parent_span_id));
  EXPECT_LE(rec.spans[1].start_time_unix_nano, rec.spans[1].end_time_unix_nano);
  // No processor: every group off.
  Tracer none;
  EXPECT_FALSE(none.on(SpanGroup::server));
}

TEST(Tracer, AnUnsampledSpanRecordsNothingButPropagatesItsIds) {
  Recorder rec;
  Tracer tracer(groups("all"), Sampler{SamplerKind::always_off}, &rec);
  Span span = tracer.start("gym.verify", SpanKind::internal, {});
  EXPECT_FALSE(span.recording());
  EXPECT_TRUE(span.context().valid());
  EXPECT_FALSE(span.context().sampled);
  EXPECT_EQ(format_traceparent(span.context()).substr(53), "00");
  span.set_attribute("a", "b");
  span.end();
  EXPECT_TRUE(rec.spans.empty());
}

TEST(Tracer, AttributesAreRedactedAndExceptionsRecorded) {
  Recorder rec;
  Tracer tracer(groups("all"), Sampler{}, &rec);
  {
    Span span = tracer.start("x", SpanKind::internal, {});
    span.set_attribute("prompt", "secret prompt");
    span.set_attribute("llm.output_text", "the answer");
    span.set_attribute("api.KEY", "sk-123");
    span.set_attribute("keyboard", "kept");
    span.set_attribute("n", 3);
    span.set_attribute("n", 4);  // replaced, not repeated
    span.record_exception("runtime_error", "it broke");
  }
  ASSERT_EQ(rec.spans.size(), 1u);
  const SpanData& s = rec.spans[0];
  EXPECT_EQ(std::get<std::string>(*s.attribute("prompt")), "[REDACTED]");
  EXPECT_EQ(std::get<std::string>(*s.attribute("llm.output_text")), "[REDACTED]");
  EXPECT_EQ(std::get<std::string>(*s.attribute("api.KEY")), "[REDACTED]");
  EXPECT_EQ(std::get<std::string>(*s.attribute("keyboard")), "kept");
  EXPECT_EQ(std::get<std::int64_t>(*s.attribute("n")), 4);
  EXPECT_EQ(s.attributes.size(), 5u);
  EXPECT_EQ(s.status, StatusCode::error);
  EXPECT_EQ(s.status_message, "it broke");
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0].name, "exception");
}

TEST(Tracer, SpansCutOffAtShutdownAreMarkedTruncated) {
  Recorder rec;
  Tracer tracer(groups("all"), Sampler{}, &rec);
  { Span ended = tracer.start("ended", SpanKind::internal, {}); }
  Span open = tracer.start("open", SpanKind::internal, {});
  tracer.begin_shutdown();
  { Span moved = std::move(open); }  // the coroutine holding it is destroyed
  ASSERT_EQ(rec.spans.size(), 2u);
  EXPECT_EQ(rec.spans[0].attribute("nemo.span.truncated"), nullptr);
  ASSERT_NE(rec.spans[1].attribute("nemo.span.truncated"), nullptr);
  EXPECT_TRUE(std::get<bool>(*rec.spans[1].attribute("nemo.span.truncated")));
  ASSERT_EQ(rec.spans[1].events.size(), 1u);
  EXPECT_EQ(rec.spans[1].events[0].name, "nemo.span.truncated");
}

TEST(Tracer, AForkedWorkerNeverRepeatsItsParentsIds) {
  Recorder rec;
  Tracer tracer(groups("all"), Sampler{}, &rec);
  (void)tracer.start("warm", SpanKind::internal, {}).context();  // seeds this thread's generator
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string id = to_hex(tracer.start("child", SpanKind::internal, {}).context().trace_id);
    (void)!::write(fds[1], id.data(), id.size());
    ::_exit(0);
  }
  const std::string parent =
      to_hex(tracer.start("parent", SpanKind::internal, {}).context().trace_id);
  char buf[32];
  ASSERT_EQ(::read(fds[0], buf, sizeof buf), 32);
  ::waitpid(pid, nullptr, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_NE(std::string(buf, 32), parent);
}

// ---- batch span processor ----

// Records batches; can be held (a hung collector) until released.
class HoldingExporter final : public SpanExporter {
 public:
  ExportResult export_batch(SpanBatch spans, Deadline deadline) noexcept override {
    std::unique_lock lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait_until(lock, deadline, [&] { return !hold || closed; });
    if (closed && hold) return ExportResult::failure;
    batches.push_back(spans.size());
    for (const auto& s : spans) names.push_back(s->name);
    return ExportResult::success;
  }
  void shutdown(Deadline) noexcept override {
    std::lock_guard lock(mu);
    closed = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool hold = false, closed = false, entered = false;
  std::vector<std::size_t> batches;
  std::vector<std::string> names;
};

std::unique_ptr<SpanData> named(std::string name) {
  auto s = std::make_unique<SpanData>();
  s->name = std::move(name);
  return s;
}

TEST(BatchSpanProcessor, FullBatchesGoOutAtOnceTheRestOnFlush) {
  auto exporter = std::make_unique<HoldingExporter>();
  auto* ex = exporter.get();
  BatchSettings settings;
  settings.max_queue_size = 100;
  settings.max_export_batch_size = 4;
  settings.schedule_delay = std::chrono::hours(1);  // only full batches and flushes export
  BatchSpanProcessor p(std::move(exporter), settings);
  for (int i = 0; i < 10; ++i) p.on_end(named("s" + std::to_string(i)));
  ASSERT_TRUE(p.force_flush(5s));
  {
    std::lock_guard lock(ex->mu);
    std::size_t total = 0;
    for (auto b : ex->batches) {
      EXPECT_LE(b, 4u);
      total += b;
    }
    EXPECT_EQ(total, 10u);
    EXPECT_EQ(ex->names.front(), "s0");  // in order
    EXPECT_EQ(ex->names.back(), "s9");
  }
  EXPECT_EQ(p.stats().exported, 10u);
}

TEST(BatchSpanProcessor, AFullQueueDropsAndCountsNeverBlocks) {
  auto exporter = std::make_unique<HoldingExporter>();
  auto* ex = exporter.get();
  ex->hold = true;  // the collector hangs
  BatchSettings settings;
  settings.max_queue_size = 8;
  settings.max_export_batch_size = 2;
  settings.schedule_delay = 10ms;
  BatchSpanProcessor p(std::move(exporter), settings, std::chrono::hours(1));
  p.on_end(named("first"));
  {
    std::unique_lock lock(ex->mu);
    ASSERT_TRUE(ex->cv.wait_for(lock, 10s, [&] { return ex->entered; }));
  }
  // The drop warnings, as the process logs them.
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  for (int i = 0; i < 100; ++i) p.on_end(named("more"));  // returns at once every time
  const auto stats = p.stats();
  EXPECT_EQ(stats.dropped_full, 100u - 8u);
  // Bounded: the held export is given up at the bound and what waited is dropped.
  EXPECT_FALSE(p.shutdown(200ms));
  spdlog::default_logger()->sinks().pop_back();
  // One line at the first drop (the interval is an hour), the rest told at shutdown: every drop
  // is reported once.
  EXPECT_NE(log.str().find("dropped 1 span(s)"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("was full (OTEL_BSP_MAX_QUEUE_SIZE=8); dropped 91 span(s)"),
            std::string::npos)
      << log.str();
  const auto after = p.stats();
  EXPECT_EQ(after.exported + after.export_failed + after.dropped_full, 101u);
  p.on_end(named("late"));
  EXPECT_EQ(p.stats().dropped_closed, 1u);
}

TEST(RolloutId, FollowsUpstreamsRule) {
  auto id = [](const char* row) { return rollout_id_of_row(boost::json::parse(row).as_object()); };
  EXPECT_EQ(id(R"({"_ng_task_index": 3, "_ng_rollout_index": 1})"), "3-1");
  EXPECT_EQ(id(R"({"_ng_task_index": 3, "_ng_rollout_index": 1, "_ng_attempt_index": 2})"),
            "3-1-a2");
  EXPECT_EQ(id(R"({"_ng_task_index": 3, "_ng_rollout_index": 1, "_ng_attempt_index": 0})"), "3-1");
  EXPECT_EQ(id(R"({"_ng_rollout_id": "mine", "_ng_task_index": 3, "_ng_rollout_index": 1})"),
            "mine");
  EXPECT_EQ(id(R"({"_ng_rollout_id": 7, "_ng_task_index": 3, "_ng_rollout_index": 1})"), "3-1");
  EXPECT_EQ(id(R"({"_ng_task_index": 3})"), "");
  EXPECT_EQ(id(R"({"_ng_task_index": "3", "_ng_rollout_index": 1})"), "");
  EXPECT_EQ(id("{}"), "");
}

TEST(BatchSpanProcessor, ShutdownExportsWhatIsQueued) {
  auto exporter = std::make_unique<HoldingExporter>();
  auto* ex = exporter.get();
  BatchSettings settings;
  settings.schedule_delay = std::chrono::hours(1);
  BatchSpanProcessor p(std::move(exporter), settings);
  for (int i = 0; i < 3; ++i) p.on_end(named("s"));
  EXPECT_TRUE(p.shutdown(5s));
  std::lock_guard lock(ex->mu);
  EXPECT_EQ(ex->names.size(), 3u);
}

}  // namespace
}  // namespace gym::telemetry
