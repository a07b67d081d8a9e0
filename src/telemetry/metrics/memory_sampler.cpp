#include "telemetry/metrics/memory_sampler.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <unordered_set>

#include <spdlog/spdlog.h>

namespace gym::telemetry {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// /proc files we read are a few kB; the cap only guards against a fake or broken file.
constexpr std::size_t kMaxFileBytes = 1 << 20;

// The whole file, or nullopt when it cannot be opened or read (missing, a directory, no
// permission, or a process that exited mid-read). Plain read(2): procfs files have no size.
std::optional<std::string> read_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  while (text.size() < kMaxFileBytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

// A non-empty run of decimal digits and nothing else; nullopt on overflow.
std::optional<std::uint64_t> parse_uint(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<long> parse_pid(std::string_view s) {
  auto v = parse_uint(s);
  if (!v || *v == 0 || *v > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    return std::nullopt;  // pid_t is an int; 0 is never a process
  }
  return static_cast<long>(*v);
}

// Calls f(token) for every whitespace-separated token.
template <typename F>
void for_each_token(std::string_view s, F&& f) {
  while (true) {
    s = trim_left(s);
    if (s.empty()) return;
    std::size_t n = 0;
    while (n < s.size() && !is_space(s[n])) ++n;
    f(s.substr(0, n));
    s.remove_prefix(n);
  }
}

// The n-th (from 0) whitespace-separated token; empty when there are fewer.
std::string_view token_at(std::string_view s, std::size_t n) {
  std::string_view found;
  std::size_t i = 0;
  for_each_token(s, [&](std::string_view token) {
    if (i++ == n) found = token;
  });
  return found;
}

std::optional<std::int64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > static_cast<std::uint64_t>(kInt64Max)) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(r);
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return kInt64Max;  // both operands are non-negative here
  return r;
}

// The value of the first "<key>: <n> kB" line, in bytes (meminfo and smaps_rollup share this
// layout). nullopt when there is no such line or its number is not a valid count.
std::optional<std::int64_t> kb_field(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') {
      continue;
    }
    const auto kb = parse_uint(token_at(line.substr(key.size() + 1), 0));
    if (!kb) return std::nullopt;
    return checked_mul(*kb, 1024);
  }
  return std::nullopt;
}

std::uint64_t page_size() {
  static const std::uint64_t size = [] {
    const long s = ::sysconf(_SC_PAGESIZE);
    return s > 0 ? static_cast<std::uint64_t>(s) : std::uint64_t{4096};
  }();
  return size;
}

fs::path pid_dir(const fs::path& proc_root, long pid) { return proc_root / std::to_string(pid); }

// The union of the children files of every thread of `pid`, in thread-id order, each pid once.
std::vector<long> children_of(long pid, const fs::path& proc_root) {
  const fs::path task_dir = pid_dir(proc_root, pid) / "task";
  std::vector<long> tids;
  std::error_code ec;
  for (fs::directory_iterator it(task_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto tid = parse_pid(it->path().filename().native())) tids.push_back(*tid);
  }
  std::sort(tids.begin(), tids.end());

  std::vector<long> children;
  std::unordered_set<long> seen;
  for (long tid : tids) {
    auto text = read_file(task_dir / std::to_string(tid) / "children");
    if (!text) continue;  // the thread exited, or the file is unreadable
    for_each_token(*text, [&](std::string_view token) {
      auto child = parse_pid(token);
      if (child && seen.insert(*child).second) children.push_back(*child);
    });
  }
  return children;
}

bool process_exists(long pid, const fs::path& proc_root) {
  std::error_code ec;
  return fs::is_directory(pid_dir(proc_root, pid), ec);
}

std::chrono::steady_clock::duration checked_interval(std::chrono::duration<double> interval) {
  if (!std::isfinite(interval.count()) || interval.count() <= 0) {
    throw std::invalid_argument(
        "memory profiling: the sampling interval must be a positive number of seconds");
  }
  // A year is plenty and keeps "now + interval" far from overflowing the clock.
  const std::chrono::duration<double> cap = std::chrono::hours(24 * 365);
  return std::chrono::ceil<std::chrono::steady_clock::duration>(std::min(interval, cap));
}

}  // namespace

std::optional<HostMemory> read_host_memory(const fs::path& proc_root) {
  const auto text = read_file(proc_root / "meminfo");
  if (!text) return std::nullopt;
  const auto total = kb_field(*text, "MemTotal");
  if (!total) return std::nullopt;
  std::optional<std::int64_t> available = kb_field(*text, "MemAvailable");
  if (!available) {
    // Kernels before 3.14 have no MemAvailable; this is the estimate they suggested instead.
    const auto free = kb_field(*text, "MemFree");
    if (!free) return std::nullopt;
    available = saturating_add(saturating_add(*free, kb_field(*text, "Buffers").value_or(0)),
                               kb_field(*text, "Cached").value_or(0));
  }
  return HostMemory{*total, *available, *total - *available};
}

std::vector<long> process_tree(long root_pid, const fs::path& proc_root) {
  std::vector<long> tree;
  if (root_pid <= 0) return tree;
  std::unordered_set<long> visited;
  // An explicit stack: a garbled tree of any depth cannot exhaust the thread's stack.
  std::vector<long> pending{root_pid};
  while (!pending.empty()) {
    const long pid = pending.back();
    pending.pop_back();
    if (!visited.insert(pid).second || !process_exists(pid, proc_root)) continue;
    tree.push_back(pid);
    const std::vector<long> children = children_of(pid, proc_root);
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      if (!visited.contains(*it)) pending.push_back(*it);
    }
  }
  return tree;
}

