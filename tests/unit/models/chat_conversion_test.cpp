// Responses <-> Chat Completions as upstream's converter does it (docs/reference/model-servers.md),
// table driven: each case is a Responses request (or a chat answer) and the exact conversion.
#include "models/chat_conversion.h"
#include "models/vllm_model.h"

#include "core/json_text.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace json = boost::json;
using gym::models::ConversionError;
using gym::models::ConversionOptions;

namespace {

json::object obj(std::string_view text) { return gym::core::parse_json(text).as_object(); }

// IDs are random: compared by their prefix only.
json::value without_ids(json::value v) {
  if (auto* o = v.if_object()) {
    if (auto* id = o->if_contains("id"); id && id->is_string()) {
      std::string s(id->get_string());
      auto us = s.find('_');
      if (us != std::string::npos && s.size() - us - 1 == 32) *id = s.substr(0, us) + "_*";
    }
    for (auto& [k, child] : *o) child = without_ids(child);
  } else if (auto* a = v.if_array()) {
    for (auto& child : *a) child = without_ids(child);
  }
  return v;
}

struct RequestCase {
  const char* name;
  const char* responses;  // create params
  const char* chat;       // expected chat create params
  ConversionOptions options{};
};

class RequestConversion : public ::testing::TestWithParam<RequestCase> {};

TEST_P(RequestConversion, MatchesUpstream) {
  const auto& c = GetParam();
  auto got = gym::models::responses_to_chat_params(obj(c.responses), c.options);
  EXPECT_EQ(gym::core::render_json(got), gym::core::render_json(obj(c.chat))) << c.name;
}

const RequestCase kRequests[] = {
    {"string input becomes a user message with a text part", R"({"input":"hi"})",
     R"({"messages":[{"content":[{"type":"text","text":"hi"}],"role":"user"}]})"},
    {"roles and string content pass through",
     R"({"input":[{"role":"system","content":"be brief"},{"role":"user","content":"q"},
        {"role":"developer","content":"d","type":"message"}]})",
     R"({"messages":[{"content":"be brief","role":"system"},{"content":"q","role":"user"},
        {"content":"d","role":"developer"}]})"},
    {"multi-part content: text, image (detail defaults to auto), video",
     R"({"input":[{"role":"user","content":[{"type":"input_text","text":"look"},
        {"type":"input_image","image_url":"data:x"},{"type":"input_video","video_url":"v.mp4"}]}]})",
     R"({"messages":[{"content":[{"type":"text","text":"look"},
        {"type":"image_url","image_url":{"url":"data:x","detail":"auto"}},
        {"type":"video_url","video_url":{"url":"v.mp4"}}],"role":"user"}]})"},
    {"a tool loop: reasoning, message and calls form one assistant turn",
     R"({"input":[{"role":"user","content":"weather?"},
        {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"need tool"}]},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me check."}]},
        {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"SF\"}"},
        {"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":\"LA\"}"},
        {"type":"function_call_output","call_id":"c1","output":"sunny"},
        {"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"rain"}]},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}],
       "tools":[{"type":"function","name":"get_weather","description":"d","parameters":{"type":"object"},"strict":true}],
       "parallel_tool_calls":true,"tool_choice":"auto"})",
     R"({"messages":[{"content":"weather?","role":"user"},
        {"content":"<think>need tool</think>Let me check.","role":"assistant","tool_calls":[
          {"id":"c1","function":{"arguments":"{\"city\":\"SF\"}","name":"get_weather"},"type":"function"},
          {"id":"c2","function":{"arguments":"{\"city\":\"LA\"}","name":"get_weather"},"type":"function"}]},
        {"content":"sunny","role":"tool","tool_call_id":"c1"},
        {"content":[{"type":"text","text":"rain"}],"role":"tool","tool_call_id":"c2"},
        {"content":"Done.","role":"assistant"}],
       "parallel_tool_calls":true,"tool_choice":"auto",
       "tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}]})"},
    {"instructions fold with the leading system and developer messages",
     R"({"instructions":"rules","input":[{"role":"system","content":"s"},{"role":"developer","content":[{"type":"input_text","text":"d"}]},{"role":"user","content":"u"}]})",
     R"({"messages":[{"content":"rules\n\ns\n\nd","role":"system"},{"content":"u","role":"user"}]})"},
    {"sampling fields: max_output_tokens, reasoning effort, the same-name ones; no-chat fields "
     "dropped",
     R"({"input":"x","max_output_tokens":64,"reasoning":{"effort":"low","summary":null},"temperature":0.5,
        "top_p":0.9,"user":"u","metadata":{"k":"v"},"store":false,"service_tier":"auto","top_logprobs":2,
        "truncation":"auto","text":{"format":{"type":"text"}},"max_tool_calls":3,"background":false,
        "previous_response_id":null,"include":null,"prompt":null,"model":"m"})",
     R"({"messages":[{"content":[{"type":"text","text":"x"}],"role":"user"}],"model":"m","metadata":{"k":"v"},
        "service_tier":"auto","store":false,"temperature":0.5,"top_logprobs":2,"top_p":0.9,"user":"u",
        "max_tokens":64,"reasoning_effort":"low"})"},
    {"no tools: tool_choice and parallel_tool_calls are not sent",
     R"({"input":"x","tools":[],"tool_choice":"auto","parallel_tool_calls":false})",
     R"({"messages":[{"content":[{"type":"text","text":"x"}],"role":"user"}]})"},
    {"a forced function takes Chat Completions' nested form",
     R"({"input":"x","tools":[{"type":"function","name":"f","parameters":{}}],"tool_choice":{"type":"function","name":"f"}})",
     R"({"messages":[{"content":[{"type":"text","text":"x"}],"role":"user"}],"tool_choice":{"type":"function","function":{"name":"f"}},
        "tools":[{"type":"function","function":{"name":"f","parameters":{}}}]})"},
    {"token ids of an output item travel on the assistant message",
     R"({"input":[{"role":"user","content":"q"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}],
        "prompt_token_ids":[1,2],"generation_token_ids":[3],"generation_log_probs":[-0.5]}]})",
     R"({"messages":[{"content":"q","role":"user"},{"content":"a","role":"assistant","prompt_token_ids":[1,2],
        "generation_token_ids":[3],"generation_log_probs":[-0.5]}]})",
     ConversionOptions{true, true}},
    {"without token-id information they are dropped",
     R"({"input":[{"role":"user","content":"q"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}],
        "prompt_token_ids":[1,2],"generation_token_ids":[3],"generation_log_probs":[-0.5]}]})",
     R"({"messages":[{"content":"q","role":"user"},{"content":"a","role":"assistant"}]})"},
    {"a chat-shaped assistant turn with tool_calls and a tool message",
     R"({"input":[{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"t","content":"ok"}]})",
     R"({"messages":[{"content":null,"role":"assistant","tool_calls":[{"id":"t","function":{"arguments":"{}","name":"f"},"type":"function"}]},
        {"content":"ok","role":"tool","tool_call_id":"t"}]})"},
};

