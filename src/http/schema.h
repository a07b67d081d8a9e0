#pragma once
// Request-body schemas validated with the lax coercions of upstream's request validation
// (pydantic via FastAPI); violations become the `{"detail": [...]}` 422 body (runtime.md 4.2).
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gym::http {

struct SchemaField;

struct Schema {
  enum class Kind { any, integer, number, string, boolean, list, dict, object, literal };
  Kind kind = Kind::any;
  bool nullable = false;                // Optional[...]: null accepted
  std::vector<SchemaField> fields;      // object: declared fields, in order
  bool forbid_extra = false;            // object: unknown keys -> extra_forbidden
  std::shared_ptr<const Schema> items;  // list elements / dict values (null = any)
  std::vector<std::string> literals;    // literal: allowed string values

  static Schema of(Kind k, bool nullable = false);
  static Schema list_of(Schema item, bool nullable = false);
  static Schema literal_of(std::vector<std::string> values, bool nullable = false);
  static Schema object_of(std::vector<SchemaField> fields, bool forbid_extra = false);
};

struct SchemaField {
  std::string name;
  Schema schema;
  bool required = true;
};

// Validates `v` against `schema`, coercing lax values in place ("5" -> 5 for an int field).
// Returns one detail entry per problem (empty when valid); `loc` starts with "body".
boost::json::array validate_body(const Schema& schema, boost::json::value& v);

}  // namespace gym::http