std::optional<ProcessMemory> read_process_memory(long pid, const fs::path& proc_root) {
  const fs::path dir = pid_dir(proc_root, pid);
  // smaps_rollup needs ptrace access (another user's process) and Linux 4.14; statm needs
  // neither but has no PSS.
  if (const auto text = read_file(dir / "smaps_rollup")) {
    if (const auto rss = kb_field(*text, "Rss")) return ProcessMemory{*rss, kb_field(*text, "Pss")};
  }
  const auto text = read_file(dir / "statm");
  if (!text) return std::nullopt;
  const auto pages = parse_uint(token_at(*text, 1));  // size, resident, shared, ...
  if (!pages) return std::nullopt;
  const auto rss = checked_mul(*pages, page_size());
  if (!rss) return std::nullopt;
  return ProcessMemory{*rss, std::nullopt};
}

TreeMemory read_tree_memory(long root_pid, const fs::path& proc_root) {
  TreeMemory tree;
  std::int64_t pss = 0;
  bool every_pss = true;
  for (long pid : process_tree(root_pid, proc_root)) {
    const auto m = read_process_memory(pid, proc_root);
    if (!m) continue;  // exited since the walk
    ++tree.processes;
    tree.rss = saturating_add(tree.rss, m->rss);
    if (m->pss) {
      pss = saturating_add(pss, *m->pss);
    } else {
      every_pss = false;
    }
  }
  // An empty tree reports PSS 0, like RSS, rather than omitting it.
  if (every_pss) tree.pss = pss;
  return tree;
}

MemorySampler::MemorySampler(std::vector<MemoryTarget> targets,
                             std::chrono::duration<double> interval, fs::path proc_root)
    : targets_(std::move(targets)),
      interval_(checked_interval(interval)),
      proc_root_(std::move(proc_root)) {}

MemorySampler::~MemorySampler() { stop(); }

bool MemorySampler::available(const fs::path& proc_root) {
  std::error_code ec;
  return fs::exists(proc_root / "self", ec);
}

void MemorySampler::start() {
  std::lock_guard lock(lifecycle_mutex_);
  if (state_ != State::idle) return;
  state_ = State::running;
  take_sample();
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    spdlog::warn(
        "memory profiling: cannot start the sampler thread ({}); only the first and "
        "the final sample are taken",
        e.what());
  }
}

void MemorySampler::stop() {
  std::lock_guard lock(lifecycle_mutex_);
  const State was = state_;
  state_ = State::stopped;
  if (was != State::running) return;
  {
    std::lock_guard wake_lock(wake_mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  take_sample();
}

std::optional<MemorySample> MemorySampler::latest() const {
  std::lock_guard lock(data_mutex_);
  return latest_;
}

std::uint64_t MemorySampler::samples_taken() const {
  std::lock_guard lock(data_mutex_);
  return samples_taken_;
}

void MemorySampler::run() {
  pthread_setname_np(pthread_self(), kMemorySamplerThreadName);
  try {
    using Clock = std::chrono::steady_clock;
    auto next = Clock::now() + interval_;
    std::unique_lock lock(wake_mutex_);
    while (!wake_.wait_until(lock, next, [this] { return stop_requested_; })) {
      lock.unlock();
      take_sample();
      lock.lock();
      // Keep the cadence, but after a slow sample start over instead of sampling in a burst.
      next += interval_;
      if (const auto now = Clock::now(); next <= now) next = now + interval_;
    }
  } catch (const std::exception& e) {
    spdlog::warn("memory profiling: the sampler thread stopped: {}", e.what());
  } catch (...) {
    spdlog::warn("memory profiling: the sampler thread stopped");
  }
}

void MemorySampler::take_sample() {
  try {
    MemorySample s;
    try {
      s.host = read_host_memory(proc_root_);
      if (!s.host) spdlog::debug("memory profiling: {}/meminfo is unreadable", proc_root_.string());
    } catch (const std::exception& e) {
      spdlog::debug("memory profiling: host memory: {}", e.what());
    }
    s.targets.reserve(targets_.size());
    for (const MemoryTarget& target : targets_) {
      try {
        MemorySample::Target t;
        t.target = target;
        t.memory = read_tree_memory(target.root_pid, proc_root_);
        if (t.memory.processes == 0) {
          spdlog::debug("memory profiling: {} (pid {}): no readable process", target.server_name,
                        target.root_pid);
        }
        s.targets.push_back(std::move(t));
      } catch (const std::exception& e) {
        spdlog::debug("memory profiling: {} (pid {}): {}", target.server_name, target.root_pid,
                      e.what());
      }
    }

    std::lock_guard lock(data_mutex_);
    if (s.host) host_peak_ = std::max(host_peak_.value_or(s.host->usage), s.host->usage);
    s.host_peak = host_peak_.value_or(0);
    const auto peak = [this](const std::string& name, const char* type, std::int64_t value) {
      auto [it, inserted] = peaks_.try_emplace({name, type}, value);
      if (!inserted) it->second = std::max(it->second, value);
      return it->second;
    };
    for (MemorySample::Target& t : s.targets) {
      t.rss_peak = peak(t.target.server_name, "rss", t.memory.rss);
      if (t.memory.pss) t.pss_peak = peak(t.target.server_name, "pss", *t.memory.pss);
    }
    latest_ = std::move(s);
    ++samples_taken_;
  } catch (const std::exception& e) {
    spdlog::debug("memory profiling: sample dropped: {}", e.what());
  }
}

}  // namespace gym::telemetry
