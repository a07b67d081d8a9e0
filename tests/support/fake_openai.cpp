// A fake OpenAI-compatible endpoint for the live model tests and the model-proxy benchmark:
// what vLLM, OpenAI and Azure OpenAI answer, on 127.0.0.1, fast and scriptable. Prints
// "LISTENING <port>" once bound; serves until SIGINT/SIGTERM.
//
//   POST /v1/chat/completions, /openai/deployments/<name>/chat/completions (Azure; the name is
//        --azure-deployment, default my-deploy)
//        the next scripted step if any; else, with --table, the recorded answer whose messages
//        match (normalized: role, text without <think> spans, tool calls, tool_call_id; 404
//        when none does); else a small fixed chat.completion. With return_tokens_as_token_ids
//        the answer carries `token_id:<n>` logprobs, with return_token_ids also
//        prompt_token_ids and choice.token_ids (as vLLM does).
//   POST /v1/responses   the next scripted step, else a small Response
//   POST /tokenize       vLLM's tokenizer route: {"tokens": [...], "count": n}
//   GET  /v1/models      one model, for readiness probes
//   POST /script         appends steps: [{"status": 429, "body": ..., "times": n},
//                        {"answer": <body>}, {"hang": true}, {"content": "text"}, ...]
//   GET  /received       every request so far: path, query, headers (lower-case), body
//   POST /reset          forgets the script and the requests
//
// Flags: --host H (default 127.0.0.1), --port P (default 0), --table FILE (JSONL of {"messages":
// [...], "response": {...}}),
// --no-record (keep no requests: the benchmark's steady state), --delay-ms N (every chat and
// Responses answer waits N ms, like a model generating: calls stay in flight).
#include "http/server.h"

#include "core/json_text.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
using gym::http::Request;
using gym::http::Response;

