// EchoProcess: the simulator's own TEST process kind ("echo"), not the real node.
//
// Just enough behaviour to exercise every path of the World end to end and to measure
// the World's own speed, with the shape of the real traffic:
//   - probes: every probe_interval it pings `fanout` random peers (0 = all peers) over
//     datagrams; a ping is answered with an ack.
//   - a heartbeat failure detector (watch = true): a peer not heard from for
//     suspect_after is suspect, for dead_after dead; hearing from it makes it alive.
//     Every view change is reported as a kMemberState observation, the first sighting
//     included, and member_view() returns the view.
//   - a tiny replicated store: put_entry() stores the entry on disk (a storage batch),
//     pushes it over streams to the volume's other replicas, and runs the handler once
//     on this node (an invocation).  Every push_interval the whole store goes to one
//     random peer (anti-entropy), so stores converge after partitions heal;
//     volume_digests() hashes each volume's records.
//   - leave() tells every peer, which mark it left.
//   - every frame carries an xxh3 checksum; a frame that fails it, or does not parse,
//     is dropped and counted in rejected() — never a crash.
// Options come from [node_options]: probe_interval, suspect_after, dead_after, fanout,
// watch, push_interval (durations as strings).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/time.h"
#include "sim/cluster.h"
#include "sim/registry.h"

namespace caesium::sim {

struct EchoOptions {
  int64_t probe_interval_ms = kMsPerSecond;
  int64_t suspect_after_ms = 3 * kMsPerSecond;
  int64_t dead_after_ms = 8 * kMsPerSecond;
  int64_t push_interval_ms = 10 * kMsPerSecond;
  uint32_t fanout = 0;  // 0 = every peer
  bool watch = true;
};

// Reads EchoOptions from a [node_options] table; unknown keys are errors.
Result<EchoOptions> read_echo_options(const toml::table& table, const std::string& path);

class EchoProcess final : public Process {
 public:
  EchoProcess(const ProcessContext& ctx, EchoOptions options);

  void start(std::vector<StoredRecord> disk, Clock now) override;
  void leave(Clock now) override;
  void on_datagram(const std::string& from_addr, const std::string& bytes, Clock now) override;
  void on_stream(const std::string& from_addr, const std::string& bytes, Clock now) override;
  void on_tick(Clock now) override;
  void on_durable(uint64_t seq, Clock now) override;
  void on_invocation_done(const InvocationResult& result, Clock now) override;
  int64_t next_deadline_mono() const override;
  bool poll_transmit(Transmit& out) override;
  bool poll_storage(StorageBatch& out) override;
  bool poll_invocation(Invocation& out) override;
  bool poll_observation(Observation& out) override;
  void put_entry(const std::string& volume, const std::string& entity, const std::string& name,
                 const std::string& json, Clock now) override;
  std::vector<std::pair<std::string, int>> member_view() const override;
  std::vector<std::pair<std::string, uint64_t>> volume_digests() const override;

  uint64_t rejected() const { return rejected_; }
  uint64_t durable_seq() const { return durable_seq_; }
  uint64_t invocations_done() const { return invocations_done_; }
  const std::map<std::string, std::string>& store() const { return store_; }

 private:
  struct Peer {
    int64_t last_heard_mono = 0;
    int state = 0;  // gossip::MemberState as int
  };
  void send(Channel channel, uint32_t peer, char type, const std::string& body);
  int64_t check_frame(const AddressBook::Map& book,
                      const std::string& from_addr, const std::string& bytes);
  void heard(uint32_t peer, Clock now);
  void set_state(uint32_t peer, int state);
  void merge(const std::string& body);
  bool replicates(const std::string& volume) const;
  std::string store_body(const std::string* only_key) const;

  const ClusterSpec* cluster_;
  uint32_t self_;
  EchoOptions options_;
  Rng rng_;
  const AddressBook* addresses_;
  std::vector<Peer> peers_;  // by node index; self unused
  std::map<std::string, std::string> store_;  // "volume/entity/name" -> json
  bool left_ = false;
  int64_t next_probe_mono_ = 0, next_push_mono_ = 0;
  uint32_t ping_seq_ = 0;
  uint64_t storage_seq_ = 0, durable_seq_ = 0, invocation_id_ = 0, invocations_done_ = 0;
  uint64_t rejected_ = 0;
  std::vector<Transmit> tx_;
  std::vector<StorageBatch> storage_;
  std::vector<Invocation> invocations_;
  std::vector<Observation> observations_;
  size_t tx_head_ = 0, storage_head_ = 0, inv_head_ = 0, obs_head_ = 0;
};

// The "echo" kind: test_only, with option validation.
ProcessKind echo_process_kind();

}  // namespace caesium::sim
