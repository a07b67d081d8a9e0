// replay_model end to end (docs/reference/replay-model.md): `gym serve` loads each conformance
// rollouts file and every recorded row is replayed turn by turn the way simple_agent drives a model
// (docs/design/wire-compatibility.md#the-agents-loop); then the failure answers, strict validation
// and startup errors.
#include "conformance_dir.h"
#include "files.h"
#include "process.h"
#include "replay_input.h"
#include "reserved_port.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::ChildProcess;
using gym::test::conformance_dir;
using gym::test::read_jsonl;
using gym::test::TempDir;

namespace {

constexpr const char* kCookieName = "ReplayResponsesAPIModel___policy_model";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

fs::path data_file(const std::string& env, const std::string& name) {
  return fs::path(conformance_dir()) / env / name;
}

// A YAML flow scalar for a path (JSON strings are YAML).
std::string yaml_quoted(const std::string& s) { return json::serialize(json::value(s)); }

std::string replay_yaml(int port, const std::vector<std::string>& files,
                        const std::string& check = "semantic", const std::string& extra = "") {
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "" : ", ") + yaml_quoted(f);
  return extra + "policy_model:\n  responses_api_models:\n    replay_model:\n      port: " +
         std::to_string(port) + "\n      rollouts_jsonl_fpaths: [" + list +
         "]\n      tool_output_check: " + check + "\n";
}

struct Reply {
  int status = -1;
  json::value body;
  std::string cookie;  // "name=value" of the model's session cookie
  std::string raw_body;
};

