// Request-body schemas: Union members (pydantic's Union[str, dict[str, Any]] as
// bunsenbench_chemistry_mcq's `choices` declares it). Error shapes checked against pydantic 2.
#include "http/schema.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace json = boost::json;
using gym::http::Schema;

TEST(SchemaUnion, FirstMemberThatValidatesWinsElseEveryMembersErrors) {
  Schema choice = Schema::union_of({{"str", Schema::of(Schema::Kind::string)},
                                    {"dict[str,any]", Schema::of(Schema::Kind::dict)}});
  Schema list = Schema::list_of(choice, true);
  json::value ok = json::parse(R"(["a", {"x": 1}])");
  EXPECT_TRUE(gym::http::validate_body(list, ok).empty());
  json::value null_list;
  EXPECT_TRUE(gym::http::validate_body(list, null_list).empty());
  json::value bad = json::parse(R"(["a", 1])");
  EXPECT_EQ(
      json::serialize(gym::http::validate_body(list, bad)),
      R"([{"type":"string_type","loc":["body",1,"str"],"msg":"Input should be a valid string","input":1},)"
      R"({"type":"dict_type","loc":["body",1,"dict[str,any]"],"msg":"Input should be a valid dictionary","input":1}])");
  // Left to right: the first member that accepts a value, with its coercion, takes it.
  Schema number_or_text = Schema::union_of(
      {{"int", Schema::of(Schema::Kind::integer)}, {"str", Schema::of(Schema::Kind::string)}});
  json::value five("5");
  EXPECT_TRUE(gym::http::validate_body(number_or_text, five).empty());
  EXPECT_EQ(five, json::value(5));
}
