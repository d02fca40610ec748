// Helpers for the daemon tests: loopback ports and temporary directories.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

namespace caesium::test {

// A port on 127.0.0.1 that is free for `type` (SOCK_DGRAM / SOCK_STREAM) now, chosen at
// random below the kernel's ephemeral range.  Not the kernel's pick for port 0: that
// comes from the ephemeral range, which the kernel also draws from for every outgoing
// connection of every process, so with tests running in parallel a port "just handed
// out" and released could be taken as some connection's source port before the test
// bound it (CI, 2026-11-23: "address already in use" on a node's API port).  Below the
// range only an explicit bind takes a port; two parallel tests drawing the same one of
// ~20,000 is left to chance (and a bind that fails here moves on to another).
inline int free_port(int type) {
  int range_start = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    int lo = 0, hi = 0;
    if (std::fscanf(f, "%d %d", &lo, &hi) == 2 && lo > 12000) range_start = lo;
    std::fclose(f);
  }
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> pick(10000, range_start - 1);
  for (int tries = 0; tries < 200; ++tries) {
    const int port = pick(rng);
    const int fd = ::socket(AF_INET, type, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return port;
  }
  FAIL("no free loopback port below the ephemeral range after 200 tries");
  return 0;
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
