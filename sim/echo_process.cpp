#include "sim/echo_process.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"
#include "sim/scenario.h"
#include "base/toml/toml_reader.h"

namespace caesium::sim {

Result<EchoOptions> read_echo_options(const toml::table& table, const std::string& path) {
  EchoOptions o;
  TomlErrors errors;
  {
    TomlReader r(table, "node_options", path, errors);
    o.probe_interval_ms = std::max<int64_t>(1, r.duration("probe_interval").value_or(o.probe_interval_ms));
    o.suspect_after_ms = r.duration("suspect_after").value_or(o.suspect_after_ms);
    o.dead_after_ms = r.duration("dead_after").value_or(o.dead_after_ms);
    o.push_interval_ms = std::max<int64_t>(1, r.duration("push_interval").value_or(o.push_interval_ms));
    o.fanout = static_cast<uint32_t>(r.integer("fanout", 0, 100000).value_or(0));
    o.watch = r.boolean("watch").value_or(true);
    r.finish();
  }
  if (errors.any()) return errors.combined();
  return o;
}

EchoProcess::EchoProcess(const ProcessContext& ctx, EchoOptions options)
    : cluster_(ctx.cluster), self_(ctx.self), options_(options), rng_(ctx.seed),
      addresses_(ctx.addresses), peers_(ctx.cluster->nodes.size()) {}

// Frame: 8-byte checksum of the rest, 1 type byte, body.
void EchoProcess::send(Channel channel, uint32_t peer, char type, const std::string& body) {
  std::string frame(8, '\0');
  frame.push_back(type);
  frame += body;
  const uint64_t sum = hash64(std::string_view(frame).substr(8));
  std::memcpy(frame.data(), &sum, 8);
  const NodeSpec& to = cluster_->nodes[peer];
  tx_.push_back({channel, channel == Channel::kDatagram ? to.gossip_addr : to.stream_addr,
                 std::move(frame)});
}

void EchoProcess::set_state(uint32_t peer, int state) {
  if (peers_[peer].state == state) return;
  peers_[peer].state = state;
  Observation o;
  o.kind = Observation::Kind::kMemberState;
  o.subject = cluster_->nodes[peer].id;
  o.state = state;
  observations_.push_back(std::move(o));
}

void EchoProcess::start(std::vector<StoredRecord> disk, Clock now) {
  for (auto& r : disk) store_[r.key] = std::move(r.value);
  next_probe_mono_ = now.mono_ms;
  next_push_mono_ = now.mono_ms + options_.push_interval_ms;
  for (uint32_t i = 0; i < peers_.size(); ++i) {
    if (i == self_) continue;
    peers_[i].last_heard_mono = now.mono_ms;
    peers_[i].state = -1;
    if (options_.watch) set_state(i, 0);
  }
}

void EchoProcess::leave(Clock) {
  left_ = true;
  for (uint32_t i = 0; i < peers_.size(); ++i) {
    if (i != self_) send(Channel::kDatagram, i, 'L', "");
  }
}

void EchoProcess::heard(uint32_t peer, Clock now) {
  // Hearing from a member that left means it came back (leave stops all its traffic).
  peers_[peer].last_heard_mono = now.mono_ms;
  if (options_.watch) set_state(peer, 0);
}

// The sender's node index when the frame comes from a known address and its checksum
// holds; otherwise counts a rejection and returns -1.
int64_t EchoProcess::check_frame(const AddressBook::Map& book,
                                 const std::string& from_addr, const std::string& bytes) {
  const int64_t from = AddressBook::find(book, from_addr);
  uint64_t sum = 0;
  if (from >= 0 && bytes.size() >= 9) std::memcpy(&sum, bytes.data(), 8);
  if (from < 0 || bytes.size() < 9 || sum != hash64(std::string_view(bytes).substr(8))) {
    ++rejected_;
    return -1;
  }
  return from;
}

void EchoProcess::on_datagram(const std::string& from_addr, const std::string& bytes, Clock now) {
  const int64_t from = check_frame(addresses_->by_gossip, from_addr, bytes);
  if (from < 0) return;
  const auto peer = static_cast<uint32_t>(from);
  switch (bytes[8]) {
    case 'P':
      heard(peer, now);
      if (!left_) send(Channel::kDatagram, peer, 'A', bytes.substr(9));
      break;
    case 'A':
      heard(peer, now);
      break;
    case 'L':
      if (options_.watch) set_state(peer, 3);
      break;
    default:
      ++rejected_;
  }
}

bool EchoProcess::replicates(const std::string& volume) const {
  for (const VolumeSpec& v : cluster_->volumes) {
    if (v.name != volume) continue;
    const std::string& me = cluster_->nodes[self_].id;
    return std::find(v.replicas.begin(), v.replicas.end(), me) != v.replicas.end();
  }
  return false;
}

// Body: records as "<key>\n<value>\n" pairs.  Merge keeps the greater value per key,
// which is commutative, associative and idempotent, so stores converge.
void EchoProcess::merge(const std::string& body) {
  StorageBatch batch;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t k_end = body.find('\n', pos);
    if (k_end == std::string::npos) break;
    const size_t v_end = body.find('\n', k_end + 1);
    if (v_end == std::string::npos) break;
    std::string key = body.substr(pos, k_end - pos);
    std::string value = body.substr(k_end + 1, v_end - k_end - 1);
    pos = v_end + 1;
    const std::string volume = key.substr(0, key.find('/'));
    if (!replicates(volume)) continue;
    auto found = store_.find(key);
    if (found != store_.end() && found->second >= value) continue;
    store_[key] = value;
    batch.ops.push_back({node::StorageOp::Kind::kPut, std::move(key), std::move(value)});
  }
  if (!batch.ops.empty()) {
    batch.seq = ++storage_seq_;
    storage_.push_back(std::move(batch));
  }
}

