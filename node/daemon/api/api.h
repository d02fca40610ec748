// The HTTP API's request handling, without sockets: a request and a backend (the node)
// in, an ApiAction out.  docs/api.md is the user reference for every route.
//
// quinn-style: the handler never waits and never does I/O.  What needs time is
// described in the action and carried out by the caller (api_server.h):
//   kRespond     answer now with `response`;
//   kAwaitWrite  a write was applied locally; answer `response` once this node's
//                storage is durable up to `wait.durable_seq` and `wait.replicas`
//                replicas (this one included) hold the written version — or answer
//                write_timeout_response() at `wait.deadline_mono_ms`;
//   kForward     this node does not replicate the volume: relay the request to the
//                first of `targets` that answers (forward_headers() says what to add).
//
// Authentication: `Authorization: Bearer <token>`, looked up in constant time among the
// configured tokens (api_tokens.h), each with a scope and maybe a volume limit: no or an
// unknown token is 401, a token whose scope or volumes do not cover the route is 403.
// Without a configured token every authenticated route answers 401.  /healthz, /metrics
// and the dashboard's static files (/ui) need no token (/metrics does with
// metrics_requires_token); Chronos's /timers need none unless chronos_requires_token:
// Chronos clients send no credentials.  Errors are JSON {"error": "...", "field": "..."}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/time.h"
#include "node/core/node.h"
#include "node/daemon/api/api_routes.h"
#include "node/daemon/api/api_tokens.h"
#include "node/daemon/http/http_request.h"

