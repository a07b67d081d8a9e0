// The fake OpenAI-compatible endpoint (tests/support/fake_openai.cpp) as a child process, and a
// `gym env start` deployment beside it: what the live model tests share.
#pragma once

#include "files.h"
#include "process.h"
#include "reserved_port.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gym::test {

// The fake endpoint as a process; its base URL ends in /v1 as vLLM's does.
struct FakeEndpoint {
  std::unique_ptr<ChildProcess> proc;
  int port = 0;
  explicit FakeEndpoint(std::vector<std::string> args = {}) {
    args.insert(args.begin(), build_path("tests/support/gym_fake_openai"));
    proc = std::make_unique<ChildProcess>(args);
    port = proc->wait_port();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
  // Appends steps to its script (POST /script); a test failure when it refuses them.
  void script(const std::string& steps) {
    auto raw = http_raw(port, post("/script", steps));
    EXPECT_EQ(status_of(raw), 200) << raw;
  }
  // GET /received: {"requests": [...], "served": n, "models_probed": n}.
  boost::json::object state() {
    auto raw = http_raw(port, "GET /received HTTP/1.1\r\nHost: x\r\n\r\n");
    return boost::json::parse(body_of(raw)).as_object();
  }
  boost::json::array received() { return state().at("requests").as_array(); }
};

// `gym env start` with `args`; its output in the file `log`; the served instances from the head
// server. `env`: NAME=value words for env(1), or empty; `cwd`: its working directory, or empty
// for this process's.
class Deployment {
 public:
  Deployment(const std::string& args, const std::string& log, const std::string& env = "",
             const std::string& cwd = "")
      : head_port_(own_head_.port()),
        log_(log),
        proc_({"/bin/sh", "-c",
               (cwd.empty() ? "" : "cd '" + cwd + "' && ") + "exec " +
                   (env.empty() ? "" : "env " + env + " ") + build_path("src/cli/gym") +
                   " env start " + args + " ++head_server.port=" + std::to_string(head_port_) +
                   " >" + log + " 2>&1"}) {}
  ~Deployment() { stop(); }
  // SIGTERM and the wait for its exit (telemetry is flushed by then); its exit code, or -1 when it
  // had already stopped.
  int stop() {
    if (!proc_.running()) return -1;
    proc_.signal(SIGTERM);
    return proc_.wait_exit(std::chrono::seconds(20));
  }
  bool ready() {
    for (int i = 0; i < 3000; ++i) {
      if (output().find("servers ready!") != std::string::npos) return true;
      if (!proc_.running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::string output() const { return read_text(log_); }
  // Polls the log until it contains `text` (a server's line reaches it through the orchestrator
  // after that server has answered); false when `limit` passes first.
  bool wait_for_output(const std::string& text,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (output().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  int head_port() const { return head_port_; }
  int port_of(const std::string& instance) {
    for (const auto& v : server_instances())
      if (v.at("process_name").as_string() == instance) return v.at("port").to_number<int>();
    return 0;
  }
  // The process of each server the deployment started, by instance name.
  std::map<std::string, pid_t> server_pids() {
    std::map<std::string, pid_t> pids;
    for (const auto& v : server_instances())
      pids[std::string(v.at("process_name").as_string())] = v.at("pid").to_number<pid_t>();
    return pids;
  }
  std::string head_get(const std::string& path) {
    return body_of(http_raw(head_port_, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  ChildProcess& proc() { return proc_; }

 private:
  // GET /server_instances of the head server.
  boost::json::array server_instances() {
    auto raw = http_raw(head_port_, "GET /server_instances HTTP/1.1\r\nHost: x\r\n\r\n");
    return boost::json::parse(body_of(raw)).as_array();
  }

  ReservedPort own_head_;
  int head_port_;
  std::string log_;
  ChildProcess proc_;
};

// The environment process `pid` runs with (/proc/<pid>/environ), each name with its first value
// as getenv reads it; empty when it cannot be read (the process is gone).
inline std::map<std::string, std::string> environ_of(pid_t pid) {
  std::map<std::string, std::string> vars;
  const std::string text = read_text("/proc/" + std::to_string(pid) + "/environ");
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\0', at), text.size());
    const std::string entry = text.substr(at, end - at);
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) vars.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    at = end + 1;
  }
  return vars;
}

inline std::string write_file(TempDir& tmp, const std::string& name, const std::string& text) {
  const auto path = tmp.file(name);
  std::ofstream(path) << text;
  return path;
}

struct Answer {
  int status = 0;
  boost::json::value body;
  std::string cookie;  // Set-Cookie of the answer (name=value)
};

inline Answer post_json(int port, const std::string& path, const std::string& body,
                        const std::string& cookie = "") {
  auto raw = http_raw(port, post(path, body, cookie.empty() ? "" : "Cookie: " + cookie + "\r\n"),
                      std::chrono::milliseconds(60000));
  Answer a;
  a.status = status_of(raw);
  boost::system::error_code ec;
  a.body = boost::json::parse(body_of(raw), ec);
  auto set = header_of(raw, "set-cookie");
  a.cookie = set.substr(0, set.find(';'));
  return a;
}

// The fake endpoint's tokenisation (fake_openai.cpp): "<S>" is <|im_start|> (151644), "<E>"
// <|im_end|> (151645), every other byte one token whose id is its value.
inline boost::json::array fake_token_ids(std::string_view text) {
  boost::json::array out;
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == "<S>") {
      out.push_back(151644);
      i += 3;
    } else if (text.substr(i, 3) == "<E>") {
      out.push_back(151645);
      i += 3;
    } else {
      out.push_back(static_cast<std::int64_t>(static_cast<unsigned char>(text[i++])));
    }
  }
  return out;
}

// `n` weather questions for example_single_tool_call, one JSONL row each.
inline std::string weather_rows(int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += "{\"responses_create_params\":{\"input\":\"Weather in city " + std::to_string(i) +
            "?\"}}\n";
  return text;
}

// `gym eval run` of example_single_tool_call against a live endpoint (a base URL), from `input`
// to `out`; `api_key` when not empty, then `extra`.
inline std::string live_eval_command(const std::string& endpoint, const std::string& input,
                                     const std::string& out, const std::string& extra = "",
                                     const std::string& api_key = "") {
  return build_path("src/cli/gym") +
         " eval run --resources-server example_single_tool_call --model-type vllm_model"
         " --model-url " +
         endpoint + " --model fake-model" + (api_key.empty() ? "" : " --model-api-key " + api_key) +
         " --agent example_single_tool_call_simple_agent --input " + input + " --output " + out +
         " " + extra;
}

}  // namespace gym::test
