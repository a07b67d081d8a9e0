// The throw-away Slurm cluster of tests/support/slurm_cluster.h that the `gym eval submit` tests
// run on: nodes with their own host names and addresses, a batch job in the shape of a
// submission (a server step per node, a driver step reaching it), a teardown that leaves nothing,
// clusters side by side. Needs root and network namespaces (ctest label `root`).
#include "slurm_cluster.h"
#include "files.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <thread>

namespace fs = std::filesystem;
using gym::test::SlurmCluster;

namespace {

constexpr std::chrono::seconds kJobLimit(60);

using gym::test::contains;

// The host PIDs of every process, with their command lines (arguments joined by spaces).
std::vector<std::pair<pid_t, std::string>> processes() {
  std::vector<std::pair<pid_t, std::string>> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = gym::test::read_text(entry.path() / "cmdline");
    for (auto& c : cmdline)
      if (c == '\0') c = ' ';
    found.emplace_back(std::stoi(name), cmdline);
  }
  return found;
}

// The PID namespace of a process ("pid:[4026532322]"), "" when it is gone.
std::string pid_namespace(pid_t pid) {
  std::error_code ec;
  auto target = fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec);
  return ec ? "" : target.string();
}

// Command lines of the processes in PID namespace `ns`.
std::vector<std::string> processes_in(const std::string& ns) {
  std::vector<std::string> found;
  for (const auto& [pid, cmdline] : processes())
    if (pid_namespace(pid) == ns) found.push_back(cmdline);
  return found;
}

// Command lines that contain `part`.
std::vector<std::string> processes_mentioning(const std::string& part) {
  std::vector<std::string> found;
  for (const auto& [pid, cmdline] : processes())
    if (contains(cmdline, part)) found.push_back(cmdline);
  return found;
}

// How many processes have argv[0] == `name`.
std::size_t processes_named(const std::string& name) {
  std::size_t count = 0;
  for (const auto& [pid, cmdline] : processes())
    if (cmdline.rfind(name + " ", 0) == 0) ++count;
  return count;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// Waits (bounded, a hang guard) until `count` processes are named `name`.
bool wait_for_processes(const std::string& name, std::size_t count) {
  auto deadline = std::chrono::steady_clock::now() + kJobLimit;
  while (processes_named(name) != count) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// Submits a batch script; its job id, or "" with the failure in `*why`.
std::string submit(const SlurmCluster& cluster, const std::string& arguments, std::string* why) {
  auto r = cluster.run("sbatch --parsable " + arguments);
  if (r.code != 0) {
    *why = r.output;
    return "";
  }
  return r.output.substr(0, r.output.find_first_of(";\n"));
}

bool network_name_exists(const std::string& kind, const std::string& name) {
  if (kind == "netns") return fs::exists("/run/netns/" + name);
  return gym::test::run_command("ip link show dev " + name).code == 0;
}

// A TCP server that answers every connection with one line naming its host; on SIGINT or SIGTERM
// it takes a second to drain, then exits 0: a `gym` server's stand-in.
constexpr const char* kServer = R"(import os, signal, socket, sys, time
address, port = sys.argv[1], int(sys.argv[2])
listener = socket.create_server((address, port))
def stop(signum, frame):
    print(f"server on {socket.gethostname()} got {signal.Signals(signum).name}", flush=True)
    time.sleep(1)
    print("server drained", flush=True)
    os._exit(0)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
print(f"server on {socket.gethostname()} listening at {address}:{port}", flush=True)
while True:
    connection, _ = listener.accept()
    with connection:
        connection.sendall(f"pong from {socket.gethostname()}\n".encode())
)";

// Connects to the server (retrying while it starts) and prints its answer.
constexpr const char* kDriver = R"(import socket, sys, time
address, port = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 30
while True:
    try:
        with socket.create_connection((address, port), timeout=2) as connection:
            reply = connection.makefile().readline().strip()
        break
    except OSError as error:
        if time.monotonic() > deadline:
            sys.exit(f"driver: {address}:{port} never answered: {error}")
        time.sleep(0.1)
print(f"driver on {socket.gethostname()} reached {address}:{port}: {reply}", flush=True)
)";