void EchoProcess::on_stream(const std::string& from_addr, const std::string& bytes, Clock now) {
  const int64_t from = check_frame(addresses_->by_stream, from_addr, bytes);
  if (from < 0) return;
  if (bytes[8] != 'S') {
    ++rejected_;
    return;
  }
  heard(static_cast<uint32_t>(from), now);
  merge(bytes.substr(9));
}

void EchoProcess::on_tick(Clock now) {
  if (left_) return;
  if (now.mono_ms >= next_probe_mono_) {
    next_probe_mono_ = now.mono_ms + options_.probe_interval_ms;
    const std::string body = std::to_string(++ping_seq_);
    const auto n = static_cast<uint32_t>(peers_.size());
    if (options_.fanout == 0 || options_.fanout + 1 >= n) {
      for (uint32_t i = 0; i < n; ++i) {
        if (i != self_) send(Channel::kDatagram, i, 'P', body);
      }
    } else {
      for (uint32_t k = 0; k < options_.fanout; ++k) {
        auto peer = static_cast<uint32_t>(rng_.below(n - 1));
        if (peer >= self_) ++peer;
        send(Channel::kDatagram, peer, 'P', body);
      }
    }
  }
  if (options_.watch) {
    for (uint32_t i = 0; i < peers_.size(); ++i) {
      Peer& p = peers_[i];
      if (i == self_ || p.state == 3) continue;  // left: no need to watch
      const int64_t silent = now.mono_ms - p.last_heard_mono;
      if (p.state == 0 && silent >= options_.suspect_after_ms) set_state(i, 1);
      if (p.state == 1 && silent >= options_.dead_after_ms) set_state(i, 2);
    }
  }
  if (now.mono_ms >= next_push_mono_) {
    next_push_mono_ = now.mono_ms + options_.push_interval_ms;
    if (!store_.empty() && peers_.size() > 1) {
      auto peer = static_cast<uint32_t>(rng_.below(peers_.size() - 1));
      if (peer >= self_) ++peer;
      send(Channel::kStream, peer, 'S', store_body(nullptr));
    }
  }
}

std::string EchoProcess::store_body(const std::string* only_key) const {
  std::string body;
  for (const auto& [key, value] : store_) {
    if (only_key && key != *only_key) continue;
    body += key + "\n" + value + "\n";
  }
  return body;
}

void EchoProcess::on_durable(uint64_t seq, Clock) { durable_seq_ = std::max(durable_seq_, seq); }

void EchoProcess::on_invocation_done(const InvocationResult&, Clock) { ++invocations_done_; }

int64_t EchoProcess::next_deadline_mono() const {
  if (left_) return kNever;
  // The failure detector is evaluated at probe times, which is often enough for a test.
  return std::min(next_probe_mono_, next_push_mono_);
}

