// The pieces `caesium-bench cluster` is made of (bench/cluster_harness.h): processes, a
// small HTTP client, a three-node cluster on loopback, the API load, and reading what fired.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "bench/cluster_harness.h"

namespace caesium::bench::harness {

namespace fs = std::filesystem;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void sleep_ms(int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

uint16_t free_port(int type) {
  const int fd = ::socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

// ---- processes -------------------------------------------------------------------

pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  ::_exit(127);
}

int run_and_wait(const std::vector<std::string>& argv, const std::string& log_path) {
  const pid_t pid = spawn(argv, log_path);
  if (pid < 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A /proc/<pid>/status field in bytes (VmRSS: resident set; RssAnon: its anonymous part,
// the rest being file pages such as LMDB's memory map); 0 when unknown.
int64_t status_bytes(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1) * 1024;
  }
  return 0;
}

// CPU time (user + system, all threads) a process has used so far, in microseconds.
int64_t cpu_us(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 (1-based): utime, stime
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  return (utime + stime) * 1'000'000 / sysconf(_SC_CLK_TCK);
}

std::string http_request(const std::string& method, const std::string& path, const std::string& body,
                         const std::string& token) {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "PUT" || method == "POST") {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

// ---- loading -----------------------------------------------------------------------
// Writes entries [0, count) named prefix<i> due at due(i), spread over the nodes.
LoadResult load(const Cluster& cluster, const std::string& entity, const std::string& prefix, int64_t count,
                const std::string& semantics, const std::function<int64_t(int64_t)>& due, int connections,
                int pipeline, int64_t first_index) {
  LoadResult r;
  std::atomic<int64_t> next{first_index};
  const int64_t end = first_index + count;
  std::mutex mu;
  const double t0 = mono_s();
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      const BenchNode& node = cluster.nodes()[static_cast<size_t>(c) % cluster.nodes().size()];
      HttpConn conn;
      uint64_t ok = 0, failed = 0;
      std::string error;
      if (!conn.connect_to(node.api)) {
        error = "cannot connect to " + node.id;
      } else {
        for (;;) {
          const int64_t first = next.fetch_add(pipeline);
          if (first >= end) break;
          const int64_t last = std::min<int64_t>(end, first + pipeline);
          std::string batch;
          for (int64_t i = first; i < last; ++i) {
            const std::string body = "{\"timer\":{\"at\":\"" + format_rfc3339_utc(due(i)) + "\"},\"handler\":\"log\",\"semantics\":\"" +
                                     semantics + "\"}";
            batch += http_request("PUT", "/v1/volumes/main/entities/" + entity + "/schedule/" + prefix + std::to_string(i),
                                  body, kToken);
          }
          if (!conn.send_all(batch)) {
            failed += static_cast<uint64_t>(last - first);
            error = "connection to " + node.id + " failed";
            break;
          }
          for (int64_t i = first; i < last; ++i) {
            std::string body;
            const int status = conn.read_response(body);
            if (status == 200 || status == 201) {
              ++ok;
            } else {
              ++failed;
              if (error.empty()) error = node.id + ": " + std::to_string(status) + " " + body.substr(0, 200);
            }
          }
        }
      }
      std::lock_guard lock(mu);
      r.ok += ok;
      r.failed += failed;
      if (r.first_error.empty()) r.first_error = error;
    });
  }
  for (auto& t : threads) t.join();
  r.seconds = mono_s() - t0;
  return r;
}

// Executions of entries of `entity` found in the nodes' logs (the `log` handler's lines),
// by entry index.
std::unordered_map<int64_t, std::vector<Execution>> read_executions(const Cluster& cluster, const std::string& entity,
                                                                   const std::string& prefix) {
  std::unordered_map<int64_t, std::vector<Execution>> out;
  const std::string marker = " entity=" + entity + " entry=" + prefix;
  for (size_t n = 0; n < cluster.nodes().size(); ++n) {
    std::ifstream f(cluster.nodes()[n].log);
    std::string line;
    while (std::getline(f, line)) {
      const size_t m = line.find(marker);
      if (m == std::string::npos || line.find(" handler log: ") == std::string::npos) continue;
      const size_t sp = line.find(' ');
      auto at = parse_rfc3339_ms(std::string_view(line).substr(0, sp));
      if (!at) continue;
      const int64_t index = std::atoll(line.c_str() + m + marker.size());
      out[index].push_back(Execution{*at, static_cast<int>(n), line.find("possible_duplicate=true") != std::string::npos});
    }
  }
  return out;
}


double pct(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))]);
}

std::vector<int64_t> cpu_by_node(const Cluster& c) {
  std::vector<int64_t> v;
  for (const auto& n : c.nodes()) v.push_back(cpu_us(n.pid));
  return v;
}

int64_t rss_sum(const Cluster& c, const std::string& field) {
  int64_t s = 0;
  for (const auto& n : c.nodes()) s += status_bytes(n.pid, field);
  return s;
}


std::string default_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path sibling = self.parent_path().parent_path() / "node" / "caesium";
    if (fs::exists(sibling)) return sibling.string();
  }
  return "caesium";
}


std::string binary_allocator(const std::string& binary) {
  const std::string command = "'" + binary + "' version 2>/dev/null";
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return "unknown";
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  const std::string marker = "allocator: ";
  const size_t at = out.find(marker);
  if (at == std::string::npos) return "unknown";
  const size_t end = out.find('\n', at);
  return out.substr(at + marker.size(), end == std::string::npos ? std::string::npos : end - at - marker.size());
}

std::vector<std::string> semantics_of(const std::string& which) {
  std::vector<std::string> out;
  if (which == "both" || which == "at_least_once") out.push_back("at_least_once");
  if (which == "both" || which == "at_most_once") out.push_back("at_most_once");
  if (out.empty()) std::fprintf(stderr, "cluster: --semantics is both, at_least_once or at_most_once\n");
  return out;
}

bool run_anchor_runner(const std::string& dir, const std::string& name, const std::string& args, nlohmann::json& out,
                       std::string& error) {
  const std::string runner = dir + "/" + name + "/run.sh";
  if (!fs::exists(runner)) {
    error = "no anchor '" + name + "' (" + runner + " does not exist)";
    return false;
  }
  const std::string cmd = "bash '" + runner + "' " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    error = "cannot run " + runner;
    return false;
  }
  std::string output, last;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) output += buf;
  const int status = ::pclose(p);
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  if (status != 0) {
    error = "the " + name + " anchor failed (exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
            "; bench/anchors/" + name + "/install.sh installs what it needs)";
    return false;
  }
  out = nlohmann::json::parse(last, nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    error = "the " + name + " anchor printed no figures: " + last;
    return false;
  }
  return true;
}

}  // namespace caesium::bench::harness
