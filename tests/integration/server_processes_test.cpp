// What the orchestrator (`gym env start`) does with its servers' processes beyond starting them:
// it relays their output with bounded memory and without letting one server hold up another,
// it stops everything a server started along with the server, and it refuses a config file it
// cannot read without blocking. External (Python) servers written by the tests play the servers.
#include "files.h"
#include "process.h"
#include "reserved_port.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using gym::test::LoggedProcess;
using gym::test::read_text;
using gym::test::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

// The servers' python3 is Debian's (it has PyYAML); a python3 earlier in PATH may not be.
std::string debian_python_path() {
  const char* path = std::getenv("PATH");
  return "PATH=/usr/bin:/bin" + (path ? ":" + std::string(path) : std::string());
}

// An external resources server `<root>/resources_servers/<name>/app.py` that runs `body` (with
// `block`, its instance's config block, at hand) and then answers HTTP on its port.
void write_server(const TempDir& tmp, const std::string& name, const std::string& body) {
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / name;
  fs::create_directories(folder);
  std::ofstream(folder / "app.py")
      << "import http.server, os, socketserver, subprocess, sys, yaml\n"
         "config = yaml.safe_load(os.environ['NEMO_GYM_CONFIG_DICT'])\n"
         "block = config[os.environ['NEMO_GYM_CONFIG_PATH']]['resources_servers']['"
      << name << "']\n"
      << body
      << "socketserver.TCPServer.allow_reuse_address = True\n"
         "server = socketserver.TCPServer((block['host'], block['port']),\n"
         "                                http.server.SimpleHTTPRequestHandler)\n"
         "print('serving', flush=True)\n"
         "server.serve_forever()\n";
}

// `gym env start` in `tmp` with its output in <tmp>/orchestrator.log.
std::unique_ptr<LoggedProcess> start(const TempDir& tmp, const std::string& config,
                                     const std::string& extra = "") {
  return std::make_unique<LoggedProcess>("env -C " + tmp.path() + " " + debian_python_path() + " " +
                                             gym_binary() + " env start --config " + config +
                                             " --search-dir " + tmp.path() +
                                             " ++head_server.port=0 " + extra,
                                         tmp.file("orchestrator.log"));
}

// The peak resident memory of `pid` in KiB (VmHWM), -1 when unknown.
long peak_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

// Whether `pid` still runs the program `name` (a zombie, or a pid reused by something else,
// does not count).
bool running(pid_t pid, const std::string& name) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::string stat = read_text(dir + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  if (stat[close + 2] == 'Z' || stat[close + 2] == 'X') return false;
  return read_text(dir + "/cmdline").find(name) != std::string::npos;
}

constexpr std::size_t kLineBytes = 200u << 20;  // 200 MiB

}  // namespace

// A server that prints a 200 MiB line without a newline before it starts, beside one that
// prints 2 MB of short lines (30 pipe buffers) before it starts: both become ready, the
// orchestrator's memory stays far below the line's size, and the line is relayed cut with its
// length. Before, the pump scanned the whole pending line again after every read (minutes for
// this line, every other server's pipe full meanwhile) and held the line whole, twice.
TEST(ServerOutput, AHugeLineIsRelayedCutWithoutHoldingUpAnyServer) {
  TempDir tmp;
  write_server(tmp, "flood",
               "chunk = 'x' * (1 << 20)\n"
               "for _ in range(block['megabytes']):\n"
               "    sys.stdout.write(chunk)\n"
               "sys.stdout.flush()\n");
  write_server(tmp, "chatty",
               "for i in range(20000):\n"
               "    print('line', i, 'of the chatty server, a hundred bytes or so ' + 'y' * 40)\n"
               "sys.stdout.flush()\n");
  std::ofstream(tmp.file("servers.yaml"))
      << "flood_env:\n  resources_servers:\n    flood:\n      entrypoint: app.py\n"
         "      domain: other\n      megabytes: "
      << (kLineBytes >> 20)
      << "\nchatty_env:\n  resources_servers:\n    chatty:\n      entrypoint: app.py\n"
         "      domain: other\n";
  auto orchestrator = start(tmp, "servers.yaml");
  // Generous: the line takes well under a second to relay now, and minutes before.
  ASSERT_TRUE(orchestrator->wait_for("servers ready!", std::chrono::seconds(60)))
      << orchestrator->output().substr(0, 4096);
  const long peak = peak_rss_kib(orchestrator->child().pid());
  ASSERT_GT(peak, 0);
  EXPECT_LT(peak, 100 * 1024) << "the orchestrator's peak RSS (KiB) for a 200 MiB line";
  const std::string output = orchestrator->output();
  EXPECT_LT(output.size(), 8u << 20) << "the line was relayed whole";
  // The line goes on until the "serving" of its own server.
  EXPECT_NE(output.find("(flood_env) " + std::string(1000, 'x')), std::string::npos);
  EXPECT_NE(output.find("... [line truncated: " + std::to_string(kLineBytes + 7) + " bytes]"),
            std::string::npos)
      << output.substr(output.size() - std::min<std::size_t>(output.size(), 4096));
  EXPECT_NE(output.find("(chatty_env) line 19999 of the chatty server"), std::string::npos);
  orchestrator->child().signal(SIGTERM);
  EXPECT_EQ(orchestrator->child().wait_exit(std::chrono::seconds(60)), 143);
}

