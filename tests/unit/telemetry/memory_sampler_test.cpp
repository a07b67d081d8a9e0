// The memory profiling sampler (docs/guides/memory-profiling.md): the /proc readers over fake proc
// trees, the same readers over real forked processes, and the sampler's lifecycle and peaks.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/metrics/memory_sampler.h"

namespace gym::telemetry {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace std::string_literals;

constexpr std::int64_t kKiB = 1024;

// A directory laid out like /proc, with only the files the sampler reads. Files are replaced
// atomically (write, then rename), so a sampler thread never reads half of a rewrite.
class FakeProc {
 public:
  FakeProc() {
    // tmpfs when there is one: thousands of small files on a disk file system are slow.
    std::error_code ec;
    const fs::path base =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string tmpl = (base / "gym-fake-proc-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  ~FakeProc() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  FakeProc(const FakeProc&) = delete;
  FakeProc& operator=(const FakeProc&) = delete;

  const fs::path& root() const { return root_; }

  void write(const fs::path& relative, std::string_view content) {
    const fs::path path = root_ / relative;
    if (fs::is_directory(path)) fs::remove_all(path);  // undo make_unreadable()
    fs::create_directories(path.parent_path());
    const fs::path tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(content.data(), static_cast<std::streamsize>(content.size()));
    }
    fs::rename(tmp, path);
  }

  // A directory where a file is expected: open() succeeds, read() fails, even for root.
  void make_unreadable(const fs::path& relative) {
    std::error_code ec;
    fs::remove_all(root_ / relative, ec);
    fs::create_directories(root_ / relative);
  }

  void remove(const fs::path& relative) {
    std::error_code ec;
    fs::remove_all(root_ / relative, ec);
  }

  // A process whose threads are `tids` (just the main thread, tid == pid, when empty).
  void add_process(long pid, std::vector<long> tids = {}) {
    if (tids.empty()) tids.push_back(pid);
    for (long tid : tids) fs::create_directories(root_ / task(pid, tid));
  }

  void set_children(long pid, long tid, std::string_view text) {
    write(task(pid, tid) / "children", text);
  }
  void set_children(long pid, const std::vector<long>& children) {
    std::string text;
    for (long c : children) text += std::to_string(c) + " ";  // the kernel's layout
    set_children(pid, pid, text);
  }

  // smaps_rollup as the kernel writes it (values in kB).
  void set_smaps(long pid, std::int64_t rss_kb, std::optional<std::int64_t> pss_kb) {
    std::string text = "55d0c0a00000-7ffc5b9f5000 ---p 00000000 00:00 0        [rollup]\n";
    text += "Rss:            " + std::to_string(rss_kb) + " kB\n";
    if (pss_kb) {
      text += "Pss:            " + std::to_string(*pss_kb) + " kB\n";
      text += "Pss_Anon:       " + std::to_string(*pss_kb) + " kB\n";
    }
    text += "Shared_Clean:       0 kB\nSwap:               0 kB\nLocked:             0 kB\n";
    write(fs::path(std::to_string(pid)) / "smaps_rollup", text);
  }

  void set_statm(long pid, std::int64_t resident_pages) {
    write(fs::path(std::to_string(pid)) / "statm",
          "1000 " + std::to_string(resident_pages) + " 50 5 0 120 0\n");
  }

  void set_meminfo(std::int64_t total_kb, std::optional<std::int64_t> available_kb) {
    std::string text = "MemTotal:       " + std::to_string(total_kb) + " kB\n";
    text += "MemFree:          100000 kB\n";
    if (available_kb) text += "MemAvailable:   " + std::to_string(*available_kb) + " kB\n";
    text += "Buffers:           20000 kB\nCached:           300000 kB\nSwapCached:   0 kB\n";
    write("meminfo", text);
  }

 private:
  static fs::path task(long pid, long tid) {
    return fs::path(std::to_string(pid)) / "task" / std::to_string(tid);
  }

  fs::path root_;
};

std::int64_t page_bytes() { return ::sysconf(_SC_PAGESIZE); }

// Polls `done` until it holds; the bound only keeps a broken build from hanging the suite.
bool eventually(const std::function<bool()>& done, std::chrono::seconds bound = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Waits until a sample that started after this call has finished: one in progress now may have
// read files from before the caller's rewrite, the one after it cannot.
bool wait_for_fresh_sample(const MemorySampler& s) {
  const std::uint64_t now = s.samples_taken();
  return eventually([&] { return s.samples_taken() >= now + 2; });
}

// ---- Host memory ----

TEST(MemoryHost, ReadsTotalAndAvailable) {
  FakeProc proc;
  proc.set_meminfo(16'000'000, 12'000'000);
  const auto host = read_host_memory(proc.root());
  ASSERT_TRUE(host);
  EXPECT_EQ(host->total, 16'000'000 * kKiB);
  EXPECT_EQ(host->available, 12'000'000 * kKiB);
  EXPECT_EQ(host->usage, 4'000'000 * kKiB);
}

TEST(MemoryHost, WithoutMemAvailableUsesFreePlusBuffersPlusCached) {
  FakeProc proc;
  proc.set_meminfo(16'000'000, std::nullopt);  // MemFree 100000, Buffers 20000, Cached 300000
  const auto host = read_host_memory(proc.root());
  ASSERT_TRUE(host);
  EXPECT_EQ(host->total, 16'000'000 * kKiB);
  EXPECT_EQ(host->available, 420'000 * kKiB);
  EXPECT_EQ(host->usage, (16'000'000 - 420'000) * kKiB);
}

TEST(MemoryHost, UnreadableOrIncompleteMeminfoIsAbsent) {
  FakeProc proc;
  EXPECT_FALSE(read_host_memory(proc.root()));  // missing
  proc.make_unreadable("meminfo");
  EXPECT_FALSE(read_host_memory(proc.root()));
  proc.write("meminfo", "MemFree: 100 kB\nMemAvailable: 50 kB\n");  // no MemTotal
  EXPECT_FALSE(read_host_memory(proc.root()));
  proc.write("meminfo", "MemTotal: 1000 kB\nBuffers: 5 kB\n");  // no MemAvailable, no MemFree
  EXPECT_FALSE(read_host_memory(proc.root()));
}

TEST(MemoryHost, GarbageNeverParsesAsANumber) {
  FakeProc proc;
  for (const std::string& text : {
           "MemTotal: -5 kB\n"s,
           "MemTotal: 99999999999999999999999 kB\n"s,
           "MemTotal: 9223372036854775807 kB\n"s,  // fits in int64 as kB, not as bytes
           "MemTotal: lots\n"s,
           "MemTotal:\n"s,
           "MemTotal 1000 kB\n"s,
           "MemTotalX: 1000 kB\n"s,
           "\0MemTotal: 1000\0 kB\n\xff\xfe"s,
       }) {
    proc.write("meminfo", text);
    EXPECT_FALSE(read_host_memory(proc.root())) << text;
  }
  // A garbled MemAvailable line falls back to the MemFree estimate.
  proc.write("meminfo", "MemTotal: 1000 kB\nMemAvailable: x kB\nMemFree: 10 kB\nCached: 5 kB\n");
  const auto host = read_host_memory(proc.root());
  ASSERT_TRUE(host);
  EXPECT_EQ(host->available, 15 * kKiB);
}

TEST(MemoryHost, RealProcMeminfo) {
  const auto host = read_host_memory();
  ASSERT_TRUE(host);
  EXPECT_GT(host->total, 0);
  EXPECT_GT(host->available, 0);
  EXPECT_LE(host->available, host->total);
  EXPECT_EQ(host->usage, host->total - host->available);
}

// ---- Process tree ----

TEST(MemoryTree, ChildrenAreTheUnionOverThreadsDepthFirst) {
  FakeProc proc;
  proc.add_process(100, {100, 101, 102});
  proc.set_children(100, 100, "200 201 ");
  proc.set_children(100, 101, "201 300 ");  // 201 appears twice: counted once
  // thread 102 has no children file (it exited mid-walk)
  for (long pid : {200, 201, 300, 400}) proc.add_process(pid);
  proc.set_children(200, {400});
  EXPECT_EQ(process_tree(100, proc.root()), (std::vector<long>{100, 200, 400, 201, 300}));
  EXPECT_EQ(process_tree(200, proc.root()), (std::vector<long>{200, 400}));
}

TEST(MemoryTree, LoopsAreVisitedOnce) {
  FakeProc proc;
  for (long pid : {1, 2, 3}) proc.add_process(pid);
  proc.set_children(1, {2});
  proc.set_children(2, {3, 2, 1});  // back to itself and to the root
  proc.set_children(3, {1, 2});
  EXPECT_EQ(process_tree(1, proc.root()), (std::vector<long>{1, 2, 3}));
}

TEST(MemoryTree, UnreadableAndMissingEntriesAreSkipped) {
  FakeProc proc;
  proc.add_process(10, {10, 11});
  proc.set_children(10, 10, "20 30 40 ");
  proc.make_unreadable("10/task/11/children");
  proc.add_process(20);
  proc.make_unreadable("20/task/20/children");
  fs::create_directories(proc.root() / "30");  // no task directory: a leaf
  // 40 is listed but has no /proc entry: it exited
  EXPECT_EQ(process_tree(10, proc.root()), (std::vector<long>{10, 20, 30}));
}

TEST(MemoryTree, MissingOrInvalidRootIsEmpty) {
  FakeProc proc;
  EXPECT_TRUE(process_tree(12345, proc.root()).empty());
  EXPECT_TRUE(process_tree(0, proc.root()).empty());
  EXPECT_TRUE(process_tree(-1, proc.root()).empty());
}

TEST(MemoryTree, GarbageChildTokensAreIgnored) {
  FakeProc proc;
  proc.add_process(1);
  proc.set_children(1, 1,
                    "abc 12x -5 0 +7 99999999999999999999999 3000000000 \x01\xff\n\t300 \0 7 \0"s);
  for (long pid : {300, 7, 12, 5}) proc.add_process(pid);
  EXPECT_EQ(process_tree(1, proc.root()), (std::vector<long>{1, 300, 7}));
}

TEST(MemoryTree, DeepChainsAreWalkedWhole) {
  FakeProc proc;
  constexpr long kDepth = 2000;
  for (long pid = 1; pid <= kDepth; ++pid) {
    proc.add_process(pid);
    if (pid < kDepth) proc.set_children(pid, {pid + 1});
  }
  const auto tree = process_tree(1, proc.root());
  ASSERT_EQ(tree.size(), static_cast<std::size_t>(kDepth));
  EXPECT_EQ(tree.front(), 1);
  EXPECT_EQ(tree.back(), kDepth);
}

// ---- One process and tree totals ----

TEST(MemoryProcess, SmapsRollupGivesRssAndPss) {
  FakeProc proc;
  proc.add_process(5);
  proc.set_smaps(5, 2048, 1024);
  proc.set_statm(5, 1);  // ignored while smaps_rollup is readable
  const auto m = read_process_memory(5, proc.root());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->rss, 2048 * kKiB);
  EXPECT_EQ(m->pss, 1024 * kKiB);
}

TEST(MemoryProcess, StatmFallbackHasNoPss) {
  FakeProc proc;
  proc.add_process(5);
  proc.set_statm(5, 300);
  for (int variant = 0; variant < 3; ++variant) {
    if (variant == 0) proc.remove("5/smaps_rollup");
    if (variant == 1) proc.make_unreadable("5/smaps_rollup");
    if (variant == 2) proc.write("5/smaps_rollup", "Pss: 10 kB\nRss: many kB\n");  // no valid Rss
    const auto m = read_process_memory(5, proc.root());
    ASSERT_TRUE(m) << variant;
    EXPECT_EQ(m->rss, 300 * page_bytes()) << variant;
    EXPECT_FALSE(m->pss) << variant;
  }
}

TEST(MemoryProcess, SmapsWithoutPssLineHasNoPss) {
  FakeProc proc;
  proc.add_process(5);
  proc.set_smaps(5, 64, std::nullopt);
  const auto m = read_process_memory(5, proc.root());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->rss, 64 * kKiB);
  EXPECT_FALSE(m->pss);
}

TEST(MemoryProcess, NothingReadableIsAbsent) {
  FakeProc proc;
  EXPECT_FALSE(read_process_memory(5, proc.root()));  // vanished
  proc.add_process(5);
  EXPECT_FALSE(read_process_memory(5, proc.root()));  // no files
  proc.write("5/statm", "1000\n");                    // no field 2
  EXPECT_FALSE(read_process_memory(5, proc.root()));
  proc.write("5/statm", "1000 -3 1\n");
  EXPECT_FALSE(read_process_memory(5, proc.root()));
  proc.write("5/statm", "1000 99999999999999999 1\n");  // overflows once multiplied by the page
  EXPECT_FALSE(read_process_memory(5, proc.root()));
}

TEST(MemoryTreeTotals, SumsRssAndPssOverTheTree) {
  FakeProc proc;
  for (long pid : {1, 2, 3}) proc.add_process(pid);
  proc.set_children(1, {2, 3});
  proc.set_smaps(1, 1000, 400);
  proc.set_smaps(2, 2000, 700);
  proc.set_smaps(3, 3000, 900);
  const TreeMemory m = read_tree_memory(1, proc.root());
  EXPECT_EQ(m.processes, 3);
  EXPECT_EQ(m.rss, 6000 * kKiB);
  EXPECT_EQ(m.pss, 2000 * kKiB);
}

TEST(MemoryTreeTotals, PssIsAbsentWhenOneProcessFellBackToStatm) {
  FakeProc proc;
  for (long pid : {1, 2}) proc.add_process(pid);
  proc.set_children(1, {2});
  proc.set_smaps(1, 1000, 400);
  proc.set_statm(2, 10);
  const TreeMemory m = read_tree_memory(1, proc.root());
  EXPECT_EQ(m.processes, 2);
  EXPECT_EQ(m.rss, 1000 * kKiB + 10 * page_bytes());
  EXPECT_FALSE(m.pss);
}

TEST(MemoryTreeTotals, VanishedAndUnreadableProcessesAreNotCounted) {
  FakeProc proc;
  for (long pid : {1, 2, 3}) proc.add_process(pid);
  proc.set_children(1, {2, 3, 4});  // 4 has no /proc entry
  proc.set_smaps(1, 1000, 400);
  proc.set_smaps(2, 500, 100);
  // 3 exists but its files are gone: it exited between the walk and the read
  const TreeMemory m = read_tree_memory(1, proc.root());
  EXPECT_EQ(m.processes, 2);
  EXPECT_EQ(m.rss, 1500 * kKiB);
  EXPECT_EQ(m.pss, 500 * kKiB);
}

TEST(MemoryTreeTotals, MissingRootIsZerosWithPss) {
  FakeProc proc;
  const TreeMemory m = read_tree_memory(4242, proc.root());
  EXPECT_EQ(m.processes, 0);
  EXPECT_EQ(m.rss, 0);
  ASSERT_TRUE(m.pss);
  EXPECT_EQ(*m.pss, 0);
}

// Random bytes in every file the readers parse: no crash, no exception, no negative value.
TEST(MemoryGarbage, RandomFileContentsNeverBreakTheReaders) {
  FakeProc proc;
  std::mt19937 rng(20250101);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 300);
  const auto noise = [&] {
    std::string s(static_cast<std::size_t>(length(rng)), '\0');
    for (char& c : s) c = static_cast<char>(byte(rng));
    // Mix in fragments that look almost right.
    static const char* kFragments[] = {"Rss:", "Pss:", "MemTotal:", " kB\n", "12", " 3 ", "\n"};
    for (int i = 0; i < 4; ++i) s.insert(rng() % (s.size() + 1), kFragments[rng() % 7]);
    return s;
  };
  for (long pid : {1, 2}) proc.add_process(pid);
  for (int round = 0; round < 200; ++round) {
    proc.write("meminfo", noise());
    proc.set_children(1, 1, noise() + " 2 ");
    proc.set_children(2, 2, noise());
    proc.write("1/smaps_rollup", noise());
    proc.write("1/statm", noise());
    proc.write("2/statm", noise());
    EXPECT_NO_THROW({
      (void)read_host_memory(proc.root());
      const TreeMemory m = read_tree_memory(1, proc.root());
      EXPECT_GE(m.rss, 0);
      EXPECT_GE(m.pss.value_or(0), 0);
      EXPECT_LE(m.processes, 2);
    });
  }
}

// ---- Real processes ----

// The records children write to the readiness pipe (one write each: atomic below PIPE_BUF).
struct Ready {
  std::int32_t kind;  // 'r' root, 'w' worker, 'g' detached grandchild
  std::int32_t pid;
};

void send_ready(int fd, char kind) {
  const Ready r{kind, static_cast<std::int32_t>(::getpid())};
  if (::write(fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(3);
}

// Blocks until the test closes the release pipe (or dies, which closes it too).
void wait_for_release(int fd) {
  char c;
  while (::read(fd, &c, 1) < 0 && errno == EINTR) {
  }
}

// Like a server with num_workers: 3: a root that maps shared memory and forks three workers that
// touch it. The root also double-forks a detached grandchild (setsid), which re-parents out of the
// tree and must not be counted.
TEST(MemoryRealProcesses, CountsWorkersSharedPagesAndNotADetachedGrandchild) {
  constexpr std::size_t kShared = 8u << 20;
  // The grandchild re-parents to this process instead of init, so the test can reap it.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int ready[2];
  int release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);

  const pid_t root = ::fork();
  ASSERT_GE(root, 0);
  if (root == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(ready[0]);
    ::close(release[1]);
    void* mem = ::mmap(nullptr, kShared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) _exit(1);
    std::memset(mem, 1, kShared);
    for (int i = 0; i < 3; ++i) {
      const pid_t worker = ::fork();
      if (worker < 0) _exit(1);
      if (worker == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        // Read every page so it is mapped (and counted in RSS) here too.
        const volatile char* p = static_cast<const char*>(mem);
        int sum = 0;
        for (std::size_t off = 0; off < kShared; off += 4096) sum += p[off];
        if (sum == 0) _exit(2);
        send_ready(ready[1], 'w');
        wait_for_release(release[0]);
        _exit(0);
      }
    }
    const pid_t middle = ::fork();
    if (middle < 0) _exit(1);
    if (middle == 0) {
      ::setsid();
      const pid_t grandchild = ::fork();
      if (grandchild == 0) {
        send_ready(ready[1], 'g');
        wait_for_release(release[0]);
        _exit(0);
      }
      _exit(grandchild < 0 ? 1 : 0);
    }
    ::waitpid(middle, nullptr, 0);  // reaped, so only the workers are left as children
    send_ready(ready[1], 'r');
    wait_for_release(release[0]);
    while (::wait(nullptr) > 0) {
    }
    _exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);

  std::vector<pid_t> workers;
  pid_t grandchild = 0;
  bool root_ready = false;
  // Whatever happens below: release everyone, reap the root (it reaps the workers) and the
  // grandchild, and stop being a subreaper.
  struct Cleanup {
    int release_fd;
    pid_t root;
    const pid_t* grandchild;
    int ready_fd;
    ~Cleanup() {
      ::close(release_fd);
      const auto reap = [](pid_t pid) {
        for (int i = 0; i < 10'000; ++i) {
          const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
          if (r == pid || (r < 0 && errno == ECHILD)) return;
          std::this_thread::sleep_for(1ms);
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      };
      reap(root);
      if (*grandchild > 0) reap(*grandchild);
      ::close(ready_fd);
      ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    }
  } cleanup{release[1], root, &grandchild, ready[0]};

  while (workers.size() < 3 || grandchild == 0 || !root_ready) {
    pollfd pfd{ready[0], POLLIN, 0};
    ASSERT_EQ(::poll(&pfd, 1, 30'000), 1) << "children did not report ready";
    Ready r{};
    ASSERT_EQ(::read(ready[0], &r, sizeof r), static_cast<ssize_t>(sizeof r));
    if (r.kind == 'w') workers.push_back(r.pid);
    if (r.kind == 'g') grandchild = r.pid;
    if (r.kind == 'r') root_ready = true;
  }
  ASSERT_EQ(::kill(grandchild, 0), 0) << "the grandchild is alive while we sample";

  std::vector<long> tree = process_tree(root);
  ASSERT_EQ(tree.size(), 4u);
  EXPECT_EQ(tree.front(), root);
  std::vector<long> expected_workers(workers.begin(), workers.end());
  std::vector<long> found_workers(tree.begin() + 1, tree.end());
  std::sort(expected_workers.begin(), expected_workers.end());
  std::sort(found_workers.begin(), found_workers.end());
  EXPECT_EQ(found_workers, expected_workers);
  EXPECT_EQ(std::count(tree.begin(), tree.end(), grandchild), 0);

  const TreeMemory m = read_tree_memory(root);
  EXPECT_EQ(m.processes, 4);
  ASSERT_TRUE(m.pss) << "our own children's smaps_rollup is readable";
  // Each of the four maps the shared region: RSS counts it four times, PSS about once.
  EXPECT_GE(m.rss, static_cast<std::int64_t>(4 * kShared));
  EXPECT_LT(*m.pss + static_cast<std::int64_t>(2 * kShared), m.rss);

  MemorySampler sampler({{"mcqa", "resources_servers", root}}, 1h);
  sampler.start();
  const auto sample = sampler.latest();
  ASSERT_TRUE(sample);
  ASSERT_TRUE(sample->host);
  ASSERT_EQ(sample->targets.size(), 1u);
  EXPECT_EQ(sample->targets[0].memory.processes, 4);
  EXPECT_GE(sample->targets[0].rss_peak, sample->targets[0].memory.rss);
  sampler.stop();
}

// ---- The sampler ----

TEST(MemorySampler, StartSamplesSynchronouslyAndStopTakesOneFinalSample) {
  FakeProc proc;
  proc.set_meminfo(1000, 600);
  proc.add_process(7);
  proc.set_smaps(7, 100, 40);
  MemorySampler s({{"policy_model", "responses_api_models", 7}}, 1h, proc.root());
  EXPECT_FALSE(s.latest());
  EXPECT_EQ(s.samples_taken(), 0u);

  s.start();
  EXPECT_EQ(s.samples_taken(), 1u);
  auto first = s.latest();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->host);
  EXPECT_EQ(first->host->usage, 400 * kKiB);
  EXPECT_EQ(first->host_peak, 400 * kKiB);
  ASSERT_EQ(first->targets.size(), 1u);
  EXPECT_EQ(first->targets[0].target.server_name, "policy_model");
  EXPECT_EQ(first->targets[0].target.server_type, "responses_api_models");
  EXPECT_EQ(first->targets[0].target.root_pid, 7);
  EXPECT_EQ(first->targets[0].memory.rss, 100 * kKiB);
  EXPECT_EQ(first->targets[0].memory.pss, 40 * kKiB);
  EXPECT_EQ(first->targets[0].memory.processes, 1);
  EXPECT_EQ(first->targets[0].rss_peak, 100 * kKiB);
  EXPECT_EQ(first->targets[0].pss_peak, 40 * kKiB);

  s.start();  // already running
  EXPECT_EQ(s.samples_taken(), 1u);

  proc.set_smaps(7, 50, 20);
  s.stop();  // wakes the hour-long wait; the final sample sees the new files
  EXPECT_EQ(s.samples_taken(), 2u);
  auto last = s.latest();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->targets[0].memory.rss, 50 * kKiB);
  EXPECT_EQ(last->targets[0].rss_peak, 100 * kKiB);
  EXPECT_EQ(last->targets[0].pss_peak, 40 * kKiB);

  s.stop();
  s.start();  // a stopped sampler stays stopped
  s.stop();
  EXPECT_EQ(s.samples_taken(), 2u);
}

TEST(MemorySampler, StopWithoutStartTakesNoSample) {
  FakeProc proc;
  proc.set_meminfo(1000, 600);
  {
    MemorySampler s({}, 1s, proc.root());
    s.stop();
    s.stop();
    EXPECT_EQ(s.samples_taken(), 0u);
    EXPECT_FALSE(s.latest());
  }
  MemorySampler never_used({}, 1s, proc.root());  // destructor alone is fine too
}

TEST(MemorySampler, PeaksAreTheMaximumOverSamples) {
  FakeProc proc;
  proc.set_meminfo(1000, 900);  // usage 100
  proc.add_process(7);
  proc.set_smaps(7, 100, 50);
  MemorySampler s({{"mcqa", "resources_servers", 7}}, 1ms, proc.root());
  s.start();

  proc.set_meminfo(1000, 600);  // usage 400
  proc.set_smaps(7, 300, 150);
  ASSERT_TRUE(wait_for_fresh_sample(s));

  proc.set_meminfo(1000, 800);  // usage 200
  proc.set_smaps(7, 200, 100);
  ASSERT_TRUE(wait_for_fresh_sample(s));
  auto sample = s.latest();
  ASSERT_TRUE(sample && sample->host);
  EXPECT_EQ(sample->host->usage, 200 * kKiB);
  EXPECT_EQ(sample->host_peak, 400 * kKiB);
  const auto& t = sample->targets.at(0);
  EXPECT_EQ(t.memory.rss, 200 * kKiB);
  EXPECT_EQ(t.memory.pss, 100 * kKiB);
  EXPECT_EQ(t.rss_peak, 300 * kKiB);
  EXPECT_EQ(t.pss_peak, 150 * kKiB);

  // A sample without PSS (statm fallback) has no PSS peak either...
  proc.remove("7/smaps_rollup");
  proc.set_statm(7, 10);
  ASSERT_TRUE(wait_for_fresh_sample(s));
  sample = s.latest();
  ASSERT_TRUE(sample);
  EXPECT_EQ(sample->targets.at(0).memory.rss, 10 * page_bytes());
  EXPECT_FALSE(sample->targets.at(0).memory.pss);
  EXPECT_FALSE(sample->targets.at(0).pss_peak);
  EXPECT_EQ(sample->targets.at(0).rss_peak, std::max<std::int64_t>(300 * kKiB, 10 * page_bytes()));

  // ...but the PSS peak is kept for the next sample that has one.
  proc.set_smaps(7, 120, 60);
  ASSERT_TRUE(wait_for_fresh_sample(s));
  s.stop();
  sample = s.latest();
  ASSERT_TRUE(sample);
  EXPECT_EQ(sample->targets.at(0).memory.pss, 60 * kKiB);
  EXPECT_EQ(sample->targets.at(0).pss_peak, 150 * kKiB);
  EXPECT_EQ(sample->targets.at(0).rss_peak, std::max<std::int64_t>(300 * kKiB, 10 * page_bytes()));
}

TEST(MemorySampler, OneFailingStepDoesNotStopTheOthers) {
  FakeProc proc;  // no meminfo
  proc.add_process(8);
  proc.set_smaps(8, 10, 5);
  MemorySampler s({{"gone", "resources_servers", 4242}, {"alive", "responses_api_agents", 8}}, 1h,
                  proc.root());
  s.start();
  s.stop();
  const auto sample = s.latest();
  ASSERT_TRUE(sample);
  EXPECT_FALSE(sample->host);
  EXPECT_EQ(sample->host_peak, 0);
  ASSERT_EQ(sample->targets.size(), 2u);  // config order
  EXPECT_EQ(sample->targets[0].target.server_name, "gone");
  EXPECT_EQ(sample->targets[0].memory.processes, 0);
  EXPECT_EQ(sample->targets[0].memory.rss, 0);
  EXPECT_EQ(sample->targets[0].memory.pss, 0);
  EXPECT_EQ(sample->targets[0].rss_peak, 0);
  EXPECT_EQ(sample->targets[0].pss_peak, 0);
  EXPECT_EQ(sample->targets[1].target.server_name, "alive");
  EXPECT_EQ(sample->targets[1].memory.rss, 10 * kKiB);
}

TEST(MemorySampler, ThreadIsNamedAndJoinedByStop) {
  FakeProc proc;
  const auto thread_named = [] {
    std::error_code ec;
    for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
         it.increment(ec)) {
      std::ifstream comm(it->path() / "comm");
      std::string name;
      if (std::getline(comm, name) && name == kMemorySamplerThreadName) return true;
    }
    return false;
  };
  MemorySampler s({}, 1h, proc.root());
  EXPECT_FALSE(thread_named());
  s.start();
  EXPECT_TRUE(eventually(thread_named));
  s.stop();
  EXPECT_FALSE(thread_named());
}

TEST(MemorySampler, LatestIsSafeToReadWhileSampling) {
  FakeProc proc;
  proc.set_meminfo(1000, 500);
  proc.add_process(3);
  proc.set_smaps(3, 10, 5);
  MemorySampler s({{"a", "resources_servers", 3}}, 1ms, proc.root());
  s.start();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      const auto l = s.latest();
      if (l && l->targets.size() != 1) ADD_FAILURE() << "torn sample";
    }
  });
  EXPECT_TRUE(eventually([&] { return s.samples_taken() >= 20; }));
  done = true;
  reader.join();
  s.stop();
}

TEST(MemorySampler, RejectsNonPositiveIntervals) {
  using Seconds = std::chrono::duration<double>;
  EXPECT_THROW(MemorySampler({}, Seconds(0)), std::invalid_argument);
  EXPECT_THROW(MemorySampler({}, Seconds(-1)), std::invalid_argument);
  EXPECT_THROW(MemorySampler({}, Seconds(std::nan(""))), std::invalid_argument);
  EXPECT_THROW(MemorySampler({}, Seconds(INFINITY)), std::invalid_argument);
  EXPECT_NO_THROW(MemorySampler({}, Seconds(1e12)));  // capped, not overflowed
}

TEST(MemorySampler, AvailableNeedsProcSelf) {
  FakeProc proc;
  EXPECT_FALSE(MemorySampler::available(proc.root()));
  fs::create_directories(proc.root() / "self");
  EXPECT_TRUE(MemorySampler::available(proc.root()));
  EXPECT_TRUE(MemorySampler::available());
}

}  // namespace
}  // namespace gym::telemetry
