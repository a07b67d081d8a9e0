// JSONL input rows of `gym eval run`: any input file is read line by line (bounded line length)
// and its rows checked and expanded, giving rows or a std::runtime_error / ConfigError naming
// the line, never a crash. The file lives in memory (memfd), read through its /proc path.
#include "core/config.h"
#include "core/json_text.h"
#include "rollouts/options.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>
#include <boost/system/system_error.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
namespace rollouts = gym::rollouts;

constexpr std::size_t kMaxLineBytes = 4096;

// One in-memory file rewritten for each input.
struct MemoryFile {
  MemoryFile() : fd(::memfd_create("fuzz_input_rows", 0)) {
    if (fd < 0) std::abort();
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  void write(const std::uint8_t* data, std::size_t size) const {
    if (::ftruncate(fd, 0) != 0) std::abort();
    if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  }
  int fd;
  std::string path;
};

std::vector<rollouts::CollectionOptions> option_variants() {
  rollouts::CollectionOptions with_agent;
  with_agent.agent_name = "simple_agent";
  with_agent.num_repeats.fixed = 2;
  with_agent.num_repeats_add_seed = true;
  with_agent.create_params_overrides = {{"temperature", 0.5}, {"max_output_tokens", 64}};

  rollouts::CollectionOptions per_agent;
  per_agent.num_repeats.per_agent = {{"simple_agent", 1}, {"math_agent", 3}};
  per_agent.num_repeats.fallback = 2;
  return {with_agent, per_agent};
}

void read_and_expand(const MemoryFile& file, rollouts::CollectionOptions options) {
  static const std::vector<std::string> agents = {"simple_agent", "math_agent"};
  options.max_row_bytes = kMaxLineBytes;
  for (const auto& row : rollouts::expand_rows(file.path, options, agents)) {
    (void)rollouts::key_of(row);  // every expanded row has its indices
    (void)rollouts::agent_of(row);
    (void)gym::core::render_json(row);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const MemoryFile file;
  static const auto variants = option_variants();
  file.write(data, size);
  for (const auto& options : variants) {
    try {
      read_and_expand(file, options);
    } catch (const boost::system::system_error&) {
      throw;  // a JSON accessor on the wrong kind: a bug, not a user error
    } catch (const std::runtime_error&) {
      // A bad line or row: named in the message, nothing dispatched.
    }
  }
  return 0;
}
