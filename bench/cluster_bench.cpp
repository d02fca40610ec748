// caesium-bench cluster: three real `caesium node` processes on loopback, N one-shot
// entries due within a short window, written through the HTTP API; what fired, where,
// how late, and what it cost.
//
//   caesium-bench cluster [--json] [--entries 100000] [--window-ms 1000]
//                         [--semantics both|at_least_once|at_most_once]
//                         [--connections 24] [--pipeline 16] [--bin PATH] [--dir DIR] [--keep]
//                         [--no-baseline]
//
// For each semantics a fresh cluster (new data directories) is started and formed;
// then:
//   1. calibration: 2,000 entries due in 2100 are written to learn the API write rate;
//   2. load: N entries `at` T0 + i·window/N (T0 far enough ahead for the load to finish
//      at the measured rate), over --connections keep-alive connections spread over
//      the three nodes, --pipeline requests in flight per connection; each answer
//      means "durable on the receiving replica" (docs/api.md).  API write throughput
//      = N / load time;
//   3. firing: the entries' handler is the builtin `log` (noop plus one log line per
//      run), which is how the benchmark sees every execution: the line's node, time
//      (the node's realtime clock, ms) and attempt.  Lateness = first execution -
//      scheduled instant.  Duplicates = occurrences executed more than once; misses =
//      occurrences never executed.  Occurrences per second = executed / (time of the
//      last first execution - T0), at most N / window: the offered load;
//   4. memory: resident set of each node before the load and after it (all three
//      replicas hold every entry): (after - before) / stored entries, per 1M.
//   5. CPU per occurrence: the user + system time the three nodes used from the end of
//      the load until every occurrence ran, divided by the occurrences executed.  The
//      firing path is CPU-bound on this machine, so this is the figure that moves when
//      the path gets cheaper.  It still moves with the machine's other tenants (cache
//      and memory contention), if less than occurrences/s; tests/sim/perf_burst_100k.toml
//      measures the node code's share deterministically.
//   6. baseline, measured in the same run after the clusters are stopped (skip it with
//      --no-baseline): the same N timers due in the same window, fired by one process
//      that only records each firing durably (bench/timer_floor.h).  Caesium's figures
//      are also printed as ratios to it, which move less with the machine than the
//      figures themselves.
//   7. the peer, with --anchor bullmq, measured in the same run after the baseline: the
//      same N jobs due in the same window as BullMQ delayed jobs on one throwaway Redis,
//      one worker process of --anchor-concurrency (bench/anchors/bullmq/: run.sh starts
//      and stops the Redis server, anchor.mjs measures; install.sh installs them on
//      request).  Caesium's figures are printed as ratios to its figures too.
// Nodes are stopped with SIGTERM (SIGKILL after 10 s) and die with the benchmark
// (PR_SET_PDEATHSIG).  Without --anchor no peer is measured, and no figure or ratio for
// one is printed: a figure the run did not measure is not printed.
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
#include "bench/registry.h"
#include "bench/timer_floor.h"