// The shape of a `gym eval submit` job: the server node's address from the controller, a server
// step on n2 beside the batch step (--overlap), a driver step on n1, then the server stopped with
// SIGTERM through scancel. (A signal sent to srun reaches the task too, but srun then kills the
// step at once, with no time to drain. scancel exits 225, "Invalid job id", in Slurm 22.05, yet
// the signal arrives.)
constexpr const char* kSubmission = R"(#!/bin/bash
set -u
address=$(scontrol show node n2 -o | sed -n 's/.* NodeAddr=\([^ ]*\) .*/\1/p')
srun --overlap -N1 -n1 -w n2 --job-name=server python3 server.py "$address" 7000 \
  > server.log 2>&1 &
server=$!
srun --overlap -N1 -n1 -w n1 --job-name=driver python3 driver.py "$address" 7000
driver=$?
step=$(squeue -h -s -j "$SLURM_JOB_ID" -o '%i %j' | awk '$2 == "server" {print $1}')
scancel --signal=TERM "$step" 2> /dev/null
wait "$server"
echo "server step exit $?"
exit "$driver"
)";

TEST(SlurmCluster, TwoNodesComeUpWithTheirOwnNamesAndAddresses) {
  SlurmCluster cluster(2);
  EXPECT_EQ(cluster.nodes(), (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(cluster.env(),
            (std::vector<std::string>{"SLURM_CONF=" + cluster.dir() + "/etc/slurm.conf"}));

  auto hostnames = cluster.run("srun -N2 hostname | sort");
  EXPECT_EQ(hostnames.code, 0) << hostnames.output;
  EXPECT_EQ(hostnames.output, "n1\nn2\n");

  for (std::size_t i = 0; i < 2; ++i) {
    auto addresses = cluster.run("srun -N1 -w " + cluster.nodes()[i] + " hostname -I");
    EXPECT_EQ(addresses.code, 0) << addresses.output;
    EXPECT_EQ(addresses.output, cluster.node_address(i) + " \n");
  }
  EXPECT_NE(cluster.node_address(0), cluster.node_address(1));
}

// A job reaches a server of the test process (a fake model endpoint, a collector) at the host's
// address on the bridge; 127.0.0.1 in a job would be the node's own loopback.
TEST(SlurmCluster, ANodeReachesAServerOfTheTestAtTheHostAddress) {
  SlurmCluster cluster(2);
  gym::test::ChildProcess server(
      {"/usr/bin/python3", "-c",
       "import socket, sys\n"
       "listener = socket.create_server((sys.argv[1], 0))\n"
       "print('LISTENING', listener.getsockname()[1], flush=True)\n"
       "connection, peer = listener.accept()\n"
       "connection.sendall(f'hello from the host to {peer[0]}\\n'.encode())\n",
       cluster.host_address()});
  const int port = server.wait_port();
  ASSERT_GT(port, 0);

  auto hello = cluster.run("srun -N1 -w n2 bash -c 'exec 3<>/dev/tcp/" + cluster.host_address() +
                           "/" + std::to_string(port) + " && cat <&3'");
  EXPECT_EQ(hello.code, 0) << hello.output;
  EXPECT_EQ(hello.output, "hello from the host to " + cluster.node_address(1) + "\n");
}

TEST(SlurmCluster, AServerStepOnOneNodeAnswersADriverStepOnAnother) {
  SlurmCluster cluster(2);
  gym::test::TempDir job;  // under /tmp, which every node shares
  job.write("server.py", kServer);
  job.write("driver.py", kDriver);
  auto script = job.write("submission.sh", kSubmission);

  std::string why;
  auto id = submit(cluster,
                   "-N2 --ntasks-per-node=1 --chdir=" + job.path() +
                       " --output=" + job.file("job.out") + " " + script,
                   &why);
  ASSERT_FALSE(id.empty()) << why;
  auto end = cluster.wait_job(id, kJobLimit);
  auto out = gym::test::read_text(job.file("job.out"));
  auto server_log = gym::test::read_text(job.file("server.log"));
  EXPECT_EQ(end.state, "COMPLETED") << end.record << out << server_log;
  EXPECT_EQ(end.exit_code, 0) << end.record;

  const std::string n2 = cluster.node_address(1) + ":7000";
  EXPECT_TRUE(contains(out, "driver on n1 reached " + n2 + ": pong from n2\n")) << out;
  EXPECT_TRUE(contains(server_log, "server on n2 listening at " + n2 + "\n")) << server_log;
  // the server drained after its SIGTERM and ended the step itself (slurmstepd's "STEP ...
  // CANCELLED" line on srun's stderr may come between)
  auto got = server_log.find("server on n2 got SIGTERM\n");
  EXPECT_NE(got, std::string::npos) << server_log;
  EXPECT_NE(server_log.find("server drained\n", got), std::string::npos) << server_log;
  EXPECT_TRUE(contains(out, "server step exit 0\n")) << out;
}

TEST(SlurmCluster, TeardownLeavesNoProcessNetworkOrDirectoryBehind) {
  std::optional<SlurmCluster> cluster(std::in_place, 2);
  const std::string dir = cluster->dir();
  std::string why;
  auto id = submit(*cluster, "-N2 --output=/dev/null --wrap 'srun hostname'", &why);
  ASSERT_FALSE(id.empty()) << why;
  EXPECT_EQ(cluster->wait_job(id, kJobLimit).state, "COMPLETED");

  const auto pid_ns = pid_namespace(std::stoi(gym::test::read_text(dir + "/init.pid")));
  ASSERT_FALSE(pid_ns.empty());
  // bash (the namespace's init), munged, slurmctld and its slurmscriptd, a slurmd per node
  EXPECT_GE(processes_in(pid_ns).size(), 6u) << joined(processes_in(pid_ns));
  const auto network = gym::test::read_lines(dir + "/network");  // "bridge NAME", ...
  ASSERT_EQ(network.size(), 5u) << joined(network);
  for (const auto& line : network)
    EXPECT_TRUE(
        network_name_exists(line.substr(0, line.find(' ')), line.substr(line.find(' ') + 1)))
        << line;

  cluster.reset();

  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(joined(processes_in(pid_ns)), "");
  EXPECT_EQ(joined(processes_mentioning(dir)), "");
  for (const auto& line : network)
    EXPECT_FALSE(
        network_name_exists(line.substr(0, line.find(' ')), line.substr(line.find(' ') + 1)))
        << line;
}

TEST(SlurmCluster, TeardownKillsAJobStillRunning) {
  std::optional<SlurmCluster> cluster(std::in_place, 2);
  // The job's two tasks (the batch step on n1, a step on n2) carry this name as argv[0].
  const std::string marker = "gym-slurm-test-" + fs::path(cluster->dir()).filename().string();
  gym::test::TempDir job;
  auto script = job.write("sleeper.sh",
                          "#!/bin/bash\n"
                          "srun --overlap -N1 -n1 -w n2 bash -c 'exec -a " +
                              marker +
                              " sleep 600' &\n"
                              "exec -a " +
                              marker + " sleep 600\n");
  std::string why;
  auto id = submit(*cluster, "-N2 --output=/dev/null " + script, &why);
  ASSERT_FALSE(id.empty()) << why;
  ASSERT_TRUE(wait_for_processes(marker, 2)) << joined(processes_mentioning(marker));
  EXPECT_EQ(cluster->wait_job(id, std::chrono::seconds(0)).state, "RUNNING");

  cluster.reset();

  EXPECT_EQ(joined(processes_mentioning(marker)), "");
}

TEST(SlurmCluster, TwoClustersUpAtOnceWorkIndependently) {
  std::optional<SlurmCluster> first(std::in_place, 2);
  SlurmCluster second(2);
  EXPECT_NE(first->dir(), second.dir());
  EXPECT_NE(first->node_address(0), second.node_address(0));

  std::string why;
  auto only_in_first =
      submit(*first, "--job-name=only-in-first --output=/dev/null --wrap 'sleep 600'", &why);
  ASSERT_FALSE(only_in_first.empty()) << why;
  auto in_first = first->run("squeue -h -o %j");
  EXPECT_TRUE(contains(in_first.output, "only-in-first\n")) << in_first.output;
  auto in_second = second.run("squeue -h -o %j");
  EXPECT_EQ(in_second.code, 0) << in_second.output;
  EXPECT_FALSE(contains(in_second.output, "only-in-first")) << in_second.output;

  auto id = submit(second, "-N2 --output=/dev/null --wrap 'srun hostname'", &why);
  ASSERT_FALSE(id.empty()) << why;
  EXPECT_EQ(second.wait_job(id, kJobLimit).state, "COMPLETED");

  first.reset();  // the second keeps working
  auto hostnames = second.run("srun -N2 hostname | sort");
  EXPECT_EQ(hostnames.code, 0) << hostnames.output;
  EXPECT_EQ(hostnames.output, "n1\nn2\n");
}

}  // namespace