// A `gym serve` process for one replay_model instance.
class ReplayServer {
 public:
  explicit ReplayServer(const std::function<std::string(int)>& yaml)
      : port_(reserved_.port()),
        child_({gym_binary(), "serve"},
               {"NEMO_GYM_CONFIG_DICT=" + yaml(port_), "NEMO_GYM_CONFIG_PATH=policy_model"}) {
    for (int i = 0; i < 800 && child_.running(); ++i) {
      auto r = gym::test::http_raw(port_, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      if (gym::test::status_of(r) > 0) {
        ready_ = true;
        break;
      }
      ::usleep(25'000);
    }
  }
  ~ReplayServer() {
    child_.signal(SIGTERM);
    child_.wait_exit();
  }
  bool ready() const { return ready_; }

  Reply post_text(const std::string& path, const std::string& body,
                  const std::string& cookie = "") {
    auto raw = gym::test::http_raw(
        port_, gym::test::post(path, body, cookie.empty() ? "" : "Cookie: " + cookie + "\r\n"));
    Reply r;
    r.status = gym::test::status_of(raw);
    r.raw_body = gym::test::body_of(raw);
    boost::system::error_code ec;
    r.body = json::parse(r.raw_body, ec);
    auto set_cookie = gym::test::header_of(raw, "set-cookie");
    r.cookie = set_cookie.substr(0, set_cookie.find(';'));
    return r;
  }
  Reply post(const std::string& path, const json::value& body, const std::string& cookie = "") {
    return post_text(path, json::serialize(body), cookie);
  }
  std::string get(const std::string& path) {
    return gym::test::http_raw(port_, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
  }

 private:
  gym::test::ReservedPort reserved_;  // held while the server runs
  int port_;
  ChildProcess child_;
  bool ready_ = false;
};

// The replay model's normalisation (tests/support, independent of the server's).
json::array normalized_input(const json::value& input) {
  return gym::test::normalized_items(input);
}

// A member, or null when absent.
json::value field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? *v : json::value();
}

std::string type_of(const json::value& item) {
  const auto* t = item.as_object().if_contains("type");
  return t && t->is_string() ? std::string(t->get_string()) : "";
}

// A tool output rendered compactly when it is JSON ({"a": 1} -> {"a":1}), as a gym-cpp
// resources server would answer.
json::value compact(const json::value& fco) {
  json::object out = fco.as_object();
  if (const auto* text = out.if_contains("output"); text && text->is_string()) {
    boost::system::error_code ec;
    auto parsed = json::parse(text->get_string(), ec);
    if (!ec) out["output"] = json::serialize(parsed);
  }
  return out;
}

struct Trajectory {
  std::vector<json::object> turns;  // every model answer, in order
  json::array replayed;             // turn outputs + the tool outputs that followed them
  std::string failure;              // set when a turn did not answer 200
};

// simple_agent's loop against the replay model, tool outputs taken from the recording (compacted
// when `compact_outputs`).
Trajectory drive(ReplayServer& server, json::object params, const json::array& recorded,
                 bool compact_outputs) {
  Trajectory t;
  json::array input;
  if (params.at("input").is_string()) {
    input.push_back(json::object{{"role", "user"}, {"content", params.at("input")}});
  } else {
    input = params.at("input").as_array();
  }
  json::array sent;  // everything appended after the original input
  std::string cookie;
  for (int step = 0; step < 20; ++step) {
    json::array full = input;
    for (const auto& v : sent) full.push_back(v);
    params["input"] = full;
    auto reply = server.post("/v1/responses", params, cookie);
    if (reply.status != 200) {
      t.failure = std::to_string(reply.status) + " " + reply.raw_body;
      return t;
    }
    cookie = reply.cookie;
    const auto& response = reply.body.as_object();
    t.turns.push_back(response);
    bool calls = false, messages = false;
    for (const auto& item : response.at("output").as_array()) {
      t.replayed.push_back(item);
      sent.push_back(item);
      if (type_of(item) == "function_call") calls = true;
      if (type_of(item) == "message") messages = true;
    }
    if (!field(response, "incomplete_details").is_null()) break;
    if (!calls && messages) break;
    for (const auto& item : response.at("output").as_array()) {
      if (type_of(item) != "function_call") continue;
      const auto& call_id = item.at("call_id");
      for (const auto& rec : recorded)
        if (type_of(rec) == "function_call_output" && rec.at("call_id") == call_id) {
          t.replayed.push_back(rec);
          sent.push_back(compact_outputs ? compact(rec) : rec);
          break;
        }
    }
  }
  return t;
}

void require_conformance_data() {
  auto probe = data_file("example_single_tool_call", "example_rollouts.jsonl");
  ASSERT_TRUE(fs::exists(probe))
      << "conformance data not found: " << probe
      << " does not exist. Set GYM_CONFORMANCE_DIR to the folder holding <env>/example.jsonl "
         "and <env>/example_rollouts.jsonl (default: <source root>/../shared/data/conformance).";
}

struct ExitResult {
  int code;
  std::string output;
};

// `gym serve` whose config is in a file (NEMO_GYM_CONFIG_DICT_FILE); stdout and stderr.
ExitResult serve_and_wait(const TempDir& dir, const std::string& yaml) {
  auto cfg = dir.write("config.yaml", yaml);
  std::string cmd = "NEMO_GYM_CONFIG_PATH=policy_model NEMO_GYM_CONFIG_DICT_FILE=" + cfg + " " +
                    gym_binary() + " serve 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (auto n = std::fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  int status = ::pclose(pipe.release());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

// ---- Every recorded row of every conformance file replays ----

class ReplayConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(ReplayConformance, EveryRecordedRowReplaysTurnByTurn) {
  require_conformance_data();
  const std::string env = GetParam();
  auto rollouts_path = data_file(env, "example_rollouts.jsonl");
  auto examples = read_jsonl(data_file(env, "example.jsonl"));
  auto recorded_rows = read_jsonl(rollouts_path);
  ASSERT_EQ(examples.size(), 5u);
  ASSERT_EQ(recorded_rows.size(), 5u);

  ReplayServer server([&](int port) { return replay_yaml(port, {rollouts_path.string()}); });
  ASSERT_TRUE(server.ready()) << "gym serve did not start for " << rollouts_path;

  std::vector<bool> used(recorded_rows.size(), false);
  for (std::size_t task = 0; task < examples.size(); ++task) {
    SCOPED_TRACE(env + " task " + std::to_string(task));
    const auto& params = examples[task].at("responses_create_params").as_object();
    // The recorded row of this task: same normalised input.
    std::optional<std::size_t> match;
    auto input = normalized_input(params.at("input"));
    for (std::size_t r = 0; r < recorded_rows.size(); ++r)
      if (normalized_input(recorded_rows[r].at("responses_create_params").at("input")) == input) {
        ASSERT_FALSE(match.has_value()) << "two recorded rows share the input";
        match = r;
      }
    ASSERT_TRUE(match.has_value()) << "no recorded row for this input";
    used[*match] = true;
    const auto& response = recorded_rows[*match].at("response").as_object();
    const auto& recorded = response.at("output").as_array();

    // Odd tasks send tool outputs re-serialised compactly (tool_output_check: semantic).
    auto t = drive(server, params, recorded, task % 2 == 1);
    ASSERT_TRUE(t.failure.empty()) << t.failure;
    ASSERT_FALSE(t.turns.empty());
    EXPECT_EQ(json::value(t.replayed), json::value(recorded))
        << "replayed: " << json::serialize(t.replayed);
    const auto& id = response.at("id").as_string();
    for (std::size_t n = 0; n + 1 < t.turns.size(); ++n) {
      EXPECT_TRUE(field(t.turns[n], "usage").is_null()) << "turn " << n + 1;
      EXPECT_EQ(t.turns[n].at("id"), json::value(std::string(id) + "_t" + std::to_string(n + 1)));
      EXPECT_EQ(t.turns[n].at("status"), "completed");
    }
    const auto& last = t.turns.back();
    EXPECT_EQ(last.at("id"), json::value(id));
    EXPECT_EQ(field(last, "usage"), field(response, "usage"));
    EXPECT_EQ(field(last, "incomplete_details"), field(response, "incomplete_details"));
    EXPECT_EQ(last.at("model"), response.at("model"));
  }
  for (std::size_t r = 0; r < used.size(); ++r) EXPECT_TRUE(used[r]) << "row " << r << " unused";
}

INSTANTIATE_TEST_SUITE_P(Envs, ReplayConformance,
                         ::testing::Values("example_single_tool_call", "example_session_state_mgmt",
                                           "example_multi_step", "mcqa", "xlam_fc", "string_match"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// ---- Failures, validation and routes ----

class ReplayModelServer : public ::testing::Test {
 protected:
  void SetUp() override { require_conformance_data(); }
  std::string weather_rollouts() {
    return data_file("example_single_tool_call", "example_rollouts.jsonl").string();
  }
  // A recorded row of example_single_tool_call whose trajectory calls tools.
  json::object tool_row() {
    for (auto& row : read_jsonl(weather_rollouts()))
      for (const auto& item : row.at("response").at("output").as_array())
        if (type_of(item) == "function_call") return row;
    ADD_FAILURE() << "no tool-calling row";
    return {};
  }
};

TEST_F(ReplayModelServer, LivenessRoutesAndCookie) {
  ReplayServer server([&](int port) { return replay_yaml(port, {weather_rollouts()}); });
  ASSERT_TRUE(server.ready());
  auto root = server.get("/");
  EXPECT_EQ(gym::test::status_of(root), 200);
  EXPECT_EQ(gym::test::body_of(root), R"({"status":"ok"})");
  EXPECT_EQ(gym::test::header_of(root, "set-cookie").rfind(std::string(kCookieName) + "=", 0), 0u);

  for (const char* path : {"/v1/chat/completions", "/v1/messages"}) {
    auto r = server.post_text(path, R"({"model":"m","messages":[]})");
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.raw_body, R"({"detail":"Not Found"})") << path;
  }
  // The /ng-rollout/<id>/ prefix is stripped (as NeMo Gym's servers do).
  auto row = tool_row();
  auto params = row.at("responses_create_params").as_object();
  auto prefixed = server.post("/ng-rollout/abc-1/v1/responses", params);
  EXPECT_EQ(prefixed.status, 200) << prefixed.raw_body;
  EXPECT_EQ(prefixed.cookie.rfind(std::string(kCookieName) + "=", 0), 0u);
}

TEST_F(ReplayModelServer, UnknownInputIsReplayNoMatch) {
  ReplayServer server([&](int port) { return replay_yaml(port, {weather_rollouts()}); });
  ASSERT_TRUE(server.ready());
  auto r = server.post_text("/v1/responses", R"({"input":"what is the meaning of life?"})");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body.at("detail").at("type"), "replay_no_match") << r.raw_body;
  EXPECT_TRUE(r.body.at("detail").at("message").is_string());
}

TEST_F(ReplayModelServer, ExactCheckRejectsADivergingToolOutput) {
  ReplayServer server([&](int port) { return replay_yaml(port, {weather_rollouts()}, "exact"); });
  ASSERT_TRUE(server.ready());
  auto row = tool_row();
  const auto& recorded = row.at("response").at("output").as_array();
  // Recorded tool outputs verbatim pass the exact check ...
  auto verbatim = drive(server, row.at("responses_create_params").as_object(), recorded, false);
  EXPECT_TRUE(verbatim.failure.empty()) << verbatim.failure;
  // ... their compact rendering (equal as JSON, not as text) does not.
  auto compacted = drive(server, row.at("responses_create_params").as_object(), recorded, true);
  EXPECT_EQ(compacted.turns.size(), 1u);
  ASSERT_EQ(compacted.failure.substr(0, 4), "409 ") << compacted.failure;
  auto body = json::parse(compacted.failure.substr(4));
  EXPECT_EQ(body.at("detail").at("type"), "replay_diverged");
  std::string message(body.at("detail").at("message").as_string());
  EXPECT_NE(message.find("function_call_output"), std::string::npos) << message;
}

TEST_F(ReplayModelServer, CreateParamsAreValidatedStrictly) {
  ReplayServer server([&](int port) { return replay_yaml(port, {weather_rollouts()}); });
  ASSERT_TRUE(server.ready());
  auto row = tool_row();
  auto params = row.at("responses_create_params").as_object();

  auto extra = params;
  extra["frobnicate"] = true;
  auto r = server.post("/v1/responses", extra);
  EXPECT_EQ(r.status, 422);
  ASSERT_TRUE(r.body.at("detail").is_array()) << r.raw_body;
  const auto& e = r.body.at("detail").as_array().back();
  EXPECT_EQ(e.at("type"), "extra_forbidden");
  EXPECT_EQ(e.at("loc"), (json::array{"body", "frobnicate"}));
  EXPECT_EQ(e.at("msg"), "Extra inputs are not permitted");

  auto stream = params;
  stream["stream"] = true;
  r = server.post("/v1/responses", stream);
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.raw_body, R"({"detail":[{"type":"literal_error","loc":["body","stream"],)"
                        R"("msg":"Input should be False","input":true,)"
                        R"("ctx":{"expected":"False"}}]})");

  r = server.post_text("/v1/responses", R"({"input":42})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body.at("detail").as_array().front().at("loc"),
            (json::array{"body", "input", "str"}));

  r = server.post_text("/v1/responses", R"({"model":"m"})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body.at("detail").as_array().front().at("type"), "missing");

  r = server.post_text("/v1/responses", R"({"input":)");
  EXPECT_EQ(r.status, 400);
  // The server is still fine.
  EXPECT_EQ(server.post("/v1/responses", params).status, 200);
}

TEST_F(ReplayModelServer, DuplicateInputsBindSessionsToDifferentRows) {
  auto rows = read_jsonl(data_file("mcqa", "example_rollouts.jsonl"));
  json::object a = rows.front();
  json::object b = a;
  auto& b_response = b["response"].as_object();
  b_response["id"] = "resp_duplicate";
  b_response["output"]
      .as_array()
      .front()
      .as_object()["content"]
      .as_array()
      .front()
      .as_object()["text"] = "Answer: \\boxed{Z}";
  TempDir dir;
  auto file = dir.write("dup_rollouts.jsonl", json::serialize(a) + "\n\n" + json::serialize(b) +
                                                  "\n" + R"({"_ng_failure_class":"x"})" + "\n");
  ReplayServer server([&](int port) { return replay_yaml(port, {file}); });
  ASSERT_TRUE(server.ready());
  const auto& params = a.at("responses_create_params");
  const json::value id_a = a.at("response").at("id");
  const json::value id_b = "resp_duplicate";

  auto s1 = server.post("/v1/responses", params);
  ASSERT_EQ(s1.status, 200) << s1.raw_body;
  EXPECT_EQ(s1.body.at("id"), id_a);  // fewest bindings, file order
  auto s2 = server.post("/v1/responses", params);
  ASSERT_EQ(s2.status, 200);
  EXPECT_EQ(s2.body.at("id"), id_b);  // the other row has fewer bindings
  EXPECT_NE(s1.cookie, s2.cookie);
  // A session keeps its row.
  EXPECT_EQ(server.post("/v1/responses", params, s2.cookie).body.at("id"), id_b);
  EXPECT_EQ(server.post("/v1/responses", params, s1.cookie).body.at("id"), id_a);
  EXPECT_EQ(server.post("/v1/responses", params, s2.cookie).body.at("id"), id_b);
  // A new session: both rows have one binding, file order breaks the tie.
  EXPECT_EQ(server.post("/v1/responses", params).body.at("id"), id_a);
}

TEST_F(ReplayModelServer, EmptyListDerivesRolloutsBesideTheInput) {
  auto input = data_file("mcqa", "example.jsonl").string();
  ReplayServer server([&](int port) {
    return "input_jsonl_fpath: " + yaml_quoted(input) + "\n" + replay_yaml(port, {});
  });
  ASSERT_TRUE(server.ready());
  auto example = read_jsonl(input).front();
  auto r = server.post("/v1/responses", example.at("responses_create_params"));
  EXPECT_EQ(r.status, 200) << r.raw_body;
}

TEST_F(ReplayModelServer, MissingRolloutsFileIsAStartupError) {
  TempDir dir;
  auto missing = dir.file("nope_rollouts.jsonl");
  auto r = serve_and_wait(dir, replay_yaml(0, {missing}));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(missing), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rollouts_jsonl_fpaths"), std::string::npos) << r.output;
}

TEST_F(ReplayModelServer, NoDerivableRolloutsIsAStartupError) {
  TempDir dir;
  auto input = dir.write("tasks.jsonl", "{}\n");
  auto r =
      serve_and_wait(dir, "input_jsonl_fpath: " + yaml_quoted(input) + "\n" + replay_yaml(0, {}));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rollouts_jsonl_fpaths"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tasks_rollouts.jsonl"), std::string::npos) << r.output;
}

TEST_F(ReplayModelServer, BadToolOutputCheckIsAStartupError) {
  TempDir dir;
  auto r = serve_and_wait(dir, replay_yaml(0, {weather_rollouts()}, "fuzzy"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("tool_output_check"), std::string::npos) << r.output;
}

TEST_F(ReplayModelServer, MalformedRolloutsLineIsAStartupError) {
  TempDir dir;
  auto file = dir.write("bad_rollouts.jsonl", "{\"a\":1}\n[1,2]\n");
  auto r = serve_and_wait(dir, replay_yaml(0, {file}));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(file + "' line 2"), std::string::npos) << r.output;
}
