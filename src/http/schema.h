#pragma once
// Request-body schemas validated with the lax coercions of upstream's request validation (pydantic
// via FastAPI); violations become the `{"detail": [...]}` 422 body
// (docs/reference/http-server.md#statuses-and-bodies).
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gym::http {

struct SchemaField;
struct SchemaMember;

struct Schema {
  enum class Kind { any, integer, number, string, boolean, list, dict, object, literal, union_of };
  Kind kind = Kind::any;
  bool nullable = false;                // Optional[...]: null accepted
  std::vector<SchemaField> fields;      // object: declared fields, in order
  bool forbid_extra = false;            // object: unknown keys -> extra_forbidden
  std::shared_ptr<const Schema> items;  // list elements / dict values (null = any)
  std::vector<std::string> literals;    // literal: allowed string values
  std::vector<SchemaMember> members;    // union_of: the alternatives, tried in order

  static Schema of(Kind k, bool nullable = false);
  static Schema list_of(Schema item, bool nullable = false);
  static Schema literal_of(std::vector<std::string> values, bool nullable = false);
  static Schema object_of(std::vector<SchemaField> fields, bool forbid_extra = false);
  // A Union[...]: the first member that validates takes the value (with its coercions); when
  // none does, every member's errors are reported, each `loc` ending in the member's tag, as
  // pydantic names it ("str", "dict[str,any]"). That is pydantic's left_to_right union mode; it
  // equals its default (smart) mode when no JSON value fits two members, as with str and dict.
  static Schema union_of(std::vector<SchemaMember> members, bool nullable = false);
};

struct SchemaField {
  std::string name;
  Schema schema;
  bool required = true;
};

struct SchemaMember {
  std::string tag;  // pydantic's name of the member type, the last element of an error's loc
  Schema schema;
};

// Validates `v` against `schema`, coercing lax values in place ("5" -> 5 for an int field).
// Returns one detail entry per problem (empty when valid); `loc` starts with "body".
boost::json::array validate_body(const Schema& schema, boost::json::value& v);

}  // namespace gym::http
