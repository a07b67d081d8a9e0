// The error of every user-caused config problem: a header of its own so that the parsers config
// uses (yaml_json) can throw it without including config itself.
#pragma once

#include <stdexcept>

namespace gym::core {

// Every user-caused config problem. what() is the whole message: the file (when known), the
// dotted key, and what to do about it.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gym::core
