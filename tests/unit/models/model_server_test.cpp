// Strict create-params validation of the model servers' POST /v1/responses
// (docs/design/wire-compatibility.md#responses-api-shapes).
#include "servers/model_server.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace json = boost::json;
using gym::servers::validate_model_create_params;

namespace {

json::array errors_of(std::string_view body) {
  json::value v = json::parse(body);
  return validate_model_create_params(v);
}

std::string loc_of(const json::value& error) { return json::serialize(error.at("loc")); }

}  // namespace

TEST(ModelCreateParams, AcceptsStringAndListInputs) {
  EXPECT_TRUE(errors_of(R"({"input":"hi"})").empty());
  EXPECT_TRUE(errors_of(R"({"input":[{"role":"user","content":"hi"}],"tools":[],
                            "parallel_tool_calls":true,"stream":false,"user":null})")
                  .empty());
  EXPECT_TRUE(errors_of(R"({"input":"hi","stream":null})").empty());
}

TEST(ModelCreateParams, CoercesLaxValuesInPlace) {
  json::value v = json::parse(R"({"input":"hi","max_output_tokens":"5","temperature":"0.5"})");
  EXPECT_TRUE(validate_model_create_params(v).empty());
  EXPECT_EQ(v.at("max_output_tokens"), json::value(5));
  EXPECT_EQ(v.at("temperature"), json::value(0.5));
}

TEST(ModelCreateParams, UnknownKeysAreForbiddenAndReportedLast) {
  auto errors = errors_of(R"({"frobnicate":1,"input":"hi","temperature":"warm"})");
  ASSERT_EQ(errors.size(), 2u) << json::serialize(errors);
  EXPECT_EQ(errors[0].at("type"), "float_parsing");
  EXPECT_EQ(errors[1].at("type"), "extra_forbidden");
  EXPECT_EQ(loc_of(errors[1]), R"(["body","frobnicate"])");
  EXPECT_EQ(errors[1].at("msg"), "Extra inputs are not permitted");
  EXPECT_EQ(errors[1].at("input"), json::value(1));
}

TEST(ModelCreateParams, StreamingIsRejected) {
  auto errors = errors_of(R"({"input":"hi","stream":true})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(json::serialize(errors[0]),
            R"({"type":"literal_error","loc":["body","stream"],"msg":"Input should be False",)"
            R"("input":true,"ctx":{"expected":"False"}})");
}

TEST(ModelCreateParams, InputIsRequired) {
  auto errors = errors_of(R"({"model":"m"})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].at("type"), "missing");
  EXPECT_EQ(loc_of(errors[0]), R"(["body","input"])");
}

TEST(ModelCreateParams, WrongInputTypeReportsBothUnionBranches) {
  auto errors = errors_of(R"({"temperature":"x","input":5,"background":"maybe"})");
  ASSERT_EQ(errors.size(), 4u) << json::serialize(errors);
  // Declared field order: background, input, ..., temperature.
  EXPECT_EQ(loc_of(errors[0]), R"(["body","background"])");
  EXPECT_EQ(errors[1].at("type"), "string_type");
  EXPECT_EQ(loc_of(errors[1]), R"(["body","input","str"])");
  EXPECT_EQ(errors[2].at("type"), "list_type");
  EXPECT_EQ(errors[2].at("loc").as_array().size(), 3u);
  EXPECT_TRUE(errors[2].at("loc").as_array()[2].as_string().starts_with("list[union["));
  EXPECT_EQ(errors[2].at("input"), json::value(5));
  EXPECT_EQ(loc_of(errors[3]), R"(["body","temperature"])");
}

TEST(ModelCreateParams, NonObjectInputItemsAreRejected) {
  auto errors = errors_of(R"({"input":[{"role":"user","content":"a"},7]})");
  ASSERT_GT(errors.size(), 1u);
  EXPECT_EQ(errors[0].at("type"), "string_type");
  EXPECT_EQ(errors[1].at("type"), "model_type");
  EXPECT_EQ(errors[1].at("loc").as_array()[3], json::value(1));
}

TEST(ModelCreateParams, NonObjectBodyIsRejected) {
  auto errors = errors_of("[1]");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].at("type"), "model_attributes_type");
}
