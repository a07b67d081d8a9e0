#pragma once
// Command lines shown to a user or written into a script: words a shell reads back unchanged.
#include <string>

namespace gym::core {

// `word` in single quotes (a quote inside becomes '\'').
inline std::string shell_quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `word` as is when it is plainly safe, else shell_quoted.
inline std::string shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=/.,:@%") == std::string::npos)
    return word;
  return shell_quoted(word);
}

}  // namespace gym::core
