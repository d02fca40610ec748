#include "gossip/anti_entropy.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "base/hash.h"

namespace caesium::gossip {

using schedule::DigestItem;
using schedule::HashRange;
using schedule::MergeOutcome;
using schedule::NodeSummary;

SyncSession::SyncSession(Role role, schedule::VolumeStore* store, uint64_t session_id, SyncOptions options)
    : role_(role), store_(store), session_id_(session_id), options_(std::move(options)) {
  assert(store_ != nullptr);
  empty_fingerprint_ = salted(NodeSummary{}.fingerprint());
}

uint32_t SyncSession::salted(uint64_t hash) const {
  return static_cast<uint32_t>(hash_combine(hash, session_id_));
}

SyncMessage SyncSession::start(int64_t /*now_utc_ms*/) {
  assert(role_ == Role::kInitiator);
  assert(!started_);
  started_ = true;
  SyncMessage m;
  m.volume = store_->volume();
  m.session_id = session_id_;
  m.seq = next_seq_;
  m.root = SyncRoot{store_->root_digest(), store_->size()};
  m.sender_done = true;
  return sent(std::move(m));
}

SyncMessage SyncSession::sent(SyncMessage msg) {
  ++next_seq_;
  ++stats_.messages_sent;
  stats_.bytes_sent += wire_size(msg);
  stats_.records_sent += msg.records.size();
  for (const auto& r : msg.records) stats_.record_bytes_sent += wire_size(r);
  stats_.wanted_sent += msg.wanted.size();
  for (const auto& f : msg.fingerprints) stats_.fingerprints_sent += f.fingerprints.size();
  for (const auto& l : msg.item_lists) stats_.items_sent += l.items.size();
  return msg;
}

Status SyncSession::check_session_fields(const SyncMessage& msg) const {
  if (msg.volume != store_->volume()) {
    return Error("anti-entropy message for volume '" + msg.volume + "' reached the session of volume '" +
                     store_->volume() + "'", "volume");
  }
  if (msg.session_id != session_id_) return Error("anti-entropy message for another session", "session_id");
  if (msg.seq != next_seq_) {
    return Error("anti-entropy message out of sequence: got " + std::to_string(msg.seq) + ", expected " +
                     std::to_string(next_seq_) + " (a message was lost, duplicated or reordered)", "seq");
  }
  if (next_seq_ >= options_.max_messages) {
    return Error("anti-entropy session exceeded " + std::to_string(options_.max_messages) + " messages", "seq");
  }
  if (msg.root.has_value() != (msg.seq == 0)) {
    return Error("anti-entropy message: the root digest belongs in the opening message only", "root");
  }
  return Status::success();
}

Result<std::optional<SyncMessage>> SyncSession::on_message(const SyncMessage& msg, int64_t now_utc_ms) {
  assert(!done());
  assert(role_ == Role::kResponder || started_);
  Status st = check_session_fields(msg);
  if (st.ok()) st = validate_shape(msg, options_.limits);
  if (st.ok()) {
    ++next_seq_;
    ++stats_.messages_received;
    stats_.bytes_received += wire_size(msg);
    stats_.records_received += msg.records.size();
    st = absorb(msg, now_utc_ms);
  }
  if (!st.ok()) {
    state_ = State::kFailed;
    tasks_.clear();
    wanted_.clear();
    return st.error();
  }
  peer_done_ = msg.sender_done;
  if (msg.final) {
    state_ = State::kDone;
    stats_.bounces_dropped += tasks_.size();
    tasks_.clear();
    wanted_.clear();
    return std::optional<SyncMessage>();
  }
  SyncMessage reply = build_message();
  reply.final = reply.sender_done && !is_demanding(reply) && peer_done_;
  if (reply.final) state_ = State::kDone;
  return std::optional<SyncMessage>(sent(std::move(reply)));
}

Status SyncSession::absorb(const SyncMessage& msg, int64_t now_utc_ms) {
  echo_.clear();
  for (const schedule::Record& rec : msg.records) {
    const MergeOutcome outcome = store_->merge_record(rec, now_utc_ms);
    if (outcome == MergeOutcome::kApplied || outcome == MergeOutcome::kRemoved) ++stats_.records_applied;
    if (outcome == MergeOutcome::kApplied || outcome == MergeOutcome::kDuplicate) {
      if (auto item = store_->digest_item(rec.key)) echo_.push_back(item->entry_hash);
    } else if (outcome == MergeOutcome::kStale) {
      if (msg.final) {
        ++stats_.bounces_dropped;
      } else if (Status st = push(SendKey{rec.key}); !st.ok()) {
        return st;
      }
    }
  }
  std::sort(echo_.begin(), echo_.end());
  Status st;
  if (msg.root) st = on_root(*msg.root);
  for (size_t i = 0; st.ok() && i < msg.fingerprints.size(); ++i) st = on_fingerprints(msg.fingerprints[i]);
  for (size_t i = 0; st.ok() && i < msg.item_lists.size(); ++i) st = on_item_list(msg.item_lists[i]);
  if (st.ok() && !msg.wanted.empty()) st = push(SendKeyHashes{msg.wanted, 0, echo_});
  return st;
}

Status SyncSession::on_root(const SyncRoot& root) {
  const SyncRoot mine{store_->root_digest(), store_->size()};
  if (mine == root) return Status::success();
  // An empty peer needs everything: skip the descent.
  if (root.count == 0) return push(SendRange{HashRange{}, 0, {}});
  return push(Describe{HashRange{}});
}

Status SyncSession::on_fingerprints(const SyncFingerprints& f) {
  const HashRange range{f.prefix, f.prefix_bits};
  std::vector<NodeSummary> mine;
  store_->digest().child_summaries(range, f.step_bits, &mine);
  for (size_t i = 0; i < mine.size(); ++i) {
    const uint32_t theirs = f.fingerprints[i];
    if (salted(mine[i].fingerprint()) == theirs) continue;
    const HashRange child = range.child(f.step_bits, i);
    // The peer holds nothing there: send what we hold without describing it first.
    Status st = theirs == empty_fingerprint_ ? push(SendRange{child, child.lo(), {}}) : push(Describe{child});
    if (!st.ok()) return st;
  }
  return Status::success();
}

Status SyncSession::on_item_list(const SyncItemList& l) {
  const HashRange range{l.prefix, l.prefix_bits};
  // Ask for every item we do not hold in exactly the listed version.  Where we hold the
  // key in another version we also send ours (SendRange below): whichever is newer wins
  // on both sides after this exchange.
  for (size_t k = 0; k < l.items.size(); ++k) {
    const SyncItem& item = l.items[k];
    if (!wanted_.empty() && wanted_.back() == item.key_hash) continue;
    bool held = false;
    store_->digest().for_each_with_key_hash(item.key_hash, [&](const DigestItem& own) {
      held = held || salted(own.entry_hash) == item.fingerprint;
    });
    if (held) continue;
    if (pending_work_ + 1 > options_.max_pending_work) return too_much_work();
    wanted_.push_back(item.key_hash);
    ++pending_work_;
  }
  return push(SendRange{range, range.lo(), l.items});
}

size_t SyncSession::weight(const Task& task) {
  struct {
    size_t operator()(const Describe&) const { return 1; }
    size_t operator()(const SendRange& t) const { return 1 + t.peer_items.size(); }
    size_t operator()(const SendKeyHashes& t) const { return 1 + t.key_hashes.size() + t.echo_entry_hashes.size(); }
    size_t operator()(const SendKey& t) const { return 1 + t.key.size() / 64; }
  } w;
  return std::visit(w, task);
}

Status SyncSession::too_much_work() const {
  return Error("anti-entropy peer asked for more work than one session may queue (" +
                   std::to_string(options_.max_pending_work) + " units)", "pending");
}

Status SyncSession::push(Task task) {
  const size_t w = weight(task);
  if (pending_work_ + w > options_.max_pending_work) return too_much_work();
  pending_work_ += w;
  tasks_.push_back(std::move(task));
  return Status::success();
}

unsigned SyncSession::step_bits_for(uint64_t count, unsigned prefix_bits) const {
  const uint64_t per_leaf = std::clamp<uint64_t>(options_.leaf_target, 1, uint64_t{1} << 16);
  unsigned bits = 1;  // the smallest with count <= per_leaf * 2^bits
  while (bits < 47 && count > (per_leaf << bits)) ++bits;
  // Too far for one message: go about half way (one more bit, since the first step is
  // paid once while the second is paid per differing range).
  if (bits > options_.single_step_bits) bits = (bits + 1) / 2 + 1;
  bits = std::min<unsigned>(bits, options_.limits.max_step_bits);
  return std::max(1u, std::min(bits, 64 - prefix_bits));
}

SyncMessage SyncSession::build_message() {
  SyncMessage out;
  out.volume = store_->volume();
  out.session_id = session_id_;
  out.seq = next_seq_;
  const size_t base = wire_size(out);
  size_t used = base;
  const SyncLimits& lim = options_.limits;
  if (!wanted_.empty()) {
    const size_t n = std::min(wanted_.size(), lim.max_wanted);
    out.wanted.assign(wanted_.begin(), wanted_.begin() + static_cast<std::ptrdiff_t>(n));
    wanted_.erase(wanted_.begin(), wanted_.begin() + static_cast<std::ptrdiff_t>(n));
    pending_work_ -= n;
    used += 8 * n;
  }
  size_t fingerprints = 0, items = 0;  // in `out` so far, against the peer's limits
  while (!tasks_.empty()) {
    // Room for one more task of any kind within the peer's per-message limits.
    const bool room = fingerprints + (size_t{1} << lim.max_step_bits) <= lim.max_fingerprints &&
                      items + options_.list_threshold + 64 <= lim.max_items &&
                      out.records.size() < lim.max_records;
    if (used > base && (used >= options_.max_message_bytes || !room)) break;
    Task& task = tasks_.front();
    const size_t w = weight(task);
    const size_t ranges_before = out.fingerprints.size(), lists_before = out.item_lists.size();
    const bool finished = std::visit([&](auto& t) { return run(t, out, used); }, task);
    for (size_t i = ranges_before; i < out.fingerprints.size(); ++i) fingerprints += out.fingerprints[i].fingerprints.size();
    for (size_t i = lists_before; i < out.item_lists.size(); ++i) items += out.item_lists[i].items.size();
    if (!finished) break;
    pending_work_ -= w;
    tasks_.pop_front();
  }
  out.sender_done = tasks_.empty() && wanted_.empty();
  return out;
}

void SyncSession::add_record(const schedule::RecordView& view, SyncMessage& out, size_t& used) {
  out.records.push_back(view.to_record());
  used += wire_size(out.records.back());
}

bool SyncSession::run(Describe& t, SyncMessage& out, size_t& used) {
  const schedule::Digest& digest = store_->digest();
  const uint64_t count = digest.summarize(t.range).count;
  if (count <= options_.list_threshold || t.range.bits >= 64) {
    SyncItemList list{t.range.prefix, static_cast<uint8_t>(t.range.bits), {}};
    digest.for_each_in(t.range, t.range.lo(), [&](const DigestItem& item) {
      list.items.push_back(SyncItem{item.key_hash, salted(item.entry_hash)});
      return true;
    });
    // Sorted by (key hash, fingerprint); identical pairs (a double collision) said once.
    std::sort(list.items.begin(), list.items.end());
    list.items.erase(std::unique(list.items.begin(), list.items.end()), list.items.end());
    used += 10 + 12 * list.items.size();
    out.item_lists.push_back(std::move(list));
    return true;
  }
  const unsigned step = step_bits_for(count, t.range.bits);
  std::vector<NodeSummary> children;
  digest.child_summaries(t.range, step, &children);
  SyncFingerprints f{t.range.prefix, static_cast<uint8_t>(t.range.bits), static_cast<uint8_t>(step), {}};
  f.fingerprints.reserve(children.size());
  for (const NodeSummary& s : children) f.fingerprints.push_back(salted(s.fingerprint()));
  used += 12 + 4 * f.fingerprints.size();
  out.fingerprints.push_back(std::move(f));
  return true;
}

bool SyncSession::run(SendRange& t, SyncMessage& out, size_t& used) {
  bool stopped = false, added = false;
  uint64_t last_key_hash = 0;
  store_->digest().for_each_in(t.range, t.next_key_hash, [&](const DigestItem& item) {
    // Stop on the budget, but never between two records with the same key hash: the
    // cursor is a key hash.
    const bool full = used >= options_.max_message_bytes || out.records.size() >= options_.limits.max_records;
    if (added && full && item.key_hash != last_key_hash) {
      t.next_key_hash = item.key_hash;
      stopped = true;
      return false;
    }
    last_key_hash = item.key_hash;
    if (std::binary_search(t.peer_items.begin(), t.peer_items.end(),
                           SyncItem{item.key_hash, salted(item.entry_hash)})) {
      return true;  // the peer holds exactly this record
    }
    add_record(store_->view(item), out, used);
    added = true;
    return true;
  });
  return !stopped;
}

bool SyncSession::run(SendKeyHashes& t, SyncMessage& out, size_t& used) {
  bool added = false;
  for (; t.next < t.key_hashes.size(); ++t.next) {
    const bool full = used >= options_.max_message_bytes || out.records.size() >= options_.limits.max_records;
    if (added && full) return false;
    store_->digest().for_each_with_key_hash(t.key_hashes[t.next], [&](const DigestItem& item) {
      // Not what the peer itself just sent us (it holds that already).
      if (std::binary_search(t.echo_entry_hashes.begin(), t.echo_entry_hashes.end(), item.entry_hash)) return;
      add_record(store_->view(item), out, used);
      added = true;
    });
  }
  return true;
}

bool SyncSession::run(SendKey& t, SyncMessage& out, size_t& used) {
  if (auto view = store_->find(t.key)) add_record(*view, out, used);
  return true;
}

}  // namespace caesium::gossip
