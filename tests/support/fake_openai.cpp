// A fake OpenAI-compatible endpoint for the live model tests and the model-proxy benchmark:
// what vLLM, OpenAI and Azure OpenAI answer, on 127.0.0.1, fast and scriptable. Prints
// "LISTENING <port>" once bound; serves until SIGINT/SIGTERM.
//
//   POST /v1/chat/completions, /openai/deployments/<name>/chat/completions (Azure; the name is
//        --azure-deployment, default my-deploy)
//        the next scripted step if any; else, with --table, the recorded answer whose messages
//        match (normalized: role, text without <think> spans, tool calls, tool_call_id; 404
//        when none does); else a small fixed chat.completion ("Hello"). Every chat answer (a
//        scripted `answer` or `content`, a table answer, the default) gets vLLM's token
//        information from the fixed tokenisation below: with return_tokens_as_token_ids
//        choice.logprobs.content = [{"token": "token_id:<id>", "logprob": <lp(id)>}, ...] (an
//        answer that brings its own logprobs keeps them), with return_token_ids also the
//        top-level prompt_token_ids and choice.token_ids.
//   POST /v1/responses   the next scripted step, else a small Response
//   POST /tokenize       vLLM's tokenizer route: {"tokens": prompt ids of the body's messages and
//                        tools with the generation prompt, "count": n, "max_model_len": N}
//   GET  /v1/models      the --served-model ids (default fake-model), each with "max_model_len"
//                        (--max-model-len, default 4096), for readiness probes; counted
//   POST /script         appends steps: [{"status": 429, "body": ..., "times": n},
//                        {"answer": <body>}, {"hang": true}, {"content": "text"}, ...]
//   GET  /received       every request so far: path, query, headers (lower-case), body; and
//                        "served" (chat and Responses calls), "models_probed" (GET /v1/models)
//   POST /reset          forgets the script and the requests
//
// The tokenisation, a stand-in for a Qwen-style chat template (the Python tests compute the same):
//   - <|im_start|> is token 151644 and <|im_end|> 151645; every other byte of text is one token
//     whose id is the byte's value (UTF-8 bytes, so "é" is [195, 169]).
//   - block(role, body) = [151644] + bytes(role + "\n" + body) + [151645] + bytes("\n").
//   - prompt ids = block("system", "# Tools" + "\n<name>" per tool) when the request has tools,
//     then block(role, body) per message, then [151644] + bytes("assistant\n") (the generation
//     prompt). A message's body is its content text (a string, or the `text` of its parts; null
//     is ""); an assistant's body is that text followed by, per tool call,
//     "<tool_call>{\"name\":\"<name>\",\"arguments\":<arguments>}</tool_call>" with the
//     arguments string inserted as it is. As in Qwen3's templates, the reasoning_content /
//     reasoning of an assistant message in the history is NOT rendered.
//   - generation ids of an answer = bytes("<think>" + reasoning + "</think>" when the answer has
//     reasoning_content (or reasoning), then its assistant body) + [151645]. So without reasoning,
//     turn N+1's prompt ids start with turn N's prompt ids + generation ids; with reasoning they
//     break where turn N's generation starts.
//   - lp(id) = -(1 + id % 16) / 16.
//
// Flags: --host H (default 127.0.0.1), --port P (default 0), --table FILE (JSONL of {"messages":
// [...], "response": {...}}),
// --no-record (keep no requests: the benchmark's steady state), --delay-ms N (every chat and
// Responses answer waits N ms, like a model generating: calls stay in flight), --routed-experts
// (every chat answer's message carries "routed_experts": "fake-routed-experts:<generated token
// count>", as vLLM with router replay adds it), --served-model NAME (repeatable: the ids GET
// /v1/models lists instead of fake-model), --max-model-len N (their max_model_len, default 4096).
#include "http/server.h"

#include "core/json_text.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using gym::http::Request;
using gym::http::Response;

