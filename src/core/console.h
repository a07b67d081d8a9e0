#pragma once
// The terminal that several threads write to: command output on stdout, log lines on stderr, the
// servers' output pumped by the orchestrator, and one transient status line on stderr (the
// collector's progress bar) that no other line may land on. Every writer goes through here, so
// the status line is erased before a line is written and drawn again after it. Thread-safe.
#include <cstdio>
#include <string_view>

namespace gym::core::console {

// Writes `text` to `stream`, a '\n' added when missing, and flushes; the status line is erased
// before and drawn again after.
void write(std::FILE* stream, std::string_view text);
// Command output on stdout: write(stdout, text).
void print(std::string_view text);
// Progress chatter on stdout ("Head server at ...", "Computing aggregate metrics"), printf-style
// and written as formatted; nothing when quiet.
void note(const char* format, ...) __attribute__((format(printf, 1, 2)));
// `gym eval run -q`: only warnings, errors and the result are printed.
void set_quiet(bool quiet);
bool quiet();

// Draws `text` as the status line on stderr, replacing the one shown.
void show_status(std::string_view text);
// Ends the status line: `keep` leaves its last text on a line of its own, else it is erased.
void end_status(bool keep);

// Holds the terminal while its owner writes to it directly (a log sink): the status line is
// erased at construction and drawn again at destruction. Nests.
class Hold {
 public:
  Hold();
  ~Hold();
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;
};

}  // namespace gym::core::console
