// Which files the config loader reads: regular files only. A FIFO is refused at once (reading
// it would wait for a writer forever), as are devices, sockets and directories, each named with
// what it is; a symlink loop is called one, not "not found".
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

#include "core/config.h"
#include "core_test_support.h"
#include "temp_dir.h"

namespace gym::core {
namespace {

using gym::test::TempDir;
using testing::config_error_of;
using testing::sources_in;

// The ConfigError of loading `paths` (from `dir`). A loader that blocks on a FIFO is released
// after a generous bound by opening the FIFO's write end, and the test fails.
std::string error_loading(const TempDir& dir, std::vector<std::string> paths,
                          const std::string& fifo = "") {
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = std::move(paths);
  auto load =
      std::async(std::launch::async, [s] { return config_error_of([&] { load_config(s); }); });
  if (load.wait_for(std::chrono::seconds(20)) != std::future_status::ready && !fifo.empty()) {
    ADD_FAILURE() << "loading a config that names a FIFO blocked";
    const int fd = ::open(fifo.c_str(), O_WRONLY);  // the reader's open returns, then EOF
    ::close(fd);
  }
  return load.get();
}

TEST(ConfigFiles, AFifoIsRefusedAtOnceNamingWhatItIs) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto error = error_loading(dir, {"pipe.yaml"}, fifo);
  EXPECT_NE(error.find("config file '" + fifo + "' is a FIFO (named pipe)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("only regular files"), std::string::npos) << error;
  // Named by a file's config_paths: the same.
  dir.write("main.yaml", "config_paths: [pipe.yaml]\nx: 1\n");
  error = error_loading(dir, {"main.yaml"}, fifo);
  EXPECT_NE(error.find("is a FIFO (named pipe)"), std::string::npos) << error;
}

TEST(ConfigFiles, DevicesSocketsAndDirectoriesAreRefused) {
  TempDir dir;
  auto error = error_loading(dir, {"/dev/null"});
  EXPECT_NE(error.find("'/dev/null' is a character device"), std::string::npos) << error;
  std::filesystem::create_directory(dir.file("configs.yaml"));
  error = error_loading(dir, {"configs.yaml"});
  EXPECT_NE(error.find("is a directory"), std::string::npos) << error;

  const std::string socket_path = dir.file("s.yaml");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, socket_path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  error = error_loading(dir, {"s.yaml"});
  ::close(fd);
  EXPECT_NE(error.find("'" + socket_path + "' is a socket"), std::string::npos) << error;
}

TEST(ConfigFiles, ASymlinkLoopIsCalledOneNotMissing) {
  TempDir dir;
  std::filesystem::create_symlink("b.yaml", dir.file("a.yaml"));
  std::filesystem::create_symlink("a.yaml", dir.file("b.yaml"));
  auto error = error_loading(dir, {"a.yaml"});
  EXPECT_NE(error.find("is a symlink loop"), std::string::npos) << error;
  EXPECT_EQ(error.find("not found"), std::string::npos) << error;
  // Through an include, and with an absolute path.
  dir.write("main.yaml", "config_paths: [b.yaml]\n");
  error = error_loading(dir, {"main.yaml"});
  EXPECT_NE(error.find("in " + dir.file("main.yaml")), std::string::npos) << error;
  EXPECT_NE(error.find("is a symlink loop"), std::string::npos) << error;
  error = error_loading(dir, {dir.file("a.yaml")});
  EXPECT_NE(error.find("is a symlink loop"), std::string::npos) << error;
}

TEST(ConfigFiles, ASymlinkToARegularFileIsRead) {
  TempDir dir;
  dir.write("real.yaml", "x: 1\n");
  std::filesystem::create_symlink("real.yaml", dir.file("link.yaml"));
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"link.yaml"};
  EXPECT_EQ(load_config(s).at("x"), 1);
}

}  // namespace
}  // namespace gym::core
