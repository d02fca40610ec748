// The daemon's configuration: what `caesium node --config FILE` reads (TOML).
//
// Every field is documented, with its default, in docs/config.md.  Loading is strict
// (base/toml/toml_reader.h): an unknown key, a wrong type or a bad value is an error
// naming the file, the line, the column and the key (e.g. `examples/n1.toml:12:1:
// gossip.probe_interval: "1x" is not a duration`), and every error of the file is
// reported, one per line.  Relative paths (data_dir, key_file, api.token_file, handler cwd) are
// resolved against the config file's directory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "node/core/cluster_config.h"
#include "node/core/node.h"

namespace caesium::daemon {

enum class LogLevel : uint8_t { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

struct HandlerConfig {
  enum class Kind : uint8_t { kExec, kHttp, kBuiltin };
  std::string name;
  Kind kind = Kind::kBuiltin;
  // exec
  std::vector<std::string> argv;               // argv[0] is the program
  std::string cwd;                              // working directory ("" = data_dir)
  std::map<std::string, std::string> env;      // extra environment variables
  // http
  std::vector<std::string> urls;               // POSTed in order until one answers 2xx
  std::map<std::string, std::string> headers;  // extra request headers
  // exec and http
  int64_t timeout_ms = 60'000;
  // all: a hard cap on the runs of this handler on this node at once (0: none); a
  // dispatch beyond it is refused "busy" (docs/firing.md, Concurrency caps)
  uint32_t max_running = 0;
  // builtin
  std::string builtin;                          // "noop" | "log"
};

// A static schedule entry, like a crontab line: created (or replaced) at start.
struct StaticEntry {
  std::string volume;
  std::string entity;
  std::string name;
  std::string json;  // the entry's fields, as the HTTP API takes them
};

struct ApiConfig {
  std::string listen = "127.0.0.1:0";  // loopback by default; port 0 = no API
  std::string token_file;              // one bearer token with the admin scope
  std::string tokens_file;             // scoped tokens (node/daemon/api/api_tokens.h)
  size_t max_body_bytes = 1 << 20;
  std::string chronos_volume;          // volume for Chronos /timers ("" = Chronos API off)
  bool chronos_requires_token = false;  // /timers then needs a write token for chronos_volume
  bool metrics_requires_token = false;  // /metrics then needs a read token
  size_t max_connections = 512;
  size_t max_connections_per_client = 64;  // per client IP address
  // TLS (both or neither of cert and key); tls_ca verifies client certificates when
  // tls_verify_client, and the other nodes' API certificates when forwarding.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  bool tls_verify_client = false;
};

// The UDP/TCP transport (node/daemon/net/net.h).
struct TransportConfig {
  size_t max_frame_bytes = size_t{16} << 20;   // a received frame longer than this closes the connection
  size_t send_queue_bytes = size_t{8} << 20;   // per destination; beyond it the oldest frames are dropped
  size_t max_connections = 1024;               // inbound TCP connections; more are refused
  int64_t connect_timeout_ms = 5'000;
  int64_t idle_timeout_ms = 5 * 60'000;        // connections with no traffic this long are closed
};

// LMDB under data_dir (node/daemon/storage/lmdb_storage.h).
struct StorageConfig {
  uint64_t map_bytes = uint64_t{256} << 20;      // initial map size; doubles when full
  uint64_t max_map_bytes = uint64_t{64} << 30;   // it never grows beyond this
};

struct DaemonConfig {
  std::string path;  // the file it came from (for messages)

  std::string node_id;
  std::string cluster_name = "caesium";
  std::string data_dir;
  std::string key_file;

  std::string gossip_listen;   // UDP "host:port"
  std::string stream_listen;   // TCP "host:port"
  std::string gossip_advertise;  // what peers use ("" = gossip_listen)
  std::string stream_advertise;  // ("" = stream_listen)
  std::vector<std::string> seeds;  // stream addresses of other nodes

  std::optional<int64_t> priority;
  std::vector<std::string> tags;
  gossip::Capacity capacity;  // detected (cores, memory) unless set

  node::ClusterConfig initial_cluster;  // [[cluster.volume]], [[cluster.node]], epoch
  std::vector<HandlerConfig> handlers;
  std::vector<StaticEntry> entries;
  ApiConfig api;

  // Protocol timings and limits (node/core/node.h NodeOptions, gossip, scheduler).
  node::NodeOptions tuning;

  LogLevel log_level = LogLevel::kInfo;
  int64_t shutdown_grace_ms = 10'000;  // SIGTERM: finish or hand back running handlers
  // Hold a commit group open this long after its first batch when no commit is in
  // flight (0 = commit at the end of the loop iteration).  Under load, batches group
  // while the previous commit syncs anyway; see docs/config.md for measurements.
  int64_t group_commit_max_delay_ms = 0;

  TransportConfig transport;
  StorageConfig storage;
  std::vector<std::string> includes;  // files whose [cluster], [[handler]], [[entry]] were merged in
};

// Parses a config file's text.  `path` is used in messages and to resolve relative paths.
Result<DaemonConfig> parse_config(std::string_view text, const std::string& path);
Result<DaemonConfig> load_config(const std::string& path);
// The handlers' running caps (HandlerConfig::max_running), by name: SchedulerOptions::handler_caps.
std::map<std::string, uint32_t> handler_caps(const std::vector<HandlerConfig>& handlers);

// The NodeOptions the Node core is built from (identity, addresses, config, tuning).
node::NodeOptions node_options(const DaemonConfig& config, const wire::Keyring& keyring);

}  // namespace caesium::daemon