// A server that prints a 20 MiB line and exits during start-up: the error quotes a bounded tail
// of its output (the long line cut, with its length), not the whole line.
TEST(ServerOutput, TheStartUpErrorQuotesABoundedTail) {
  TempDir tmp;
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / "crash";
  fs::create_directories(folder);
  std::ofstream(folder / "app.py") << "import sys\n"
                                      "for i in range(100):\n"
                                      "    print('starting step', i)\n"
                                      "sys.stdout.write('z' * (20 << 20))\n"
                                      "print(flush=True)\n"
                                      "sys.exit('cannot start: out of luck')\n";
  std::ofstream(tmp.file("crash.yaml")) << "crash_env:\n  resources_servers:\n    crash:\n"
                                           "      entrypoint: app.py\n      domain: other\n";
  auto orchestrator = start(tmp, "crash.yaml");
  ASSERT_EQ(orchestrator->child().wait_exit(std::chrono::seconds(60)), 2);
  const std::string output = orchestrator->output();
  const auto error = output.find("error: server crash_env");
  ASSERT_NE(error, std::string::npos) << output.substr(0, 4096);
  const std::string quoted = output.substr(error);
  EXPECT_LT(quoted.size(), 6000u) << quoted.substr(0, 6000);
  EXPECT_NE(quoted.find("[line truncated: " + std::to_string(20u << 20) + " bytes]"),
            std::string::npos)
      << quoted.substr(0, 6000);
  EXPECT_NE(quoted.find("cannot start: out of luck"), std::string::npos) << quoted;
  EXPECT_NE(quoted.find("starting step 99"), std::string::npos) << quoted;
  EXPECT_EQ(quoted.find("starting step 10\n"), std::string::npos) << quoted;  // only the tail
}

// Everything an external server starts is stopped with the deployment, however it was started:
// a plain child, a double fork (its parent exits at once), a child in a session of its own, a
// daemon that is both, and one in its own session that ignores SIGTERM. The server itself exits
// at once on SIGTERM, before any of them.
TEST(ServerProcesses, NothingAServerStartedOutlivesTheDeployment) {
  TempDir tmp;
  write_server(tmp, "spawner",
               "def started(cmd, **kw):\n"
               "    return subprocess.Popen(cmd, **kw).pid\n"
               "def orphan(shell):\n"
               "    r = subprocess.run(['sh', '-c', shell + ' >/dev/null 2>&1 & echo $!'],\n"
               "                       capture_output=True, text=True, check=True)\n"
               "    return int(r.stdout)\n"
               "pids = {\n"
               "    'child': started(['sleep', '1001']),\n"
               "    'double_fork': orphan('sleep 1002'),\n"
               "    'own_session': started(['sleep', '1003'], start_new_session=True),\n"
               "    'daemon': orphan('setsid sleep 1004'),\n"
               "    'stubborn': started([sys.executable, '-c', 'import signal, time; "
               "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); "
               "time.sleep(1005)'], start_new_session=True),\n"
               "}\n"
               "with open('pids.txt', 'w') as f:\n"
               "    for name, pid in pids.items():\n"
               "        f.write(f'{name} {pid}\\n')\n");
  std::ofstream(tmp.file("spawner.yaml")) << "spawner_env:\n  resources_servers:\n    spawner:\n"
                                             "      entrypoint: app.py\n      domain: other\n";
  auto orchestrator = start(tmp, "spawner.yaml", "++shutdown_grace_seconds=3");
  ASSERT_TRUE(orchestrator->wait_for("servers ready!", std::chrono::seconds(60)))
      << orchestrator->output();
  const fs::path pid_file = fs::path(tmp.path()) / "resources_servers" / "spawner" / "pids.txt";
  struct Started {
    std::string name;
    pid_t pid;
    std::string program;
  };
  std::vector<Started> started;
  std::istringstream listed(read_text(pid_file));
  for (std::string name; listed >> name;) {
    pid_t pid = 0;
    listed >> pid;
    started.push_back({name, pid, name == "stubborn" ? "time.sleep(1005)" : "sleep"});
  }
  ASSERT_EQ(started.size(), 5u) << read_text(pid_file);
  // The stubborn one has set its handler once it printed: wait for its line.
  ASSERT_TRUE(orchestrator->wait_for("(spawner_env) 1", std::chrono::seconds(30)));
  for (const auto& s : started) ASSERT_TRUE(running(s.pid, s.program)) << s.name;

  orchestrator->child().signal(SIGTERM);
  EXPECT_EQ(orchestrator->child().wait_exit(std::chrono::seconds(60)), 143)
      << orchestrator->output();
  // Generous bounds: all are gone when the orchestrator has exited.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (const auto& s : started) {
    while (running(s.pid, s.program) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(running(s.pid, s.program)) << s.name << " (pid " << s.pid << ") outlived it";
    if (running(s.pid, s.program)) ::kill(s.pid, SIGKILL);  // leave nothing behind either way
  }
  // The ones outside its process group at least (which others are still running when the
  // server is gone depends on timing).
  EXPECT_NE(orchestrator->output().find(" processes the servers had left running"),
            std::string::npos)
      << orchestrator->output();
}

// A config file that is a FIFO fails at once with what it is (reading it would wait for a
// writer forever); a symlink loop is called one.
TEST(ConfigFiles, AFifoOrASymlinkLoopIsAnErrorAtOnce) {
  TempDir tmp;
  const std::string fifo = tmp.file("pipe.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // `timeout`: the bound that proves it does not hang.
  auto r = gym::test::run_command("timeout 60 " + gym_binary() + " config show --config " + fifo +
                                  " 2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("'" + fifo + "' is a FIFO (named pipe)"), std::string::npos) << r.output;
  fs::create_symlink("loop_b.yaml", tmp.file("loop_a.yaml"));
  fs::create_symlink("loop_a.yaml", tmp.file("loop_b.yaml"));
  r = gym::test::run_command("timeout 60 " + gym_binary() + " config show --config " +
                             tmp.file("loop_a.yaml") + " 2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("is a symlink loop"), std::string::npos) << r.output;
}
