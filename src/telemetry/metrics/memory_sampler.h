#pragma once
// The memory profiling sampler (docs/guides/memory-profiling.md): host memory from /proc/meminfo
// and, per spawned server, the RSS and PSS of the server's whole process tree (its multi-worker
// supervisor and workers are descendants). It produces plain data only; the memory gauges read
// latest() and export exactly its points.
//
// The readers are pure functions over a proc root ("/proc" in production, a fake tree in
// tests). They never throw on bad input: an unreadable or garbled file counts as absent.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gym::telemetry {

// Set by the orchestrator in the environment of a server it starts on another node (issue 16),
// where it cannot read the server's /proc: that server samples its own process tree and its
// node's memory and exports the same gauges itself (memory_profiling settings as everywhere).
inline constexpr char kSampleOwnMemoryVariable[] = "GYM_SAMPLE_OWN_MEMORY";

// The OS name of the sampler thread. The intended name is `gym-memory-profiler`; Linux keeps at
// most 15 characters of a thread name, so this is its first 15.
inline constexpr char kMemorySamplerThreadName[] = "gym-memory-prof";

// One spawned server instance: its root pid is the process the orchestrator spawned directly.
struct MemoryTarget {
  std::string server_name;
  std::string server_type;
  long root_pid = 0;
};

// Totals over one process tree, in bytes. `pss` is absent when a counted process had no PSS
// (statm fallback); a tree with no readable process is all zeros, PSS included.
struct TreeMemory {
  std::int64_t rss = 0;
  std::optional<std::int64_t> pss;
  std::int64_t processes = 0;
};

// Bytes; usage = total - available.
struct HostMemory {
  std::int64_t total = 0;
  std::int64_t available = 0;
  std::int64_t usage = 0;
};

// One process, in bytes; `pss` is absent when it came from statm.
struct ProcessMemory {
  std::int64_t rss = 0;
  std::optional<std::int64_t> pss;
};

struct MemorySample {
  std::optional<HostMemory> host;  // nullopt if /proc/meminfo was unreadable
  std::int64_t host_peak = 0;      // max host usage over the samples since start
  struct Target {
    MemoryTarget target;
    TreeMemory memory;
    std::int64_t rss_peak = 0;             // peak per (server name, "rss"), this sample included
    std::optional<std::int64_t> pss_peak;  // peak per (server name, "pss"); only if memory.pss
  };
  // Config order. A target whose step failed unexpectedly (an exception, logged at debug) is
  // left out of this sample rather than reported with made-up values.
  std::vector<Target> targets;
};

// MemTotal and MemAvailable (MemFree + Buffers + Cached when that line is missing), kB × 1024.
// nullopt when the file is unreadable or lacks MemTotal (or MemFree, for the fallback).
std::optional<HostMemory> read_host_memory(const std::filesystem::path& proc_root = "/proc");

// The process tree of `root_pid`, depth-first, root first. Children of a pid are the union of
// /proc/<pid>/task/<tid>/children over its threads. A pid is included when its /proc entry
// exists when the walk reaches it; a missing root gives an empty tree. Loops are cut by a
// visited set; unreadable entries are skipped.
std::vector<long> process_tree(long root_pid, const std::filesystem::path& proc_root = "/proc");

// RSS and PSS of one process from smaps_rollup, falling back to statm (resident pages × page
// size, PSS unknown) when that file is unreadable or has no Rss line. nullopt when neither
// is readable: the process vanished or is hidden from us.
std::optional<ProcessMemory> read_process_memory(long pid,
                                                 const std::filesystem::path& proc_root = "/proc");

// process_tree + read_process_memory summed; processes that vanished after the walk are not
// counted.
TreeMemory read_tree_memory(long root_pid, const std::filesystem::path& proc_root = "/proc");

// Samples host memory and every target: once in start(), then every interval on its own thread,
// and once more in stop(). One sample reads the host first, then every target in order; a
// failing step is logged at debug level and never stops the others.
//
// Threading: every member may be called from any thread; start() and stop() are serialised.
class MemorySampler {
 public:
  // `interval` is memory_profiling.interval_seconds: > 0 and finite, else std::invalid_argument
  // (values above a year are waited as a year).
  MemorySampler(std::vector<MemoryTarget> targets, std::chrono::duration<double> interval,
                std::filesystem::path proc_root = "/proc");
  ~MemorySampler();  // stop()
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;
  MemorySampler(MemorySampler&&) = delete;
  MemorySampler& operator=(MemorySampler&&) = delete;

  // Takes one sample synchronously, then starts the sampler thread. Only the first call does
  // anything; a sampler that was stopped does not start again.
  void start();

  // Wakes and joins the thread, then takes one final sample. Only the first call after start()
  // does anything; on a sampler never started it only prevents a later start().
  void stop();

  // A copy of the latest sample; nullopt before the first.
  std::optional<MemorySample> latest() const;
  std::uint64_t samples_taken() const;

  // Whether the sampler can run here: `<proc_root>/self` exists. When it does not, the caller
  // says so in one info line and creates no sampler.
  static bool available(const std::filesystem::path& proc_root = "/proc");

 private:
  enum class State { idle, running, stopped };

  void run();
  void take_sample();

  const std::vector<MemoryTarget> targets_;
  const std::chrono::steady_clock::duration interval_;
  const std::filesystem::path proc_root_;

  std::mutex lifecycle_mutex_;  // serialises start() and stop()
  State state_ = State::idle;   // guarded by lifecycle_mutex_
  std::thread thread_;

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;  // guarded by wake_mutex_

  // Guarded by data_mutex_. peaks_ maps (server name, memory type) to its peak.
  mutable std::mutex data_mutex_;
  std::optional<MemorySample> latest_;
  std::uint64_t samples_taken_ = 0;
  std::optional<std::int64_t> host_peak_;
  std::map<std::pair<std::string, std::string>, std::int64_t> peaks_;
};

}  // namespace gym::telemetry
