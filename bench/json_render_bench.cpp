// What writing every string of a JSON answer as valid UTF-8 costs (core::render_json replaces
// bytes that start no valid UTF-8 sequence with U+FFFD): render_json against the loop it had
// before, which copied every byte from 0x80 up as it was, on the same rows in the same run. Rows:
// a rollout in English (ASCII but for a few typographic characters) and one in Chinese (almost
// every character three bytes). Figures: bench/RESULTS.md ("Valid UTF-8 in every JSON answer").
#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <string>

#include "core/json_text.h"

namespace {

namespace json = boost::json;

// A verify answer's shape: the conversation, the model's output and the reward.
json::value rollout(const std::string& sentence, int sentences) {
  std::string text;
  for (int i = 0; i < sentences; ++i) text += sentence;
  json::array input;
  for (int turn = 0; turn < 4; ++turn)
    input.push_back(json::object{{"role", turn % 2 ? "assistant" : "user"}, {"content", text}});
  return json::object{
      {"responses_create_params", json::object{{"input", input}, {"temperature", 0.6}}},
      {"response",
       json::object{{"id", "resp_0123456789"},
                    {"output", json::array{json::object{
                                   {"type", "message"},
                                   {"content", json::array{json::object{{"type", "output_text"},
                                                                        {"text", text}}}}}}}}},
      {"reward", 1.0}};
}

const json::value& english() {
  static const json::value row = rollout(
      "The weather in San Francisco is sunny \xE2\x80\x94 about 18\xC2\xB0"
      "C, "
      "with a \xE2\x80\x9Clight\xE2\x80\x9D breeze from the west. ",
      40);
  return row;
}

const json::value& chinese() {
  static const json::value row = rollout(
      "\xE6\x97\xA7\xE9\x87\x91\xE5\xB1\xB1\xE7\x9A\x84\xE5\xA4\xA9\xE6\xB0\x94\xE6\x99\xB4"
      "\xE6\x9C\x97\xEF\xBC\x8C\xE5\xA4\xA7\xE7\xBA\xA6\xE5\x8D\x81\xE5\x85\xAB\xE5\xBA\xA6"
      "\xE3\x80\x82",
      80);
  return row;
}

// The loop before: runs of bytes >= 0x20 but '"' and '\\' copied at once, any byte >= 0x80 too.
void render_string_unchecked(json::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  const char* p = s.data();
  const char* const end = p + s.size();
  while (p < end) {
    const char* run = p;
    while (p < end) {
      const auto c = static_cast<unsigned char>(*p);
      if (c < 0x20 || c == '"' || c == '\\') break;
      ++p;
    }
    out.append(run, static_cast<std::size_t>(p - run));
    if (p == end) break;
    const auto c = static_cast<unsigned char>(*p++);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  out.push_back('"');
}

void render_unchecked(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::string:
      render_string_unchecked(v.get_string(), out);
      break;
    case json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        render_unchecked(e, out);
      }
      out.push_back(']');
      break;
    }
    case json::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        render_string_unchecked(kv.key(), out);
        out.push_back(':');
        render_unchecked(kv.value(), out);
      }
      out.push_back('}');
      break;
    }
    default:  // scalars as render_json writes them: not what is measured here
      gym::core::render_json(v, out);
  }
}

template <const json::value& (*Row)(), bool Checked>
void BM_Render(benchmark::State& state) {
  const json::value& row = Row();
  std::string out;
  for (auto _ : state) {
    out.clear();
    if constexpr (Checked)
      gym::core::render_json(row, out);
    else
      render_unchecked(row, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * out.size()));
}

BENCHMARK(BM_Render<english, false>)->Name("english/before_unchecked");
BENCHMARK(BM_Render<english, true>)->Name("english/render_json_checked");
BENCHMARK(BM_Render<chinese, false>)->Name("chinese/before_unchecked");
BENCHMARK(BM_Render<chinese, true>)->Name("chinese/render_json_checked");

}  // namespace

BENCHMARK_MAIN();