namespace caesium::daemon {

inline constexpr std::string_view kForwardedHeader = "x-caesium-forwarded";

struct ApiOptions {
  std::string token;  // an admin token (api.token_file), "" = none
  TokenSet tokens;    // scoped tokens (api.tokens_file); with `token`, none = every /v1 is 401
  std::string chronos_volume;  // "" = the Chronos API is off (/timers answers 404)
  bool chronos_requires_token = false;
  bool metrics_requires_token = false;
  int64_t write_timeout_ms = 10'000;  // durability and ?w=N waits
  size_t default_list_limit = 100;
  size_t max_list_limit = 1000;
  size_t default_history_limit = 20;
  size_t max_history_limit = 1000;
};

// A replica of a volume as this node sees it, for forwarding.
struct ReplicaContact {
  std::string node;
  std::string api_addr;  // "host:port" its API listens on ("" = not advertised)
  bool reachable = false;
  bool master = false;  // master of the volume in this node's view
};

// What a request needs from the node.  The daemon's implementation wraps node::Node
// (api_backend.h); tests use the same one over a Node driven by hand.
class ApiBackend {
 public:
  virtual ~ApiBackend() = default;
  virtual const std::string& node_id() const = 0;
  virtual Clock now() const = 0;
  virtual const node::ClusterConfig& cluster_config() const = 0;
  virtual bool is_replica(const std::string& volume) const = 0;
  // Writes run the daemon's drain afterwards, so their storage batch is submitted.
  virtual Result<node::WriteAck> put_entry(const std::string& volume, const schedule::Entry& entry,
                                           bool want_acks) = 0;
  virtual Result<node::WriteAck> delete_entry(const std::string& volume, const std::string& entity,
                                              const std::string& name, bool want_acks) = 0;
  // Pause or resume: the stored entry with `paused` set (node::Node::set_paused).
  virtual Result<node::WriteAck> set_paused(const std::string& volume, const std::string& entity,
                                            const std::string& name, bool paused, bool want_acks) = 0;
  // Run now: a manual occurrence (node::Node::trigger_entry).
  virtual Result<node::Node::TriggerAck> trigger_entry(const std::string& volume, const std::string& entity,
                                                       const std::string& name, std::string_view idempotency_key,
                                                       bool want_acks) = 0;
  virtual Result<node::WriteAck> apply_config(node::ClusterConfig config, bool force) = 0;
  virtual std::optional<schedule::Entry> get_entry(const std::string& volume, const std::string& entity,
                                                   const std::string& name) const = 0;
  virtual std::vector<schedule::Entry> list_entries(const std::string& volume, const std::string& entity_prefix,
                                                    const std::string& start_after, size_t limit) const = 0;
  virtual std::vector<node::Node::OccurrenceHistory> history(const std::string& volume, const std::string& entity,
                                                             const std::string& name, size_t limit) const = 0;
  virtual std::optional<int64_t> next_occurrence(const std::string& volume, const std::string& key) const = 0;
  // Every replica of `volume` in the config (current and previous sets), self included.
  virtual std::vector<ReplicaContact> replica_contacts(const std::string& volume) const = 0;
  virtual nlohmann::json status() const = 0;
  virtual std::string metrics_text() const = 0;
  // How a config change being agreed ended (node::Node::config_outcome): nullopt while
  // it is being agreed.
  virtual std::optional<Status> config_outcome(uint64_t id) const = 0;
  // Durability progress, for kAwaitWrite.
  virtual uint64_t durable_seq() const = 0;
  virtual size_t replica_acks(const std::string& volume, const std::string& key,
                              const schedule::Version& version) const = 0;
  // 64 random bits, for Chronos timer ids.
  virtual uint64_t random64() = 0;
};

struct WriteWait {
  uint64_t durable_seq = 0;
  std::string volume;
  std::string key;
  schedule::Version version;
  // A write of several records (a bulk pause): these must reach `replicas` too.
  std::vector<std::pair<std::string, schedule::Version>> also;
  size_t replicas = 1;  // w: replicas that must hold the version (this node included)
  // A config change being agreed (node::WriteAck::config_proposal): answer with
  // ApiHandler::config_response(outcome) once it ended, instead of `response`.
  uint64_t config_proposal = 0;
  int64_t deadline_mono_ms = 0;
};

struct ApiAction {
  enum class Kind : uint8_t { kRespond, kAwaitWrite, kForward };
  Kind kind = Kind::kRespond;
  ServerResponse response;  // kRespond; kAwaitWrite: the answer once the write is durable
  WriteWait wait;           // kAwaitWrite
  std::string volume;       // kForward: the volume that decided it
  std::vector<ReplicaContact> targets;  // kForward: in order of preference
};

struct ApiCounters {
  std::map<int, uint64_t> responses_by_status;  // every answer the handler produced
  uint64_t auth_failures = 0;       // 401s
  uint64_t scope_refusals = 0;      // 403s
  uint64_t forwarded = 0;         // requests relayed to another node
  uint64_t forward_failures = 0;  // ...for which no target answered
  uint64_t write_timeouts = 0;    // kAwaitWrite that ran out of time
  uint64_t chronos_requests = 0;
  uint64_t triggers = 0;          // POST .../trigger that added a manual occurrence
  uint64_t trigger_repeats = 0;   // ...that found its Idempotency-Key's trigger (nothing written)
};

class ApiHandler {
 public:
  ApiHandler(ApiOptions options, ApiBackend& backend);

  // Handles one request.  Never throws, whatever the bytes.
  ApiAction handle(const ServerRequest& request);

  // The answer for a kAwaitWrite that timed out: 503 saying what was reached.
  ServerResponse write_timeout_response(const WriteWait& wait, bool durable_here, size_t replicas_reached);
  // The answer when no forward target answered: 503 with each target's failure.
  ServerResponse forward_failed_response(const std::string& volume, const std::vector<std::string>& failures);
  // Headers to send with a forwarded request: the client's Authorization and
  // X-Caesium-Forwarded naming this node (the caller copies Content-Type).
  std::vector<std::pair<std::string, std::string>> forward_headers(const ServerRequest& request) const;
  // Counts a response relayed from another node (status) or produced by the caller.
  void count_response(int status) { ++counters_.responses_by_status[status]; }

  const ApiCounters& counters() const { return counters_; }
  const ApiOptions& options() const { return options_; }
  // Replaces the tokens (SIGHUP): options().token and options().tokens.
  void set_tokens(std::string token, TokenSet tokens);

