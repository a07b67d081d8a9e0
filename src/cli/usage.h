#pragma once
// What `gym` says about its command line: the overrides paragraph of --help, typed flag values,
// and did-you-mean for unknown flags and misspelt verbs (issue 13.12).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gym::cli {

// The --help paragraph on `key=v`, `+key=v` and `++key=v`
// (docs/reference/configuration.md#overrides).
std::string overrides_help();

// A flag value that must be a whole number >= `min` / a finite number in [lo, hi]. CLI11 prefixes
// its message with the flag the user typed: "--limit: expects a whole number >= 0, got 'ten'".
CLI::Validator whole_number(std::int64_t min);
CLI::Validator number_between(double lo, double hi);

// The first argument that is neither a flag of the verb it belongs to, a verb, nor a value or an
// override, as a message with a did-you-mean and where to look ("gym env: unknown command
// 'strat'; did you mean 'start'? ..."); none when every argument is known. `args` excludes the
// program name; `program` is what usage lines call it.
std::optional<std::string> unknown_argument(const CLI::App& root,
                                            const std::vector<std::string>& args,
                                            const std::string& program);

}  // namespace gym::cli
