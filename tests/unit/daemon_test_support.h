// Helpers for the daemon tests: loopback ports and temporary directories.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

namespace caesium::test {

// A port the kernel just handed out for `type` (SOCK_DGRAM / SOCK_STREAM) on 127.0.0.1.
// Another process could take it before the test binds it; on a test machine that race
// is rare enough.
inline int free_port(int type) {
  const int fd = ::socket(AF_INET, type, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "caesium-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string sub(const std::string& name) const { return path + "/" + name; }
};

}  // namespace caesium::test
