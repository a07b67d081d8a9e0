// vllm_model's on-policy check (models/token_contiguity.h): a turn's prompt ids must start with
// the previous turn's prompt ids + generation ids, and its log lines are rate-limited.
#include "models/token_contiguity.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace gym::models {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::array messages(std::string_view text) { return json::parse(text).as_array(); }

TEST(TokenContiguity, APromptThatExtendsThePreviousTurnPasses) {
  auto history = messages(R"([{"role":"user","content":"q"},
      {"role":"assistant","content":"a","prompt_token_ids":[1,2],"generation_token_ids":[3,4],
       "generation_log_probs":[-0.1,-0.2]},
      {"role":"tool","content":"r","tool_call_id":"c"}])");
  EXPECT_FALSE(find_token_contiguity_break(history, json::parse("[1,2,3,4,5,6]")));
  EXPECT_FALSE(find_token_contiguity_break(history, json::parse("[1,2,3,4]")));  // exactly
}

TEST(TokenContiguity, NothingToCheckOnAFirstTurn) {
  auto history = messages(R"([{"role":"user","content":"q"},{"role":"assistant","content":"a"}])");
  EXPECT_FALSE(find_token_contiguity_break(history, json::parse("[9]")));
  EXPECT_FALSE(find_token_contiguity_break({}, json::parse("[9]")));
}

TEST(TokenContiguity, ABreakInTheGeneratedTokensNamesIndexAndValues) {
  // The reasoning the model generated (here 7, 8) is missing from the next prompt.
  auto history = messages(R"([{"role":"user","content":"q"},
      {"role":"assistant","content":"a","prompt_token_ids":[1,2],"generation_token_ids":[7,8,3],
       "generation_log_probs":[-1,-1,-1]},
      {"role":"user","content":"more"}])");
  auto found = find_token_contiguity_break(history, json::parse("[1,2,3,9,9]"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->message_index, 1u);
  EXPECT_EQ(found->token_index, 2u);
  EXPECT_NE(found->description.find("prompt_token_ids[2] is 3"), std::string::npos)
      << found->description;
  EXPECT_NE(found->description.find("generation_token_ids[0] is 7"), std::string::npos)
      << found->description;
  EXPECT_NE(found->description.find("reasoning"), std::string::npos) << found->description;
}

TEST(TokenContiguity, ABreakInThePreviousPromptIsNamedAsSuch) {
  auto history = messages(R"([{"role":"assistant","content":"a","prompt_token_ids":[1,2,3],
      "generation_token_ids":[4],"generation_log_probs":[-1]}])");
  auto found = find_token_contiguity_break(history, json::parse("[1,5,3,4]"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->token_index, 1u);
  EXPECT_NE(found->description.find("previous turn's prompt_token_ids[1] is 2"), std::string::npos)
      << found->description;
}

TEST(TokenContiguity, OnlyTheLastAssistantMessageWithTokenIdsCounts) {
  // An earlier turn's ids no longer matter; a later assistant message without ids is skipped.
  auto history = messages(R"([
      {"role":"assistant","content":"a","prompt_token_ids":[100],"generation_token_ids":[101],
       "generation_log_probs":[-1]},
      {"role":"assistant","content":"b","prompt_token_ids":[1,2],"generation_token_ids":[3],
       "generation_log_probs":[-1]},
      {"role":"assistant","content":"c"},
      {"role":"user","content":"prompt_token_ids are not on users","prompt_token_ids":[5],
       "generation_token_ids":[5]}])");
  EXPECT_FALSE(find_token_contiguity_break(history, json::parse("[1,2,3,0]")));
  auto found = find_token_contiguity_break(history, json::parse("[100,101]"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->message_index, 1u);
  EXPECT_EQ(found->token_index, 0u);
}

TEST(TokenContiguity, AShorterPromptBreaksWhereItEnds) {
  auto history = messages(R"([{"role":"assistant","content":"a","prompt_token_ids":[1,2],
      "generation_token_ids":[3,4],"generation_log_probs":[-1,-1]}])");
  auto found = find_token_contiguity_break(history, json::parse("[1,2,3]"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->token_index, 3u);
  EXPECT_NE(found->description.find("has 3 tokens, fewer than the 4"), std::string::npos)
      << found->description;
}

TEST(TokenContiguity, IdsThatAreNotIntegersBreak) {
  auto history = messages(R"([{"role":"assistant","content":"a","prompt_token_ids":[1,"2"],
      "generation_token_ids":[3],"generation_log_probs":[-1]}])");
  auto found = find_token_contiguity_break(history, json::parse("[1,2,3]"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->token_index, 1u);
  EXPECT_TRUE(find_token_contiguity_break(history, json::parse(R"("1,2,3")")));
  // The same number as int64 and as uint64 is the same token.
  json::array prompt{std::uint64_t{1}, std::int64_t{2}, std::uint64_t{3}};
  auto uint_history = messages(R"([{"role":"assistant","prompt_token_ids":[1,2],
      "generation_token_ids":[3],"generation_log_probs":[-1]}])");
  EXPECT_FALSE(find_token_contiguity_break(uint_history, prompt));
}

TEST(LogRateLimit, OneLinePerIntervalThenTheCountOfTheHeldBackOnes) {
  LogRateLimit limit(10s);
  const auto t0 = LogRateLimit::Clock::time_point{} + 1h;
  EXPECT_EQ(limit.admit(t0), std::optional<std::uint64_t>(0));
  EXPECT_FALSE(limit.admit(t0 + 1s));
  EXPECT_FALSE(limit.admit(t0 + 9s));
  EXPECT_EQ(limit.admit(t0 + 10s), std::optional<std::uint64_t>(2));
  EXPECT_FALSE(limit.admit(t0 + 19s));
  EXPECT_EQ(limit.admit(t0 + 30s), std::optional<std::uint64_t>(1));
  EXPECT_EQ(limit.admit(t0 + 45s), std::optional<std::uint64_t>(0));
}

}  // namespace
}  // namespace gym::models
