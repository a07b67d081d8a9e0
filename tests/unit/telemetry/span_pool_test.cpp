// The recycled SpanData of span_pool.h: what comes back out is indistinguishable from a new one,
// whatever the span it last held, and the pool keeps no more than its capacity.
#include "telemetry/traces/span_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace gym::telemetry {
namespace {

bool is_default(const SpanData& s) {
  const SpanData fresh;
  return s.trace_id == fresh.trace_id && s.span_id == fresh.span_id &&
         s.parent_span_id == fresh.parent_span_id && s.trace_state.empty() &&
         s.sampled == fresh.sampled && s.name.empty() && s.kind == fresh.kind &&
         s.start_time_unix_nano == 0 && s.end_time_unix_nano == 0 && s.attributes.empty() &&
         s.events.empty() && s.status == fresh.status && s.status_message.empty();
}

// A span that used every field.
std::unique_ptr<SpanData> used(SpanPool& pool) {
  auto s = pool.take();
  s->trace_id.fill(7);
  s->span_id.fill(8);
  s->parent_span_id.fill(9);
  s->trace_state = "vendor=opaque";
  s->sampled = false;
  s->name = "POST /a-route-name-longer-than-a-short-string";
  s->kind = SpanKind::client;
  s->start_time_unix_nano = 1;
  s->end_time_unix_nano = 2;
  for (int i = 0; i < 8; ++i)  // past the inline attributes
    s->attributes.push_back({"url.full", std::string(100, static_cast<char>('a' + i))});
  s->events.push_back({"exception", 3, {{"exception.message", std::string("boom")}}});
  s->status = StatusCode::error;
  s->status_message = "boom";
  return s;
}

// Takes everything the pool and this thread's cache hold, so that what is given next is what
// comes out next.
std::vector<std::unique_ptr<SpanData>> drain(SpanPool& pool) {
  std::vector<std::unique_ptr<SpanData>> out;
  for (std::size_t i = 0; i < SpanPool::kCapacity + SpanPool::kRefill; ++i)
    out.push_back(pool.take());
  return out;
}

TEST(SpanPool, RecycledSpansComeBackAsNew) {
  SpanPool& pool = SpanPool::instance();
  std::vector<std::unique_ptr<SpanData>> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(used(pool));
  std::vector<const SpanData*> ours;
  for (const auto& s : batch) ours.push_back(s.get());
  auto held = drain(pool);
  pool.give(batch);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(pool.free_count(), ours.size());

  std::vector<std::unique_ptr<SpanData>> taken;
  for (std::size_t i = 0; i < ours.size(); ++i) taken.push_back(pool.take());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_TRUE(is_default(*taken[i]));
    EXPECT_NE(std::find(ours.begin(), ours.end(), taken[i].get()), ours.end());
  }
  pool.give(taken);
  pool.give(held);
}

TEST(SpanPool, KeepsAtMostItsCapacity) {
  SpanPool& pool = SpanPool::instance();
  std::vector<std::unique_ptr<SpanData>> batch;
  for (std::size_t i = 0; i < SpanPool::kCapacity + 100; ++i)
    batch.push_back(std::make_unique<SpanData>());
  pool.give(batch);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(pool.free_count(), SpanPool::kCapacity);
}

// Spans given by one thread (the processor's) are taken by others (the servers').
TEST(SpanPool, SpansMoveBetweenThreads) {
  SpanPool& pool = SpanPool::instance();
  std::vector<std::unique_ptr<SpanData>> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(used(pool));
  std::thread([&] { pool.give(batch); }).join();
  std::thread([&] {
    for (std::size_t i = 0; i < SpanPool::kRefill * 2; ++i) EXPECT_TRUE(is_default(*pool.take()));
  }).join();
}

}  // namespace
}  // namespace gym::telemetry
