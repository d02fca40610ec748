// What `caesium-bench cluster` is made of (bench/cluster_bench.cpp: the burst;
// bench/cluster_sustained.cpp: sustained load and capacity): processes that die with the
// benchmark, a minimal HTTP/1.1 client, three real `caesium node` processes on loopback,
// the API load, and the executions read back from the nodes' logs.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/registry.h"
#include "schedule/scheduler.h"

namespace caesium::bench::harness {

int64_t wall_ms();   // realtime clock
double mono_s();     // monotonic clock
void sleep_ms(int64_t ms);
uint16_t free_port(int type);  // a free loopback port (SOCK_STREAM or SOCK_DGRAM)
// Starts argv with stdout and stderr to log_path; the child dies with this process.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path);
int run_and_wait(const std::vector<std::string>& argv, const std::string& log_path);
// A /proc/<pid>/status field in bytes (VmRSS, RssAnon); 0 when unknown.
int64_t status_bytes(pid_t pid, const std::string& field);
// CPU time (user + system, all threads) a process has used so far, in microseconds.
int64_t cpu_us(pid_t pid);
std::string http_request(const std::string& method, const std::string& path, const std::string& body,
                         const std::string& token);

// ---- a minimal HTTP/1.1 client (keep-alive, pipelining) -----------------------------

class HttpConn {
 public:
  ~HttpConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connect_to(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  bool send_all(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // One response: its status (0 when the connection failed) and body.
  int read_response(std::string& body) {
    size_t header_end;
    while ((header_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return 0;
    }
    const std::string head = buf_.substr(0, header_end);
    int status = 0;
    if (head.size() > 12) status = std::atoi(head.c_str() + 9);
    size_t length = 0;
    std::string lower = head;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (auto p = lower.find("content-length:"); p != std::string::npos) length = std::strtoul(lower.c_str() + p + 15, nullptr, 10);
    while (buf_.size() < header_end + 4 + length) {
      if (!fill()) return 0;
    }
    body = buf_.substr(header_end + 4, length);
    buf_.erase(0, header_end + 4 + length);
    return status;
  }

 private:
  bool fill() {
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  std::string buf_;
};


// ---- the cluster -------------------------------------------------------------------

struct BenchNode {
  std::string id;
  uint16_t gossip = 0, stream = 0, api = 0;
  std::string dir, log;
  pid_t pid = -1;
};

inline constexpr const char* kToken = "bench-token";

// --prepare-ahead-ms MS: every node's [scheduler] prepare_ahead; absent, the nodes run with
// the shipped default (not written to their files), which the figures name.
inline std::optional<int64_t> prepare_ahead_arg(const Args& args) {
  if (!args.has("prepare-ahead-ms")) return std::nullopt;
  return args.get_int("prepare-ahead-ms", 0);
}
inline int64_t effective_prepare_ahead(std::optional<int64_t> given) {
  return given.value_or(schedule::SchedulerOptions{}.prepare_ahead_ms);
}

class Cluster {
 public:
  // prepare_ahead_ms: nullopt leaves [scheduler] prepare_ahead at the shipped default.
  Cluster(std::string binary, std::string dir, std::optional<int64_t> prepare_ahead_ms)
      : binary_(std::move(binary)), dir_(std::move(dir)), prepare_ahead_ms_(prepare_ahead_ms) {}
  ~Cluster() { stop(); }

  // A node that cannot bind a port picked for it (another process, or a peer's outgoing
  // connection, took it between the pick and the bind) exits at start: the cluster is then
  // started again on newly picked ports, up to three times.
  bool start(std::string& error) {
    for (int attempt = 1;; ++attempt) {
      bool bind_failed = false;
      if (start_once(error, bind_failed)) return true;
      if (!bind_failed || attempt == 3) return false;
      stop();
      nodes_.clear();
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
      std::fprintf(stderr, "cluster: %s; starting again on other ports\n", error.c_str());
    }
  }

  void stop() {
    for (auto& n : nodes_) {
      if (n.pid > 0) ::kill(n.pid, SIGTERM);
    }
    const double deadline = mono_s() + 10;
    for (auto& n : nodes_) {
      while (n.pid > 0) {
        int status = 0;
        if (::waitpid(n.pid, &status, WNOHANG) == n.pid) {
          n.pid = -1;
        } else if (mono_s() > deadline) {
          ::kill(n.pid, SIGKILL);
          ::waitpid(n.pid, &status, 0);
          n.pid = -1;
        } else {
          sleep_ms(20);
        }
      }
    }
  }

  const std::vector<BenchNode>& nodes() const { return nodes_; }

  bool get(const BenchNode& n, const std::string& path, std::string& body) const {
    HttpConn c;
    if (!c.connect_to(n.api) || !c.send_all(http_request("GET", path, "", kToken))) return false;
    return c.read_response(body) == 200;
  }

 private:
  bool start_once(std::string& error, bool& bind_failed) {
    std::filesystem::create_directories(dir_);
    if (run_and_wait({binary_, "keygen", "--out", dir_ + "/cluster.key"}, dir_ + "/keygen.log") != 0) {
      error = "caesium keygen failed (see " + dir_ + "/keygen.log)";
      return false;
    }
    std::ofstream(dir_ + "/token") << kToken << "\n";
    for (int i = 1; i <= 3; ++i) {
      BenchNode n;
      n.id = "n" + std::to_string(i);
      n.gossip = free_port(SOCK_DGRAM);
      n.stream = free_port(SOCK_STREAM);
      n.api = free_port(SOCK_STREAM);
      n.dir = dir_ + "/" + n.id;
      n.log = n.dir + "/node.log";
      std::filesystem::create_directories(n.dir);
      nodes_.push_back(n);
    }
    for (auto& n : nodes_) {
      write_config(n);
      // New data directories of a new cluster: the nodes never ran (docs/firing.md, Amnesia).
      n.pid = spawn({binary_, "node", "--config", n.dir + "/node.toml", "--first-start"}, n.log);
      if (n.pid < 0) {
        error = "could not start " + binary_;
        return false;
      }
    }
    // Formed: every node sees three alive members and a master for the volume.
    const double deadline = mono_s() + 30;
    while (mono_s() < deadline) {
      if (formed()) return true;
      for (auto& n : nodes_) {
        int status = 0;
        if (::waitpid(n.pid, &status, WNOHANG) == n.pid) {
          n.pid = -1;
          error = n.id + " exited at start; its log: " + n.log;
          std::ifstream log(n.log);
          const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
          bind_failed = text.find("address already in use") != std::string::npos;
          return false;
        }
      }
      sleep_ms(200);
    }
    error = "the cluster did not form within 30 s (logs under " + dir_ + ")";
    return false;
  }

  void write_config(const BenchNode& n) const {
    std::ostringstream seeds;
    for (const auto& m : nodes_) {
      if (m.id != n.id) seeds << (seeds.tellp() > 0 ? ", " : "") << "\"127.0.0.1:" << m.stream << "\"";
    }
    std::ofstream f(n.dir + "/node.toml");
    f << "node_id = \"" << n.id << "\"\ncluster_name = \"bench\"\ndata_dir = \"data\"\n"
      << "key_file = \"../cluster.key\"\n"
      << "gossip_listen = \"127.0.0.1:" << n.gossip << "\"\nstream_listen = \"127.0.0.1:" << n.stream << "\"\n"
      << "seeds = [" << seeds.str() << "]\nlog_level = \"info\"\nshutdown_grace = \"2s\"\n\n"
      << "[api]\nlisten = \"127.0.0.1:" << n.api << "\"\ntoken_file = \"../token\"\n\n"
      << "[gossip]\nstartup_grace = \"1s\"\n\n";
    if (prepare_ahead_ms_) f << "[scheduler]\nprepare_ahead = \"" << *prepare_ahead_ms_ << "ms\"\n\n";
    f << "[cluster]\nepoch = 1\n";
    for (size_t i = 0; i < nodes_.size(); ++i) {
      f << "[[cluster.node]]\nid = \"" << nodes_[i].id << "\"\npriority = " << 30 - 10 * static_cast<int>(i) << "\n";
    }
    f << "[[cluster.volume]]\nname = \"main\"\nreplicas = [\"n1\", \"n2\", \"n3\"]\n\n"
      << "[[handler]]\nname = \"log\"\nkind = \"builtin\"\nbuiltin = \"log\"\n";
  }

  bool formed() const {
    for (const auto& n : nodes_) {
      std::string body;
      if (!get(n, "/v1/status", body)) return false;
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_discarded()) return false;
      int alive = 0;
      for (const auto& m : j.value("members", nlohmann::json::array())) alive += m.value("state", "") == "alive";
      bool master = false;
      for (const auto& v : j.value("volumes", nlohmann::json::array())) master |= v.value("master", nlohmann::json()).is_string();
      if (alive != 3 || !master) return false;
    }
    return true;
  }

  std::string binary_;
  std::string dir_;
  std::optional<int64_t> prepare_ahead_ms_;
  std::vector<BenchNode> nodes_;
};



struct LoadResult {
  double seconds = 0;
  uint64_t ok = 0;
  uint64_t failed = 0;
  std::string first_error;
};


// Writes entries [first_index, first_index + count) named prefix<i> due at due(i), spread
// over the nodes.
LoadResult load(const Cluster& cluster, const std::string& entity, const std::string& prefix, int64_t count,
                const std::string& semantics, const std::function<int64_t(int64_t)>& due, int connections,
                int pipeline, int64_t first_index = 0);

// ---- what fired ----------------------------------------------------------------------

struct Execution {
  int64_t at_ms;
  int node;
  bool flagged;
};


// Executions of entries of `entity` found in the nodes' logs (the `log` handler's lines),
// by entry index.
std::unordered_map<int64_t, std::vector<Execution>> read_executions(const Cluster& cluster, const std::string& entity,
                                                                   const std::string& prefix);
double pct(std::vector<int64_t>& v, double p);  // sorts v
std::vector<int64_t> cpu_by_node(const Cluster& c);
int64_t rss_sum(const Cluster& c, const std::string& field = "VmRSS");
// --semantics: both, at_least_once or at_most_once; empty (with the error printed) otherwise.
std::vector<std::string> semantics_of(const std::string& which);
// The caesium binary beside this program's build, or "caesium" from the PATH.
std::string default_binary();
// The allocator `binary version` names ("mimalloc 2.0.9", "glibc malloc"), or "unknown".
std::string binary_allocator(const std::string& binary);
// Runs bench/anchors/<name>/run.sh with `args` (already quoted) and parses the one JSON
// object it prints on its last line.
bool run_anchor_runner(const std::string& dir, const std::string& name, const std::string& args, nlohmann::json& out,
                       std::string& error);

// `caesium-bench cluster --sustained RATE` and `--find-capacity` (cluster_sustained.cpp).
int run_cluster_sustained(const Args& args);

}  // namespace caesium::bench::harness