INSTANTIATE_TEST_SUITE_P(Table, RequestConversion, ::testing::ValuesIn(kRequests));

TEST(RequestConversionErrors, SayWhatCannotBeConverted) {
  auto error_of = [](const char* params) -> std::string {
    try {
      gym::models::responses_to_chat_params(obj(params), {});
    } catch (const ConversionError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"input":[{"type":"mcp_call","id":"x"}]})")
                .find("'mcp_call' has no Chat Completions form"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input":"x","tool_choice":"required"})").find("at least one tool"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input":[{"role":"user","content":[{"type":"input_audio"}]}]})")
                .find("input_audio"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          R"({"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"u"}]}]})")
          .find("only text"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"input":[{"role":"wizard","content":"x"}]})")
                .find("unknown message role 'wizard'"),
            std::string::npos);
  // partial token ids are refused, as upstream does
  try {
    gym::models::responses_to_chat_params(
        obj(R"({"input":[{"type":"message","role":"assistant","content":"a","prompt_token_ids":[1]}]})"),
        {true, true});
    ADD_FAILURE() << "partial token ids accepted";
  } catch (const ConversionError& e) {
    EXPECT_NE(std::string(e.what()).find("missing generation_token_ids"), std::string::npos);
  }
}

struct AnswerCase {
  const char* name;
  const char* message;  // chat assistant message
  const char* items;    // expected output items (ids as <prefix>_*)
  ConversionOptions options{};
};

