#include "slurm_cluster.h"

#include "files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gym::test {
namespace {

// `text` as one single-quoted shell word.
std::string shell_word(const std::string& text) {
  std::string word = "'";
  for (char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

// The value of `key=` in a `scontrol show ... -o` record, "" when absent.
std::string field(const std::string& record, const std::string& key) {
  auto at = record.find(" " + key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return record.substr(at, record.find_first_of(" \n", at) - at);
}

bool job_ended(const std::string& state) {
  for (const char* active : {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED",
                             "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT"})
    if (state == active) return false;
  return !state.empty();
}

}  // namespace

SlurmCluster::SlurmCluster(int nodes) {
  if (::geteuid() != 0)
    throw std::runtime_error(
        "SlurmCluster needs root and network namespaces (it makes a bridge, a network namespace "
        "per node and runs the Slurm daemons as root): run this test as root");

  // The watchdog of the script tears the cluster down once this lock is free, which happens
  // when this process dies. Close-on-exec, or every child would hold the lock as well.
  std::string lock = "/tmp/gym-slurm-owner-XXXXXX";
  owner_fd_ = ::mkostemp(lock.data(), O_CLOEXEC);
  if (owner_fd_ < 0) throw std::runtime_error("SlurmCluster: cannot create " + lock);
  owner_lock_ = lock;
  if (::flock(owner_fd_, LOCK_EX) != 0) {
    tear_down();
    throw std::runtime_error("SlurmCluster: cannot lock " + lock);
  }

  auto up = run_command("GYM_SLURM_OWNER_LOCK=" + shell_word(owner_lock_) + " " +
                        shell_word(GYM_SLURM_CLUSTER_SCRIPT) + " up " + std::to_string(nodes));
  std::string last_line;
  std::istringstream lines(up.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) last_line = line;
  if (up.code != 0 || last_line.rfind("/tmp/gym-slurm.", 0) != 0) {
    tear_down();
    throw std::runtime_error("slurm_cluster.sh up " + std::to_string(nodes) + " failed (exit " +
                             std::to_string(up.code) + "):\n" + up.output);
  }
  dir_ = last_line;

  std::istringstream listed(read_text(dir_ + "/nodes"));
  for (std::string name, address; listed >> name >> address;) {
    nodes_.push_back(name);
    addresses_.push_back(address);
  }
  std::istringstream controller(read_text(dir_ + "/controller"));
  std::string host_name;
  controller >> host_name >> host_address_;
  if (nodes_.size() != static_cast<std::size_t>(nodes) || host_address_.empty()) {
    std::string what = "slurm_cluster.sh up: " + dir_ + "/nodes does not list " +
                       std::to_string(nodes) + " nodes, or " + dir_ + "/controller no address";
    tear_down();
    throw std::runtime_error(what);
  }
}

SlurmCluster::~SlurmCluster() { tear_down(); }

void SlurmCluster::tear_down() noexcept {
  if (!dir_.empty()) {
    auto down = run_command(shell_word(GYM_SLURM_CLUSTER_SCRIPT) + " down " + shell_word(dir_));
    if (down.code != 0)
      std::fprintf(stderr, "slurm_cluster.sh down %s failed (exit %d):\n%s\n", dir_.c_str(),
                   down.code, down.output.c_str());
    dir_.clear();
  }
  if (owner_fd_ >= 0) {
    ::unlink(owner_lock_.c_str());
    ::close(owner_fd_);
    owner_fd_ = -1;
  }
}

std::vector<std::string> SlurmCluster::env() const {
  return {"SLURM_CONF=" + dir_ + "/etc/slurm.conf"};
}

CommandResult SlurmCluster::run(const std::string& shell_command) const {
  std::string exports;
  for (const auto& entry : env()) {
    auto eq = entry.find('=');
    exports += "export " + entry.substr(0, eq) + "=" + shell_word(entry.substr(eq + 1)) + "; ";
  }
  // Braces, so that the 2>&1 run_command appends covers the whole command.
  return run_command(exports + "{ " + shell_command + "\n}");
}

SlurmJobEnd SlurmCluster::wait_job(const std::string& job_id, std::chrono::seconds limit) const {
  auto deadline = std::chrono::steady_clock::now() + limit;
  SlurmJobEnd end;
  for (;;) {
    auto shown = run("scontrol show job -o " + shell_word(job_id));
    end.record = shown.output;
    end.state = field(" " + shown.output, "JobState");
    if (job_ended(end.state) || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto exit_code = field(" " + end.record, "ExitCode");  // "N:S"
  auto colon = exit_code.find(':');
  if (job_ended(end.state) && colon != std::string::npos) {
    end.exit_code = std::stoi(exit_code.substr(0, colon));
    end.signal = std::stoi(exit_code.substr(colon + 1));
  }
  return end;
}

}  // namespace gym::test