 private:
  ApiAction route(const ServerRequest& req);
  ApiAction unauthorized(const ServerRequest& req);
  // 403 unless `token` covers `scope` (and `volume`, when not "", and every volume when
  // cluster_wide); nullopt when it does.
  std::optional<ApiAction> out_of_scope(const ApiToken& token, Scope scope, const std::string& volume,
                                        bool cluster_wide);
  ApiAction route_v1(const ServerRequest& req, const std::vector<std::string>& seg, const ApiToken& token);
  ApiAction route_volume(const ServerRequest& req, const std::vector<std::string>& seg, const RouteSpec& route);
  ApiAction route_chronos(const ServerRequest& req, const std::vector<std::string>& seg);
  ApiAction route_ui(const ServerRequest& req, const std::vector<std::string>& seg);
  ApiAction entry_put(const ServerRequest& req, const std::string& volume, const std::string& entity,
                      const std::string& name);
  ApiAction entry_get(const ServerRequest& req, const std::string& volume, const std::string& entity,
                      const std::string& name);
  // POST .../pause and .../resume: 200 with the entry as it now stands.
  ApiAction entry_pause(const ServerRequest& req, const std::string& volume, const std::string& entity,
                        const std::string& name, bool paused);
  // POST .../trigger: 200 with the manual occurrence (its id and due time) and the entry.
  ApiAction entry_trigger(const ServerRequest& req, const std::string& volume, const std::string& entity,
                          const std::string& name);
  ApiAction entry_delete(const ServerRequest& req, const std::string& volume, const std::string& entity,
                         const std::string& name);
  // POST /v1/volumes/{volume}/pause and /resume: every entry under ?prefix= (an entity
  // prefix) or ?entity=[&name_prefix=], a page of at most ?limit= at a time.
  ApiAction bulk_pause(const ServerRequest& req, const std::string& volume, bool paused);
  ApiAction entry_list(const ServerRequest& req, const std::string& volume);
  ApiAction entry_history(const ServerRequest& req, const std::string& volume, const std::string& entity,
                          const std::string& name);
  ApiAction config_put(const ServerRequest& req);

 public:
  // The answer to PUT /v1/config once the change ended: 200 with the config now held, or
  // the refusal (409 when the cluster's state or another change stood in the way, 503
  // when too few nodes were alive or answered, 400 otherwise).
  ServerResponse config_response(const Status& outcome) const;

 private:
  ApiAction chronos_put(const ServerRequest& req, std::string id);
  ApiAction chronos_delete(const ServerRequest& req, const std::string& id);
  // Local replica: nullopt (go on).  Otherwise the forward (or 404/503) to return.
  std::optional<ApiAction> locate(const ServerRequest& req, const std::string& volume);
  // The token the request presents, when it is a configured one.
  const ApiToken* authenticate(const ServerRequest& req) const;
  ApiAction await_write(const node::WriteAck& ack, const std::string& volume, size_t replicas,
                        ServerResponse response) const;
  nlohmann::json entry_json(const std::string& volume, const schedule::Entry& entry) const;

  ApiOptions options_;
  ApiBackend& backend_;
  ApiCounters counters_;
};

// {"error": message, "field": field} with `status` (field omitted when empty).
ServerResponse error_response(int status, const std::string& message, const std::string& field = {});
ServerResponse json_response(int status, const nlohmann::json& body);

// Constant-time comparison of a presented token with the configured one (both hashed
// first, so neither length nor content leaks through timing).  False when `expected`
// is empty.
bool token_matches(std::string_view presented, std::string_view expected);

// The bearer token from an Authorization header value ("Bearer <token>", scheme
// case-insensitive), or nullopt.
std::optional<std::string> bearer_token(std::string_view authorization);

// The order in which to try replicas for a forwarded request: reachable ones with an
// API address other than `self`, the master first, then by node id.
std::vector<ReplicaContact> forward_order(std::vector<ReplicaContact> contacts, const std::string& self);

}  // namespace caesium::daemon