namespace {

struct Step {
  int status = 200;
  json::value body;  // null: the usual answer of the route
  bool hang = false;
  std::string content;  // a chat answer with this text
  int times = 1;
};

struct Fake {
  std::deque<Step> script;
  json::array received;
  bool record = true;
  std::map<std::string, json::value> table;  // normalized messages -> chat.completion
  std::uint64_t served = 0;
  std::chrono::milliseconds delay{0};  // --delay-ms: every answer waits this long (a slow model)
};

Fake& fake() {
  static Fake f;
  return f;
}

std::string text_of(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string out;
  if (const auto* parts = content.if_array())
    for (const auto& p : *parts)
      if (const auto* po = p.if_object())
        if (const auto* t = po->if_contains("text"); t && t->is_string()) out += t->get_string();
  return out;
}

std::string without_think(std::string text) {
  for (auto open = text.find("<think>"); open != std::string::npos; open = text.find("<think>")) {
    auto close = text.find("</think>", open);
    if (close == std::string::npos) break;
    text.erase(open, close + 8 - open);
  }
  return text;
}

// What a recorded answer is keyed by: the parts of the conversation a model reacts to.
std::string normalized(const json::value& messages) {
  json::array out;
  if (const auto* list = messages.if_array())
    for (const auto& m : *list) {
      const auto* mo = m.if_object();
      if (!mo) continue;
      json::object n;
      n["role"] = mo->contains("role") ? mo->at("role") : json::value("");
      std::string text = without_think(mo->contains("content") ? text_of(mo->at("content")) : "");
      // Tool results compare as JSON values: servers differ in spacing ({"a": 1} vs {"a":1}).
      boost::system::error_code ec;
      if (auto parsed = gym::core::parse_json(text, ec); !ec && mo->contains("tool_call_id"))
        text = gym::core::render_json(parsed);
      n["text"] = text;
      if (const auto* calls = mo->if_contains("tool_calls"); calls && calls->is_array()) {
        json::array c;
        for (const auto& call : calls->get_array()) {
          const auto& co = call.as_object();
          const auto& fn = co.at("function").as_object();
          c.push_back(json::array{co.at("id"), fn.at("name"), fn.at("arguments")});
        }
        if (!c.empty()) n["tool_calls"] = std::move(c);
      }
      if (const auto* id = mo->if_contains("tool_call_id")) n["tool_call_id"] = *id;
      out.push_back(std::move(n));
    }
  return gym::core::render_json(out);
}

json::object usage() {
  return json::object{{"prompt_tokens", 12}, {"completion_tokens", 3}, {"total_tokens", 15}};
}

json::object chat_answer(const json::object& request, std::string content) {
  json::object message{{"role", "assistant"}, {"content", std::move(content)}};
  json::object choice{{"index", 0}, {"finish_reason", "stop"}, {"message", message}};
  json::object answer{{"id", "chatcmpl-fake"},
                      {"object", "chat.completion"},
                      {"created", 1700000000},
                      {"model", request.contains("model") ? request.at("model") : "fake-model"},
                      {"choices", json::array{}},
                      {"usage", usage()}};
  if (request.contains("return_tokens_as_token_ids")) {
    json::array lp;
    for (int id : {101, 102, 103})
      lp.push_back(json::object{{"token", "token_id:" + std::to_string(id)}, {"logprob", -0.25}});
    choice["logprobs"] = json::object{{"content", std::move(lp)}};
    if (request.contains("return_token_ids")) {
      answer["prompt_token_ids"] = json::array{1, 2, 3, 4};
      choice["token_ids"] = json::array{101, 102, 103};
    }
  }
  answer["choices"].as_array().push_back(std::move(choice));
  return answer;
}

json::object responses_answer(const json::object& request) {
  json::object part{{"annotations", json::array{}}, {"text", "Hello"}, {"type", "output_text"}};
  json::object message{{"id", "msg_fake"},
                       {"content", json::array{part}},
                       {"role", "assistant"},
                       {"status", "completed"},
                       {"type", "message"}};
  return json::object{{"id", "resp_fake"},
                      {"created_at", 1700000000.0},
                      {"model", request.contains("model") ? request.at("model") : "fake-model"},
                      {"object", "response"},
                      {"output", json::array{message}},
                      {"parallel_tool_calls", true},
                      {"tool_choice", "auto"},
                      {"tools", json::array{}},
                      {"status", "completed"},
                      {"usage", json::object{{"input_tokens", 12},
                                             {"input_tokens_details", {{"cached_tokens", 0}}},
                                             {"output_tokens", 3},
                                             {"output_tokens_details", {{"reasoning_tokens", 0}}},
                                             {"total_tokens", 15}}}};
}

void remember(const Request& req, const json::value& body) {
  if (!fake().record) return;
  json::object headers;
  for (const auto& h : req.headers) {
    std::string name = h.name;
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers[name] = h.value;
  }
  const auto q = req.target.find('?');
  fake().received.push_back(
      json::object{{"path", req.path},
                   {"query", q == std::string::npos ? std::string() : req.target.substr(q + 1)},
                   {"headers", std::move(headers)},
                   {"body", body}});
}

// The next scripted step, if any.
std::optional<Step> next_step() {
  auto& script = fake().script;
  if (script.empty()) return std::nullopt;
  Step s = script.front();
  if (--script.front().times <= 0) script.pop_front();
  return s;
}

asio::awaitable<Response> hang() {
  asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
  co_await t.async_wait(asio::use_awaitable);
  co_return Response::json("hung", 504);
}

asio::awaitable<Response> serve(Request& req, bool chat) {
  ++fake().served;
  boost::system::error_code ec;
  json::value body = gym::core::parse_json(req.body, ec);
  if (ec || !body.is_object()) co_return Response::json("body is not a JSON object", 400);
  remember(req, body);
  if (fake().delay.count() > 0) {
    asio::steady_timer wait(co_await asio::this_coro::executor, fake().delay);
    co_await wait.async_wait(asio::use_awaitable);
  }
  const auto& request = body.get_object();
  if (auto step = next_step()) {
    if (step->hang) co_return co_await hang();
    if (!step->content.empty()) co_return Response::json(chat_answer(request, step->content));
    if (!step->body.is_null()) co_return Response::json(step->body, step->status);
    if (step->status != 200)
      co_return Response::json(json::object{{"error", json::object{{"message", "scripted failure"},
                                                                   {"code", step->status}}}},
                               step->status);
  }
  if (!chat) co_return Response::json(responses_answer(request));
  if (!fake().table.empty()) {
    const auto key = normalized(request.contains("messages") ? request.at("messages") : nullptr);
    auto it = fake().table.find(key);
    if (it == fake().table.end())
      co_return Response::json(
          json::object{{"error", json::object{{"message", "no recorded answer for these messages"},
                                              {"normalized", key}}}},
          404);
    co_return Response::json(it->second);
  }
  co_return Response::json(chat_answer(request, "Hello"));
}

bool load_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto v = gym::core::parse_json(line);
    const auto& o = v.as_object();
    fake().table[normalized(o.at("messages"))] = o.at("response");
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  gym::http::ServerOptions opt;
  std::string azure_deployment = "my-deploy";
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--no-record") {
      fake().record = false;
    } else if (k == "--host" && i + 1 < argc) {
      opt.host = argv[++i];
    } else if (k == "--port" && i + 1 < argc) {
      opt.port = static_cast<std::uint16_t>(std::stoi(argv[++i]));
    } else if (k == "--delay-ms" && i + 1 < argc) {
      fake().delay = std::chrono::milliseconds(std::stoi(argv[++i]));
    } else if (k == "--azure-deployment" && i + 1 < argc) {
      azure_deployment = argv[++i];
    } else if (k == "--table" && i + 1 < argc) {
      if (!load_table(argv[++i])) {
        std::cerr << "cannot read " << argv[i] << "\n";
        return 2;
      }
    } else {
      std::cerr << "unknown flag " << k << "\n";
      return 2;
    }
  }
  gym::http::Router router;
  router.get("/", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"status", "ok"}});
  });
  router.get("/v1/models", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{
        {"object", "list"},
        {"data", json::array{json::object{{"id", "fake-model"}, {"object", "model"}}}}});
  });
  router.post("/v1/chat/completions", [](Request& r) { return serve(r, true); });
  // Azure: /openai/deployments/<deployment>/chat/completions?api-version=...
  router.post("/openai/deployments/" + azure_deployment + "/chat/completions",
              [](Request& r) { return serve(r, true); });
  router.post("/v1/responses", [](Request& r) { return serve(r, false); });
  router.post("/tokenize", [](Request& req) -> asio::awaitable<Response> {
    boost::system::error_code ec;
    json::value body = gym::core::parse_json(req.body, ec);
    remember(req, body);
    co_return Response::json(
        json::object{{"count", 4}, {"max_model_len", 4096}, {"tokens", json::array{1, 2, 3, 4}}});
  });
  router.post("/script", [](Request& req) -> asio::awaitable<Response> {
    auto steps = gym::core::parse_json(req.body);
    for (const auto& s : steps.as_array()) {
      const auto& o = s.as_object();
      Step step;
      if (const auto* v = o.if_contains("status"))
        step.status = static_cast<int>(v->to_number<std::int64_t>());
      if (const auto* v = o.if_contains("body")) step.body = *v;
      if (const auto* v = o.if_contains("answer")) step.body = *v;
      if (const auto* v = o.if_contains("hang")) step.hang = v->as_bool();
      if (const auto* v = o.if_contains("content")) step.content = v->as_string();
      if (const auto* v = o.if_contains("times"))
        step.times = static_cast<int>(v->to_number<std::int64_t>());
      fake().script.push_back(std::move(step));
    }
    co_return Response::json(json::object{{"queued", fake().script.size()}});
  });
  router.get("/received", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(
        json::object{{"requests", fake().received}, {"served", fake().served}});
  });
  router.post("/reset", [](Request&) -> asio::awaitable<Response> {
    fake().script.clear();
    fake().received.clear();
    co_return Response::json(json::object{{"reset", true}});
  });
  gym::http::HttpServer srv(std::move(router), opt);
  const auto port = srv.bind();
  std::printf("LISTENING %u\n", port);
  std::fflush(stdout);
  return srv.run();
}