class AnswerConversion : public ::testing::TestWithParam<AnswerCase> {};

TEST_P(AnswerConversion, MatchesUpstream) {
  const auto& c = GetParam();
  auto got = gym::models::assistant_message_to_items(obj(c.message), c.options);
  EXPECT_EQ(gym::core::render_json(without_ids(got)),
            gym::core::render_json(gym::core::parse_json(c.items)))
      << c.name;
}

const AnswerCase kAnswers[] = {
    {"text", R"({"role":"assistant","content":"hi"})",
     R"([{"id":"msg_*","content":[{"annotations":[],"text":"hi","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message"}])"},
    {"think text becomes a reasoning item with a parser",
     R"({"role":"assistant","content":"<think>a</think>b<think>c</think>"})",
     R"([{"id":"rs_*","summary":[{"text":"a","type":"summary_text"},{"text":"c","type":"summary_text"}],"type":"reasoning","encrypted_content":null,"status":"completed"},
        {"id":"msg_*","content":[{"annotations":[],"text":"b","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message"}])"},
    {"without a parser the think text stays",
     R"({"role":"assistant","content":"<think>a</think>b"})",
     R"([{"id":"msg_*","content":[{"annotations":[],"text":"<think>a</think>b","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message"}])",
     ConversionOptions{false, false}},
    {"tool calls only: no empty message",
     R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]})",
     R"([{"arguments":"{\"a\":1}","call_id":"c1","name":"f","type":"function_call","id":"c1","status":"completed"}])"},
    {"nothing at all: one empty message", R"({"role":"assistant","content":null})",
     R"([{"id":"msg_*","content":[{"annotations":[],"text":"","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message"}])"},
    {"a refusal is a refusal part", R"({"role":"assistant","content":null,"refusal":"no"})",
     R"([{"id":"msg_*","content":[{"refusal":"no","type":"refusal"}],"role":"assistant","status":"completed","type":"message"}])"},
    {"token ids go on the last item",
     R"({"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],
        "prompt_token_ids":[1],"generation_token_ids":[2,3],"generation_log_probs":[-1.0,-2.0]})",
     R"([{"id":"msg_*","content":[{"annotations":[],"text":"x","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message"},
        {"arguments":"{}","call_id":"c","name":"f","type":"function_call","id":"c","status":"completed",
         "prompt_token_ids":[1],"generation_token_ids":[2,3],"generation_log_probs":[-1.0,-2.0]}])",
     ConversionOptions{true, true}},
};

INSTANTIATE_TEST_SUITE_P(Table, AnswerConversion, ::testing::ValuesIn(kAnswers));