void EchoProcess::put_entry(const std::string& volume, const std::string& entity,
                            const std::string& name, const std::string& json, Clock now) {
  std::string value = json;
  std::replace(value.begin(), value.end(), '\n', ' ');
  const std::string key = volume + "/" + entity + "/" + name;
  store_[key] = value;
  StorageBatch batch;
  batch.seq = ++storage_seq_;
  batch.ops.push_back({node::StorageOp::Kind::kPut, key, value});
  storage_.push_back(std::move(batch));
  for (const VolumeSpec& v : cluster_->volumes) {
    if (v.name != volume) continue;
    for (const std::string& r : v.replicas) {
      for (uint32_t i = 0; i < cluster_->nodes.size(); ++i) {
        if (i != self_ && cluster_->nodes[i].id == r) send(Channel::kStream, i, 'S', store_body(&key));
      }
    }
  }
  Invocation inv;
  inv.id = ++invocation_id_;
  inv.handler = "echo";
  inv.volume = volume;
  inv.entity = entity;
  inv.entry = name;
  inv.scheduled_utc_ms = now.utc_ms;
  inv.fire_id = cluster_->nodes[self_].id + "-" + std::to_string(inv.id);
  inv.sequence = 1;
  invocations_.push_back(std::move(inv));
}

std::vector<std::pair<std::string, int>> EchoProcess::member_view() const {
  std::vector<std::pair<std::string, int>> out;
  if (!options_.watch) return out;
  for (uint32_t i = 0; i < peers_.size(); ++i) {
    if (i != self_) out.emplace_back(cluster_->nodes[i].id, peers_[i].state);
  }
  return out;
}

std::vector<std::pair<std::string, uint64_t>> EchoProcess::volume_digests() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const VolumeSpec& v : cluster_->volumes) {
    if (!replicates(v.name)) continue;
    uint64_t h = hash64(v.name);
    for (const auto& [key, value] : store_) {
      if (key.compare(0, v.name.size() + 1, v.name + "/") != 0) continue;
      h = hash_combine(h, hash64(key));
      h = hash_combine(h, hash64(value));
    }
    out.emplace_back(v.name, h);
  }
  return out;
}

template <class T>
static bool pop_next(std::vector<T>& q, size_t& head, T& out) {
  if (head == q.size()) {
    q.clear();
    head = 0;
    return false;
  }
  out = std::move(q[head++]);
  return true;
}

bool EchoProcess::poll_transmit(Transmit& out) { return pop_next(tx_, tx_head_, out); }
bool EchoProcess::poll_storage(StorageBatch& out) { return pop_next(storage_, storage_head_, out); }
bool EchoProcess::poll_invocation(Invocation& out) { return pop_next(invocations_, inv_head_, out); }
bool EchoProcess::poll_observation(Observation& out) { return pop_next(observations_, obs_head_, out); }

ProcessKind echo_process_kind() {
  ProcessKind k;
  k.name = "echo";
  k.summary = "simulator test process: pings, heartbeat failure detector, tiny replicated store";
  k.test_only = true;
  k.factory = [](const ProcessContext& ctx) -> std::unique_ptr<Process> {
    auto opts = read_echo_options(*ctx.node_options, "node_options");
    return std::make_unique<EchoProcess>(ctx, opts.ok() ? opts.value() : EchoOptions{});
  };
  k.swarm_workload = [](Rng& rng, Scenario& s) {
    const int64_t entries = rng.between(1, 10);
    for (int64_t i = 1; i <= entries; ++i) {
      WorkloadEntry e;
      e.at_ms = rng.between(0, s.duration_ms);
      e.via = s.cluster.nodes[rng.below(s.cluster.nodes.size())].id;
      e.volume = s.cluster.volumes[rng.below(s.cluster.volumes.size())].name;
      // append(), not "e" + to_string(i): GCC 12 -O3 warns falsely (-Wrestrict) on the latter.
      e.entity = std::string("e").append(std::to_string(i));
      e.name = std::string("t").append(std::to_string(i));
      e.fields = {{"every", "20s"}, {"n", i}};
      s.workload.push_back(std::move(e));
    }
  };
  k.validate = [](const Scenario& s) -> Status {
    auto opts = read_echo_options(*s.node_options, s.path);
    if (!opts.ok()) return opts.error();
    return Status::success();
  };
  return k;
}

}  // namespace caesium::sim
