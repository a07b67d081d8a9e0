#pragma once
// An npm package for the tests (test tooling only: the OpenTelemetry decoder, the official
// OpenAI client), installed under the build dir on first use. An exclusive file lock keeps
// parallel tests from installing the same folder twice.
#include <string>

namespace gym::test {

struct NpmPackage {
  std::string folder;   // under <build>/tests/integration, e.g. "openai_node"
  std::string spec;     // what `npm install` gets, e.g. "openai@6" (several: space-separated)
  std::string present;  // a file under node_modules that exists once installed
};

// The node_modules dir holding `package`, installing it when missing. Empty with `*why` set when
// npm is missing or the install failed.
std::string npm_install(const NpmPackage& package, std::string* why);

// Node.js as found at configure time; empty with `*why` set when it was not found.
std::string node_binary(std::string* why);

}  // namespace gym::test