namespace {

// A scripted answer. Also {"reset": true}: the connection is reset (TCP RST) once the request
// was read, as an endpoint that crashed mid-generation; {"headers": {"Retry-After": "2"}}: headers
// on the step's answer (with status, body, answer or content); {"raw": "<text>"}: that text as
// the body, byte for byte (JSON spelled as a serializer would not, e.g. "\u0073k-...");
// {"raw_body_hex": "e9..."}: the same with bytes that need not be UTF-8.
struct Step {
  int status = 200;
  json::value body;  // null: the usual answer of the route
  bool hang = false;
  bool reset = false;
  std::string content;             // a chat answer with this text
  std::optional<std::string> raw;  // the body as is
  json::object headers;
  int times = 1;
};

struct Fake {
  std::deque<Step> script;
  json::array received;
  bool record = true;
  std::map<std::string, json::value> table;  // normalized messages -> chat.completion
  std::uint64_t served = 0;
  std::uint64_t models_probed = 0;     // GET /v1/models
  std::chrono::milliseconds delay{0};  // --delay-ms: every answer waits this long (a slow model)
  bool routed_experts = false;         // --routed-experts
  std::vector<std::string> served_models;  // --served-model (repeatable): what /v1/models lists
  std::int64_t max_model_len = 4096;       // --max-model-len
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

// ---- The fixed tokenisation (header comment) ----

constexpr std::int64_t kImStart = 151644;
constexpr std::int64_t kImEnd = 151645;

void append_bytes(json::array& ids, std::string_view text) {
  for (unsigned char c : text) ids.push_back(static_cast<std::int64_t>(c));
}

void append_block(json::array& ids, std::string_view role, std::string_view body) {
  ids.push_back(kImStart);
  append_bytes(ids, role);
  append_bytes(ids, "\n");
  append_bytes(ids, body);
  ids.push_back(kImEnd);
  append_bytes(ids, "\n");
}

std::string string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// Content text, then "<tool_call>{"name":"..","arguments":..}</tool_call>" per tool call.
std::string assistant_body(const json::object& m) {
  std::string body = m.contains("content") ? text_of(m.at("content")) : "";
  if (const auto* calls = m.if_contains("tool_calls"); calls && calls->is_array())
    for (const auto& call : calls->get_array()) {
      const auto* co = call.if_object();
      const auto* fn = co ? co->if_contains("function") : nullptr;
      if (!fn || !fn->is_object()) continue;
      const auto* args = fn->get_object().if_contains("arguments");
      std::string arguments = !args               ? ""
                              : args->is_string() ? std::string(args->get_string())
                                                  : gym::core::render_json(*args);
      body += "<tool_call>{\"name\":\"" + string_at(fn->get_object(), "name") +
              "\",\"arguments\":" + arguments + "}</tool_call>";
    }
  return body;
}

// The prompt of a chat request (messages and tools) with the generation prompt.
json::array prompt_token_ids(const json::object& request) {
  json::array ids;
  if (const auto* tools = request.if_contains("tools");
      tools && tools->is_array() && !tools->get_array().empty()) {
    std::string body = "# Tools";
    for (const auto& t : tools->get_array()) {
      const auto* to = t.if_object();
      if (!to) continue;
      const auto* fn = to->if_contains("function");
      body += "\n" + (fn && fn->is_object() ? string_at(fn->get_object(), "name")
                                            : string_at(*to, "name"));
    }
    append_block(ids, "system", body);
  }
  if (const auto* messages = request.if_contains("messages"); messages && messages->is_array())
    for (const auto& mv : messages->get_array()) {
      const auto* m = mv.if_object();
      if (!m) continue;
      const std::string role = string_at(*m, "role");
      append_block(ids, role,
                   role == "assistant"      ? assistant_body(*m)
                   : m->contains("content") ? text_of(m->at("content"))
                                            : "");
    }
  ids.push_back(kImStart);
  append_bytes(ids, "assistant\n");
  return ids;
}

// What the model generated for `message`: its reasoning in <think> tags, its body, <|im_end|>.
json::array generation_token_ids(const json::object& message) {
  std::string reasoning = string_at(message, "reasoning_content");
  if (reasoning.empty()) reasoning = string_at(message, "reasoning");
  json::array ids;
  if (!reasoning.empty()) append_bytes(ids, "<think>" + reasoning + "</think>");
  append_bytes(ids, assistant_body(message));
  ids.push_back(kImEnd);
  return ids;
}

bool asked(const json::object& request, std::string_view key) {
  const auto* v = request.if_contains(key);
  return v && v->is_bool() && v->get_bool();
}

// vLLM's token information (and router replay's routed_experts) on a chat answer.
json::value with_token_information(const json::object& request, json::value answer) {
  auto* a = answer.if_object();
  auto* choices = a ? a->if_contains("choices") : nullptr;
  if (!choices || !choices->is_array() || choices->get_array().empty()) return answer;
  auto* choice = choices->get_array()[0].if_object();
  auto* mv = choice ? choice->if_contains("message") : nullptr;
  if (!mv || !mv->is_object()) return answer;
  auto& message = mv->get_object();
  const bool token_ids =
      asked(request, "return_tokens_as_token_ids") && !choice->contains("logprobs");
  if (!token_ids && !fake().routed_experts) return answer;  // the benchmark's path: no work
  const json::array generated = generation_token_ids(message);
  if (fake().routed_experts)
    message["routed_experts"] = "fake-routed-experts:" + std::to_string(generated.size());
  if (!token_ids) return answer;
  json::array lp;
  for (const auto& id : generated) {
    const auto n = id.as_int64();
    lp.push_back(json::object{{"token", "token_id:" + std::to_string(n)},
                              {"logprob", -static_cast<double>(1 + n % 16) / 16.0}});
  }
  (*choice)["logprobs"] = json::object{{"content", std::move(lp)}};
  if (asked(request, "return_token_ids")) {
    (*a)["prompt_token_ids"] = prompt_token_ids(request);
    (*choice)["token_ids"] = generated;
  }
  return answer;
}

json::value chat_answer(const json::object& request, std::string content) {
  json::object message{{"role", "assistant"}, {"content", std::move(content)}};
  json::object choice{{"index", 0}, {"finish_reason", "stop"}, {"message", message}};
  json::object answer{{"id", "chatcmpl-fake"},
                      {"object", "chat.completion"},
                      {"created", 1700000000},
                      {"model", request.contains("model") ? request.at("model") : "fake-model"},
                      {"choices", json::array{std::move(choice)}},
                      {"usage", usage()}};
  return with_token_information(request, std::move(answer));
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

// {"raw_body_hex": "e9..."}: a raw body of bytes that need not be UTF-8 (a proxy's Latin-1 error
// page), two hex digits each.
std::string bytes_of_hex(std::string_view hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return bytes;
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

// Resets the connection of the request being handled: of this process's connected sockets (all
// accepted ones: the fake makes no calls), the one that received data last, since the handler
// runs as soon as its request was read and the tests send one request at a time. A connect() to
// AF_UNSPEC sends the RST and leaves the descriptor to the server, whose write then fails.
void reset_current_connection() {
  int chosen = -1;
  std::uint32_t quietest = UINT32_MAX;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;
  while (const dirent* e = ::readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    sockaddr_storage peer{};
    socklen_t size = sizeof peer;
    tcp_info info{};
    socklen_t info_size = sizeof info;
    if (fd <= 2 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0 ||
        ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_size) != 0)
      continue;
    if (info.tcpi_last_data_recv < quietest) {
      quietest = info.tcpi_last_data_recv;
      chosen = fd;
    }
  }
  ::closedir(dir);
  if (chosen < 0) return;
  sockaddr unspecified{};
  unspecified.sa_family = AF_UNSPEC;
  ::connect(chosen, &unspecified, sizeof unspecified);
}

// The step's answer with its headers.
Response with_headers(Response res, const json::object& headers) {
  for (const auto& [name, value] : headers)
    res.headers.push_back({std::string(name), value.is_string() ? std::string(value.get_string())
                                                                : json::serialize(value)});
  return res;
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
    if (step->reset) {
      reset_current_connection();
      co_return Response::json("reset", 500);  // never arrives
    }
    if (!step->content.empty())
      co_return with_headers(Response::json(chat_answer(request, step->content)), step->headers);
    if (step->raw) {
      Response res;
      res.status = step->status;
      res.body = *step->raw;
      co_return with_headers(std::move(res), step->headers);
    }
    if (!step->body.is_null())
      co_return with_headers(
          Response::json(chat && step->status == 200 ? with_token_information(request, step->body)
                                                     : step->body,
                         step->status),
          step->headers);
    if (step->status != 200)
      co_return with_headers(
          Response::json(json::object{{"error", json::object{{"message", "scripted failure"},
                                                             {"code", step->status}}}},
                         step->status),
          step->headers);
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
    co_return Response::json(with_token_information(request, it->second));
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
    } else if (k == "--served-model" && i + 1 < argc) {
      fake().served_models.push_back(argv[++i]);
    } else if (k == "--max-model-len" && i + 1 < argc) {
      fake().max_model_len = std::stoll(argv[++i]);
    } else if (k == "--routed-experts") {
      fake().routed_experts = true;
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
  if (fake().served_models.empty()) fake().served_models.push_back("fake-model");
  gym::http::Router router;
  router.get("/", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"status", "ok"}});
  });
  router.get("/v1/models", [](Request&) -> asio::awaitable<Response> {
    ++fake().models_probed;
    json::array data;
    for (const auto& id : fake().served_models)
      data.push_back(
          json::object{{"id", id}, {"object", "model"}, {"max_model_len", fake().max_model_len}});
    co_return Response::json(json::object{{"object", "list"}, {"data", std::move(data)}});
  });
  router.post("/v1/chat/completions", [](Request& r) { return serve(r, true); });
  // Azure: /openai/deployments/<deployment>/chat/completions?api-version=...
  router.post("/openai/deployments/" + azure_deployment + "/chat/completions",
              [](Request& r) { return serve(r, true); });
  router.post("/v1/responses", [](Request& r) { return serve(r, false); });
  router.post("/tokenize", [](Request& req) -> asio::awaitable<Response> {
    boost::system::error_code ec;
    json::value body = gym::core::parse_json(req.body, ec);
    if (ec || !body.is_object()) co_return Response::json("body is not a JSON object", 400);
    remember(req, body);
    auto tokens = prompt_token_ids(body.get_object());
    const auto count = tokens.size();
    co_return Response::json(json::object{
        {"count", count}, {"max_model_len", fake().max_model_len}, {"tokens", std::move(tokens)}});
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
      if (const auto* v = o.if_contains("reset")) step.reset = v->as_bool();
      if (const auto* v = o.if_contains("headers")) step.headers = v->as_object();
      if (const auto* v = o.if_contains("content")) step.content = v->as_string();
      if (const auto* v = o.if_contains("raw")) step.raw = std::string(v->as_string());
      if (const auto* v = o.if_contains("raw_body_hex")) step.raw = bytes_of_hex(v->as_string());
      if (const auto* v = o.if_contains("times"))
        step.times = static_cast<int>(v->to_number<std::int64_t>());
      fake().script.push_back(std::move(step));
    }
    co_return Response::json(json::object{{"queued", fake().script.size()}});
  });
  router.get("/received", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"requests", fake().received},
                                          {"served", fake().served},
                                          {"models_probed", fake().models_probed}});
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