TEST(ChatCompletionToResponse, FinishReasonUsageAndEcho) {
  auto params = obj(R"({"input":"x","model":"served","temperature":0.3,"max_output_tokens":5})");
  auto completion =
      obj(R"({"id":"c","created":1700000001,"choices":[{"index":0,"finish_reason":"length",
      "message":{"role":"assistant","content":"par"}}],
      "usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":13,
               "prompt_tokens_details":{"cached_tokens":3},"reasoning_output_tokens":2}})");
  auto r = gym::models::chat_completion_to_response(params, completion, {});
  EXPECT_EQ(r.at("status"), "incomplete");
  EXPECT_EQ(r.at("incomplete_details"), (json::object{{"reason", "max_output_tokens"}}));
  EXPECT_EQ(r.at("model"), "served");
  EXPECT_EQ(r.at("created_at").as_double(), 1700000001.0);
  EXPECT_EQ(r.at("temperature").as_double(), 0.3);
  EXPECT_EQ(r.at("tool_choice"), "auto");
  EXPECT_EQ(r.at("parallel_tool_calls"), true);
  EXPECT_EQ(gym::core::render_json(r.at("usage")),
            R"({"input_tokens":7,"input_tokens_details":{"cached_tokens":3},"output_tokens":5,)"
            R"("output_tokens_details":{"reasoning_tokens":2},"total_tokens":13})");
  completion.at("choices").as_array()[0].as_object()["finish_reason"] = "content_filter";
  r = gym::models::chat_completion_to_response(params, completion, {});
  EXPECT_EQ(r.at("incomplete_details"), (json::object{{"reason", "content_filter"}}));
  completion.at("choices").as_array()[0].as_object()["finish_reason"] = "stop";
  completion.erase("usage");
  r = gym::models::chat_completion_to_response(params, completion, {});
  EXPECT_EQ(r.at("status"), "completed");
  EXPECT_TRUE(r.at("incomplete_details").is_null());
  EXPECT_TRUE(r.at("usage").is_null());
}

TEST(ThinkTags, SplitAndWrapLikePythonsRegex) {
  auto s = gym::models::split_think_tags("a<think>x</think>b<think>unclosed");
  EXPECT_EQ(s.reasoning, std::vector<std::string>{"x"});
  EXPECT_EQ(s.rest, "ab<think>unclosed");
  EXPECT_EQ(gym::models::wrap_in_think_tags({"a", "", "b"}), "<think>a</think><think>b</think>");
}

TEST(VllmChatBody, PreprocessesAsUpstream) {
  gym::models::VllmModelConfig c;
  c.model = "served";
  c.return_token_id_information = true;
  c.replace_developer_role_with_system = true;
  c.chat_template_kwargs = obj(R"({"enable_thinking":true})");
  c.extra_body = obj(R"({"top_k":5,"temperature":1.0})");
  c.sampling_overrides = obj(R"({"temperature":0.6})");
  auto body = gym::models::vllm_chat_body(c, obj(R"({"messages":[{"role":"developer","content":"d"},
                            {"role":"assistant","content":"<think>r</think>answer"}],
                "metadata":{"chat_template_kwargs":"{\"x\":1}","extra_body":"{\"min_p\":0.1}"},
                "temperature":0.2,"top_logprobs":null})"));
  EXPECT_EQ(body.at("model"), "served");
  EXPECT_EQ(body.at("messages").as_array()[0].at("role"), "system");
  const auto& assistant = body.at("messages").as_array()[1].as_object();
  EXPECT_EQ(assistant.at("content"), "answer");
  EXPECT_EQ(assistant.at("reasoning_content"), "r");
  EXPECT_EQ(gym::core::render_json(body.at("chat_template_kwargs")),
            R"({"enable_thinking":true,"x":1})");
  EXPECT_EQ(body.at("top_k").as_int64(), 5);
  EXPECT_EQ(body.at("min_p").as_double(), 0.1);
  EXPECT_EQ(body.at("temperature").as_double(), 0.6);  // pinned over request and extra_body
  EXPECT_EQ(body.at("logprobs"), true);
  EXPECT_EQ(body.at("top_logprobs").as_int64(), 0);
  EXPECT_EQ(body.at("return_tokens_as_token_ids"), true);
  EXPECT_FALSE(body.contains("return_token_ids"));
}

TEST(EndpointForSession, StickyAndSpread) {
  std::vector<int> per_url(3);
  for (int i = 0; i < 3000; ++i) {
    const std::string session = "session-" + std::to_string(i);
    const auto at = gym::models::endpoint_for_session(session, 3);
    EXPECT_EQ(at, gym::models::endpoint_for_session(session, 3));
    ++per_url.at(at);
  }
  for (int n : per_url) EXPECT_GT(n, 850) << "sessions are not spread evenly";
  EXPECT_EQ(gym::models::endpoint_for_session("x", 1), 0u);
}

}  // namespace