namespace caesium::bench {
namespace {

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

std::string http_request(const std::string& method, const std::string& path, const std::string& body,
                         const std::string& token) {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "PUT" || method == "POST") {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

// ---- the cluster -------------------------------------------------------------------

struct BenchNode {
  std::string id;
  uint16_t gossip = 0, stream = 0, api = 0;
  std::string dir, log;
  pid_t pid = -1;
};

const char* kToken = "bench-token";

class Cluster {
 public:
  Cluster(std::string binary, std::string dir, int64_t prepare_ahead_ms)
      : binary_(std::move(binary)), dir_(std::move(dir)), prepare_ahead_ms_(prepare_ahead_ms) {}
  ~Cluster() { stop(); }

  bool start(std::string& error) {
    fs::create_directories(dir_);
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
      fs::create_directories(n.dir);
      nodes_.push_back(n);
    }
    for (auto& n : nodes_) {
      write_config(n);
      n.pid = spawn({binary_, "node", "--config", n.dir + "/node.toml"}, n.log);
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
          return false;
        }
      }
      sleep_ms(200);
    }
    error = "the cluster did not form within 30 s (logs under " + dir_ + ")";
    return false;
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
    if (prepare_ahead_ms_ > 0) f << "[scheduler]\nprepare_ahead = \"" << prepare_ahead_ms_ << "ms\"\n\n";
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
  int64_t prepare_ahead_ms_ = 0;
  std::vector<BenchNode> nodes_;
};

// ---- loading -----------------------------------------------------------------------

struct LoadResult {
  double seconds = 0;
  uint64_t ok = 0;
  uint64_t failed = 0;
  std::string first_error;
};

// Writes entries [0, count) named prefix<i> due at due(i), spread over the nodes.
template <class Due>
LoadResult load(const Cluster& cluster, const std::string& entity, const std::string& prefix, int64_t count,
                const std::string& semantics, Due due, int connections, int pipeline) {
  LoadResult r;
  std::atomic<int64_t> next{0};
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
          if (first >= count) break;
          const int64_t last = std::min<int64_t>(count, first + pipeline);
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

// ---- what fired ----------------------------------------------------------------------

struct Execution {
  int64_t at_ms;
  int node;
  bool flagged;
};

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

struct Figures {
  std::string semantics;
  int64_t due = 0;
  int64_t executed = 0;      // occurrences executed at least once
  int64_t executions = 0;
  int64_t duplicates = 0;    // occurrences executed more than once
  int64_t misses = 0;        // occurrences never executed
  int64_t flagged = 0;       // executions flagged possible_duplicate
  int64_t early = 0;
  double occ_per_s = 0;
  double late_p50 = 0, late_p99 = 0, late_max = 0;
  double api_writes_per_s = 0;
  double api_seconds = 0;
  double rss_mib_per_1m = 0;
  int64_t rss_before = 0, rss_after = 0, rss_end = 0;  // summed over the nodes, bytes
  int64_t anon_before = 0, anon_after = 0;
  double anon_mib_per_1m = 0;  // the anonymous part (heap): without LMDB's mapped pages
  std::vector<int64_t> executions_by_node;
  // CPU the three nodes used from the end of the load until every occurrence ran, per
  // occurrence executed: what the firing path costs (see the header comment, step 5).
  double cpu_us_per_occurrence = 0;
  std::vector<double> cpu_s_by_node;
};

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

int64_t rss_sum(const Cluster& c, const std::string& field = "VmRSS") {
  int64_t s = 0;
  for (const auto& n : c.nodes()) s += status_bytes(n.pid, field);
  return s;
}

bool run_one(const std::string& binary, const std::string& dir, const std::string& semantics, int64_t entries,
             int64_t window_ms, int connections, int pipeline, int64_t prepare_ahead_ms, Figures& f,
             std::string& error) {
  Cluster cluster(binary, dir, prepare_ahead_ms);
  if (!cluster.start(error)) return false;
  f.semantics = semantics;
  f.due = entries;
  sleep_ms(1000);  // let the first syncs settle before measuring memory
  f.rss_before = rss_sum(cluster);
  f.anon_before = rss_sum(cluster, "RssAnon");

  constexpr int64_t kCalibration = 2000;
  const int64_t far = 4'102'444'800'000;  // 2100-01-01
  auto calib = load(cluster, "calib", "c", kCalibration, semantics, [&](int64_t i) { return far + i * 1000; },
                    connections, pipeline);
  if (calib.failed > 0) {
    error = "calibration writes failed: " + calib.first_error;
    return false;
  }
  const double rate = static_cast<double>(kCalibration) / calib.seconds;
  // Preparing ahead starts prepare_ahead before the window: after the load, not during it.
  const int64_t lead_ms = 3000 + prepare_ahead_ms + static_cast<int64_t>(1500.0 * static_cast<double>(entries) / rate);
  const int64_t t0 = (wall_ms() + lead_ms) / 1000 * 1000 + 1000;
  auto due = [&](int64_t i) { return t0 + i * window_ms / entries; };
  auto loaded = load(cluster, "bench", "e", entries, semantics, due, connections, pipeline);
  if (loaded.failed > 0) {
    error = std::to_string(loaded.failed) + " writes failed: " + loaded.first_error;
    return false;
  }
  if (wall_ms() > t0 - 200) {
    error = "loading took " + std::to_string(loaded.seconds) + " s, longer than the lead (" +
            std::to_string(lead_ms) + " ms from a calibrated " + std::to_string(static_cast<int64_t>(rate)) + " writes/s)";
    return false;
  }
  f.api_seconds = loaded.seconds;
  f.api_writes_per_s = static_cast<double>(entries) / loaded.seconds;
  f.rss_after = rss_sum(cluster);
  f.anon_after = rss_sum(cluster, "RssAnon");
  const int64_t stored = entries + kCalibration;
  f.anon_mib_per_1m = static_cast<double>(f.anon_after - f.anon_before) / 3.0 / static_cast<double>(stored) * 1e6 /
                      (1024.0 * 1024.0);
  f.rss_mib_per_1m = static_cast<double>(f.rss_after - f.rss_before) / 3.0 / static_cast<double>(stored) * 1e6 /
                     (1024.0 * 1024.0);

  const std::vector<int64_t> cpu_before = cpu_by_node(cluster);
  // Wait for the window to pass, then until every occurrence ran or 30 s more went by.
  sleep_ms(t0 + window_ms + 2000 - wall_ms());
  std::unordered_map<int64_t, std::vector<Execution>> runs;
  const int64_t give_up = wall_ms() + 30'000;
  for (;;) {
    runs = read_executions(cluster, "bench", "e");
    if (static_cast<int64_t>(runs.size()) >= entries || wall_ms() > give_up) break;
    sleep_ms(1000);
  }
  const std::vector<int64_t> cpu_after = cpu_by_node(cluster);
  int64_t cpu_total = 0;
  for (size_t i = 0; i < cpu_after.size(); ++i) {
    cpu_total += cpu_after[i] - cpu_before[i];
    f.cpu_s_by_node.push_back(static_cast<double>(cpu_after[i] - cpu_before[i]) / 1e6);
  }
  sleep_ms(1000);  // late duplicates, if any, get a chance to show
  runs = read_executions(cluster, "bench", "e");
  f.rss_end = rss_sum(cluster);
  for (const auto& n : cluster.nodes()) {  // kept with --keep, for a look at where time went
    std::string body;
    if (cluster.get(n, "/metrics", body)) std::ofstream(n.dir + "/metrics.txt") << body;
  }
  cluster.stop();

  std::vector<int64_t> late;
  int64_t last_first = t0;
  f.executions_by_node.assign(3, 0);
  for (int64_t i = 0; i < entries; ++i) {
    auto it = runs.find(i);
    if (it == runs.end() || it->second.empty()) {
      ++f.misses;
      continue;
    }
    auto& ex = it->second;
    ++f.executed;
    f.executions += static_cast<int64_t>(ex.size());
    if (ex.size() > 1) ++f.duplicates;
    int64_t first = ex[0].at_ms;
    for (const auto& e : ex) {
      first = std::min(first, e.at_ms);
      f.flagged += e.flagged;
      ++f.executions_by_node[static_cast<size_t>(e.node)];
      if (e.at_ms < due(i)) ++f.early;
    }
    late.push_back(first - due(i));
    last_first = std::max(last_first, first);
  }
  f.late_p50 = pct(late, 0.50);
  f.late_p99 = pct(late, 0.99);
  f.late_max = late.empty() ? 0 : static_cast<double>(late.back());
  const double span_s = static_cast<double>(std::max<int64_t>(window_ms, last_first - t0)) / 1000.0;
  f.occ_per_s = static_cast<double>(f.executed) / span_s;
  if (f.executed > 0) f.cpu_us_per_occurrence = static_cast<double>(cpu_total) / static_cast<double>(f.executed);
  return true;
}

// The peer's figures, as its runner printed them (bench/anchors/<name>/run.sh: one JSON
// object on its last line of output).
struct AnchorFigures {
  nlohmann::json raw;
  double occ_per_s = 0, late_p99 = 0, cpu_us_per_occurrence = 0;
  int64_t duplicates = 0, misses = 0, early = 0;
};

bool run_anchor(const std::string& dir, const std::string& name, int64_t entries, int64_t window_ms, int concurrency,
                AnchorFigures& out, std::string& error) {
  const std::string runner = dir + "/" + name + "/run.sh";
  if (!fs::exists(runner)) {
    error = "no anchor '" + name + "' (" + runner + " does not exist)";
    return false;
  }
  const std::string cmd = "bash '" + runner + "' --jobs " + std::to_string(entries) + " --window-ms " +
                          std::to_string(window_ms) + " --concurrency " + std::to_string(concurrency);
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
  try {
    out.raw = nlohmann::json::parse(last);
    out.occ_per_s = out.raw.at("occurrences_per_s").get<double>();
    out.late_p99 = out.raw.at("lateness_p99_ms").get<double>();
    out.cpu_us_per_occurrence = out.raw.at("cpu_us_per_occurrence").get<double>();
    out.duplicates = out.raw.at("duplicates").get<int64_t>();
    out.misses = out.raw.at("misses").get<int64_t>();
    out.early = out.raw.at("early").get<int64_t>();
  } catch (const std::exception& e) {
    error = "the " + name + " anchor printed no figures (" + e.what() + "): " + last;
    return false;
  }
  return true;
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

int run_cluster(const Args& args) {
  const int64_t entries = args.get_int("entries", 100'000);
  const int64_t window_ms = args.get_int("window-ms", 1000);
  const int connections = static_cast<int>(args.get_int("connections", 24));
  const int pipeline = static_cast<int>(args.get_int("pipeline", 16));
  const int64_t prepare_ahead_ms = args.get_int("prepare-ahead-ms", 0);
  const std::string which = args.get("semantics", "both");
  const std::string binary = args.get("bin", default_binary());
  const std::string base = args.get("dir", fs::temp_directory_path().string());
  const std::string anchor = args.get("anchor", "");
  const std::string anchor_dir = args.get("anchor-dir", CAESIUM_BENCH_ANCHORS_DIR);
  const int anchor_concurrency = static_cast<int>(args.get_int("anchor-concurrency", 200));
  if (!anchor.empty() && anchor != "bullmq") {
    std::fprintf(stderr, "cluster: --anchor is bullmq (the one peer built in: bench/anchors/)\n");
    return 2;
  }
  if (entries < 1 || window_ms < 1 || connections < 1 || pipeline < 1 || prepare_ahead_ms < 0 ||
      anchor_concurrency < 1) {
    std::fprintf(stderr, "cluster: --entries, --window-ms, --connections and --pipeline must be positive, "
                         "--prepare-ahead-ms not negative\n");
    return 2;
  }
  std::vector<std::string> semantics;
  if (which == "both" || which == "at_least_once") semantics.push_back("at_least_once");
  if (which == "both" || which == "at_most_once") semantics.push_back("at_most_once");
  if (semantics.empty()) {
    std::fprintf(stderr, "cluster: --semantics is both, at_least_once or at_most_once\n");
    return 2;
  }
  std::vector<Figures> all;
  for (const auto& s : semantics) {
    const std::string dir = base + "/caesium-cluster-bench-" + std::to_string(::getpid()) + "-" + s;
    fs::remove_all(dir);
    Figures f;
    std::string error;
    if (!run_one(binary, dir, s, entries, window_ms, connections, pipeline, prepare_ahead_ms, f, error)) {
      std::fprintf(stderr, "cluster (%s): %s\n", s.c_str(), error.c_str());
      return 1;
    }
    if (!args.has("keep")) fs::remove_all(dir);
    all.push_back(f);
  }

  // The same-run baseline (bench/timer_floor.h): the same timers fired by one process that
  // only records each firing durably.  Run after the clusters are gone, so it has the
  // machine to itself as they did.
  FloorFigures floor;
  const bool with_floor = !args.has("no-baseline");
  if (with_floor) {
    std::string error;
    const std::string dir = base + "/caesium-cluster-bench-" + std::to_string(::getpid()) + "-floor";
    if (!run_timer_floor(entries, window_ms, dir, floor, error)) {
      std::fprintf(stderr, "cluster (baseline): %s\n", error.c_str());
      return 1;
    }
  }
  // The peer, last, with the machine to itself as the others had it.
  AnchorFigures peer;
  const bool with_anchor = !anchor.empty();
  if (with_anchor) {
    std::string error;
    if (!run_anchor(anchor_dir, anchor, entries, window_ms, anchor_concurrency, peer, error)) {
      std::fprintf(stderr, "cluster (anchor): %s\n", error.c_str());
      return 1;
    }
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };

  bool clean = true;
  for (const auto& f : all) clean &= f.duplicates == 0 && f.misses == 0 && f.early == 0;
  if (args.json) {
    nlohmann::json j;
    j["benchmark"] = "cluster";
    j["entries"] = entries;
    j["window_ms"] = window_ms;
    j["nodes"] = 3;
    j["prepare_ahead_ms"] = prepare_ahead_ms;
    j["anchor"] = with_anchor ? peer.raw : nlohmann::json(nullptr);  // null: no peer measured in this run
    if (with_floor) {
      j["baseline"] = {{"system", "one process, durable firing records, no replicas (timer-floor)"},
                       {"fired", floor.fired}, {"occurrences_per_s", floor.occ_per_s},
                       {"lateness_p50_ms", floor.late_p50}, {"lateness_p99_ms", floor.late_p99},
                       {"lateness_max_ms", floor.late_max}, {"cpu_us_per_occurrence", floor.cpu_us_per_occurrence}};
    }
    for (const auto& f : all) {
      j["results"].push_back({{"semantics", f.semantics}, {"due", f.due}, {"executed", f.executed},
                              {"executions", f.executions}, {"duplicates", f.duplicates}, {"misses", f.misses},
                              {"early", f.early}, {"flagged_possible_duplicate", f.flagged},
                              {"occurrences_per_s", f.occ_per_s}, {"lateness_p50_ms", f.late_p50},
                              {"lateness_p99_ms", f.late_p99}, {"lateness_max_ms", f.late_max},
                              {"api_writes_per_s", f.api_writes_per_s}, {"rss_mib_per_1m_entries", f.rss_mib_per_1m},
                              {"rss_anon_mib_per_1m_entries", f.anon_mib_per_1m},
                              {"executions_by_node", f.executions_by_node},
                              {"cpu_us_per_occurrence", f.cpu_us_per_occurrence},
                              {"cpu_s_by_node", f.cpu_s_by_node}});
      if (with_floor) {
        j["results"].back()["vs_baseline_rate"] = ratio(f.occ_per_s, floor.occ_per_s);
        j["results"].back()["cpu_vs_baseline"] = ratio(f.cpu_us_per_occurrence, floor.cpu_us_per_occurrence);
      }
      if (with_anchor) {
        j["results"].back()["vs_anchor_rate"] = ratio(f.occ_per_s, peer.occ_per_s);
        j["results"].back()["lateness_p99_vs_anchor"] = ratio(f.late_p99, peer.late_p99);
        j["results"].back()["cpu_vs_anchor"] = ratio(f.cpu_us_per_occurrence, peer.cpu_us_per_occurrence);
      }
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("cluster: 3 nodes on loopback, %lld one-shot entries due within %lld ms, handler log (noop + a line), "
                "prepare_ahead %lld ms\n\n",
                static_cast<long long>(entries), static_cast<long long>(window_ms),
                static_cast<long long>(prepare_ahead_ms));
    std::printf("%-14s %9s %6s %7s %9s %9s %9s %11s %12s\n", "semantics", "occ/s", "dups", "misses", "late p50",
                "late p99", "late max", "API puts/s", "MiB/1M ent.");
    for (const auto& f : all) {
      std::printf("%-14s %9.0f %6lld %7lld %7.0fms %7.0fms %7.0fms %11.0f %12.0f\n", f.semantics.c_str(), f.occ_per_s,
                  static_cast<long long>(f.duplicates), static_cast<long long>(f.misses), f.late_p50, f.late_p99,
                  f.late_max, f.api_writes_per_s, f.rss_mib_per_1m);
    }
    if (with_floor) {
      std::printf("%-14s %9.0f %6s %7s %7.0fms %7.0fms %7.0fms\n", "baseline", floor.occ_per_s, "-", "-",
                  floor.late_p50, floor.late_p99, floor.late_max);
    }
    if (with_anchor) {
      std::printf("%-14s %9.0f %6lld %7lld %7.0fms %7.0fms %7.0fms\n", "bullmq", peer.occ_per_s,
                  static_cast<long long>(peer.duplicates), static_cast<long long>(peer.misses),
                  peer.raw.value("lateness_p50_ms", 0.0), peer.late_p99, peer.raw.value("lateness_max_ms", 0.0));
      std::printf("\npeer (same run, --anchor bullmq): %s, concurrency %d: early %lld, CPU %.1f us per occurrence "
                  "(worker process + Redis server)\n",
                  peer.raw.value("system", std::string("BullMQ")).c_str(), anchor_concurrency,
                  static_cast<long long>(peer.early), peer.cpu_us_per_occurrence);
      for (const auto& f : all) {
        std::printf("%s vs BullMQ: rate %.2fx, lateness p99 %.2fx, CPU per occurrence %.2fx\n", f.semantics.c_str(),
                    ratio(f.occ_per_s, peer.occ_per_s), ratio(f.late_p99, peer.late_p99),
                    ratio(f.cpu_us_per_occurrence, peer.cpu_us_per_occurrence));
      }
    } else {
      std::printf("\npeer: none measured in this run (--anchor bullmq measures BullMQ beside it)\n");
    }
    if (with_floor) {
      std::printf("baseline (same run, `caesium-bench timer-floor`): one process fires the same timers, each "
                  "recorded durably in LMDB (group commit, fsync), no replicas, no agreement, no network: "
                  "%lld/%lld fired, CPU %.2f us per occurrence\n",
                  static_cast<long long>(floor.fired), static_cast<long long>(floor.due), floor.cpu_us_per_occurrence);
      for (const auto& f : all) {
        std::printf("%s vs baseline: rate %.2fx, CPU per occurrence %.1fx\n", f.semantics.c_str(),
                    ratio(f.occ_per_s, floor.occ_per_s), ratio(f.cpu_us_per_occurrence, floor.cpu_us_per_occurrence));
      }
    }
    for (const auto& f : all) {
      std::printf("%s: RSS per 1M entries %.0f MiB, of which anonymous (heap) %.0f MiB and file pages (LMDB map) %.0f MiB\n",
                  f.semantics.c_str(), f.rss_mib_per_1m, f.anon_mib_per_1m, f.rss_mib_per_1m - f.anon_mib_per_1m);
      std::printf("%s: executions by node n1/n2/n3 = %lld/%lld/%lld, flagged possible_duplicate %lld, early %lld\n",
                  f.semantics.c_str(), static_cast<long long>(f.executions_by_node[0]),
                  static_cast<long long>(f.executions_by_node[1]), static_cast<long long>(f.executions_by_node[2]),
                  static_cast<long long>(f.flagged), static_cast<long long>(f.early));
      std::printf("%s: CPU per occurrence %.0f us (all three nodes, end of load to last run); n1/n2/n3 used "
                  "%.1f/%.1f/%.1f s\n",
                  f.semantics.c_str(), f.cpu_us_per_occurrence, f.cpu_s_by_node.at(0), f.cpu_s_by_node.at(1),
                  f.cpu_s_by_node.at(2));
    }
  }
  return clean ? 0 : 1;
}

CAESIUM_BENCH("cluster", "three real nodes: 100k one-shot entries due within 1 s, per semantics", run_cluster,
              {"entries", "N", "one-shot entries to load (default 100000)"},
              {"window-ms", "MS", "due within this window (default 1000)"},
              {"connections", "N", "API connections that load entries (default 24)"},
              {"pipeline", "N", "requests in flight per connection (default 16)"},
              {"semantics", "S", "both, at_least_once or at_most_once (default both)"},
              {"prepare-ahead-ms", "MS", "the nodes' [scheduler] prepare_ahead (default 0: off)"},
              {"bin", "PATH", "the caesium binary (default: the one built beside this program)"},
              {"dir", "DIR", "where the nodes' data directories go (default: the temp directory)"},
              {"keep", "", "keep the nodes' data directories"},
              {"no-baseline", "", "skip the same-run baseline (timer-floor)"},
              {"anchor", "NAME", "also measure the peer in the same run: bullmq (bench/anchors/bullmq/install.sh first)"},
              {"anchor-concurrency", "N", "the peer worker's concurrency (default 200)"},
              {"anchor-dir", "DIR", "where the anchors are (default: bench/anchors of the source tree)"});

}  // namespace
}  // namespace caesium::bench
