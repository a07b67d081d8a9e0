#pragma once
// `gym env init NAME`: a new C++ environment folder that builds and passes its tests as written
// (issue 15.3; docs/guides/adding-an-environment.md).
#include <string>
#include <vector>

namespace gym::cli {

// One file of the template: its path in the new folder and its text, both with @ENV_NAME@ and
// @ENV_CLASS@ still in them (src/cli/env_template/, embedded at build time).
struct TemplateFile {
  const char* path;
  const char* text;
};
const std::vector<TemplateFile>& environment_template();

// The upstream-style class name of an environment: its name in CamelCase + "ResourcesServer"
// (`word_count` -> `WordCountResourcesServer`); the session cookie prefix.
std::string environment_class_name(const std::string& name);

// Writes <into>/<name>/ from the template (`into` empty: the environments/ folder of the source
// tree this binary was built from). Refuses a name that is not [a-z][a-z0-9_]*, that an
// environment or preset already has, or whose folder exists: nothing is ever overwritten.
int run_env_init(const std::string& name, const std::string& into);

}  // namespace gym::cli
