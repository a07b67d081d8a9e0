#include "core/console.h"

#include <atomic>
#include <cstdarg>
#include <mutex>
#include <string>
#include <vector>

namespace gym::core::console {

namespace {

// One lock for every writer: the pump, the collection and the log sink run on different threads.
std::recursive_mutex mu;
std::string status;  // the status line's text while shown
bool shown = false;
int holds = 0;  // nesting depth of Hold
std::atomic<bool> quiet_output{false};

void erase_status() {
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

void draw_status() {
  std::fputs(status.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace

Hold::Hold() {
  mu.lock();
  if (holds++ == 0 && shown) erase_status();
}

Hold::~Hold() {
  if (--holds == 0 && shown) draw_status();
  mu.unlock();
}

void write(std::FILE* stream, std::string_view text) {
  Hold hold;
  std::fwrite(text.data(), 1, text.size(), stream);
  if (!text.ends_with('\n')) std::fputc('\n', stream);
  std::fflush(stream);
}

void print(std::string_view text) { write(stdout, text); }

void note(const char* format, ...) {
  if (quiet()) return;
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::vector<char> text(static_cast<std::size_t>(n > 0 ? n : 0) + 1);
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  Hold hold;
  std::fputs(text.data(), stdout);
  std::fflush(stdout);
}

void set_quiet(bool quiet) { quiet_output = quiet; }
bool quiet() { return quiet_output; }

void show_status(std::string_view text) {
  std::lock_guard lock(mu);
  status.assign(text);
  shown = true;
  if (holds > 0) return;  // drawn when the hold ends
  erase_status();
  draw_status();
}

void end_status(bool keep) {
  std::lock_guard lock(mu);
  if (!shown) return;
  shown = false;
  if (holds > 0) return;
  std::fputs(keep ? "\n" : "\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace gym::core::console
