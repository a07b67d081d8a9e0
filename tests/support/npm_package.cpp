#include "npm_package.h"

#include "process.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace gym::test {
namespace fs = std::filesystem;

namespace {

bool not_found(const char* program) {
  return std::string_view(program).find("NOTFOUND") != std::string_view::npos;
}

// Closes a file descriptor (and so drops its flock) however the scope ends.
struct FileLock {
  int fd = -1;
  explicit FileLock(const fs::path& path) {
    fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd >= 0) ::flock(fd, LOCK_EX);
  }
  ~FileLock() {
    if (fd >= 0) ::close(fd);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
};

}  // namespace

std::string npm_install(const NpmPackage& package, std::string* why) {
  const fs::path dir = fs::path(build_path("tests/integration/" + package.folder));
  const fs::path modules = dir / "node_modules";
  if (fs::exists(modules / package.present)) return modules.string();
  if (not_found(GYM_NPM)) {
    *why = "npm not found at configure time; install it (scripts/setup.sh)";
    return {};
  }
  fs::create_directories(dir);
  FileLock lock(dir / ".install.lock");
  if (fs::exists(modules / package.present)) return modules.string();  // raced
  // Several packages are separated by spaces; each is one quoted word.
  std::string words;
  for (std::size_t start = 0; start < package.spec.size();) {
    const std::size_t end = std::min(package.spec.find(' ', start), package.spec.size());
    if (end > start) words += " '" + package.spec.substr(start, end - start) + "'";
    start = end + 1;
  }
  const std::string command = fmt::format(
      "cd '{}' && '{}' install --no-audit --no-fund --silent{} >&2", dir.string(), GYM_NPM, words);
  if (std::system(command.c_str()) != 0 || !fs::exists(modules / package.present)) {
    *why = "`npm install " + package.spec + "` failed (no registry access?)";
    return {};
  }
  return modules.string();
}

std::string node_binary(std::string* why) {
  if (not_found(GYM_NODE)) {
    *why = "node (Node.js 20) was not found at configure time; install it (scripts/setup.sh)";
    return {};
  }
  return GYM_NODE;
}

}  // namespace gym::test
