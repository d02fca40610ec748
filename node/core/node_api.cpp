// Node core, part 4: the local API — entries and their occurrence history.  Writes
// return the storage sequence that must be durable before the caller acknowledges.
#include <algorithm>
#include <cassert>

#include "base/hash.h"

#include "node/core/node.h"

namespace caesium::node {

bool Node::is_replica(std::string_view volume) const {
  auto it = volumes_.find(std::string(volume));
  return it != volumes_.end() && !it->second.departing;
}

Result<WriteAck> Node::put_entry(const std::string& volume, const schedule::Entry& entry, Clock now, bool want_acks) {
  last_ = now;
  auto it = volumes_.find(volume);
  if (it == volumes_.end() || it->second.departing) {
    return Error("this node does not replicate volume '" + volume + "'", "volume");
  }
  if (Status s = schedule::validate(entry); !s.ok()) return s.error();
  const std::string key = schedule::entry_key(entry.entity, entry.name);
  schedule::Record rec = it->second.store->put(key, schedule::encode_entry(entry), now.utc_ms);
  it->second.push[rec.key] = rec;
  it->second.push_wants_ack = it->second.push_wants_ack || want_acks;
  pump(now);
  return WriteAck{std::move(rec), write_barrier()};
}

Result<WriteAck> Node::delete_entry(const std::string& volume, const std::string& entity, const std::string& name,
                                    Clock now, bool want_acks) {
  last_ = now;
  auto it = volumes_.find(volume);
  if (it == volumes_.end() || it->second.departing) {
    return Error("this node does not replicate volume '" + volume + "'", "volume");
  }
  const std::string key = schedule::entry_key(entity, name);
  auto existing = it->second.store->find(key);
  if (!existing || !existing->value) return Error("no entry '" + name + "' for entity '" + entity + "'", "name");
  schedule::Record rec = it->second.store->erase(key, now.utc_ms);
  it->second.push[rec.key] = rec;
  it->second.push_wants_ack = it->second.push_wants_ack || want_acks;
  pump(now);
  return WriteAck{std::move(rec), write_barrier()};
}

Result<WriteAck> Node::set_paused(const std::string& volume, const std::string& entity, const std::string& name,
                                  bool paused, Clock now, bool want_acks) {
  if (!is_replica(volume)) return Error("this node does not replicate volume '" + volume + "'", "volume");
  std::optional<schedule::Entry> entry = get_entry(volume, entity, name);
  if (!entry) return Error("no entry '" + name + "' for entity '" + entity + "'", "name");
  schedule::apply_pause(*entry, paused, now.utc_ms);
  return put_entry(volume, *entry, now, want_acks);
}

Result<Node::TriggerAck> Node::trigger_entry(const std::string& volume, const std::string& entity,
                                             const std::string& name, std::string_view idempotency_key, Clock now,
                                             bool want_acks) {
  last_ = now;
  auto it = volumes_.find(volume);
  if (it == volumes_.end() || it->second.departing) {
    return Error("this node does not replicate volume '" + volume + "'", "volume");
  }
  std::optional<schedule::Entry> entry = get_entry(volume, entity, name);
  if (!entry) return Error("no entry '" + name + "' for entity '" + entity + "'", "name");
  const std::string key = schedule::entry_key(entity, name);
  // The id: from the Idempotency-Key, so a retry finds its trigger, or unique to this
  // process and instant.
  const std::string id =
      !idempotency_key.empty()
          ? schedule::trigger_id_for_key(idempotency_key)
          : schedule::trigger_id('t', hash_combine(hash_combine(hash64(options_.id), boot_id_),
                                                   hash_combine(static_cast<uint64_t>(now.utc_ms), ++triggers_made_)));
  const auto held = it->second.store->find(key);
  if (const schedule::Trigger* t = entry->trigger_named(id)) {
    // A retry: the same answer, and nothing written.  The caller still waits for the
    // record that holds it to be as durable as asked.
    assert(held.has_value());
    return TriggerAck{WriteAck{held->to_record(), write_barrier()}, *t, true};
  }
  if (entry->paused) return Error("entry '" + name + "' of entity '" + entity + "' is paused; resume it first", "paused");
  // Due no earlier than the version this write will get (the later of the clock, the
  // store's clock and the version held for the key, + 1 ms for a logical overflow), so
  // the trigger is an occurrence that falls due after the write that adds it: the edit
  // rule governs it like any other (docs/firing.md, Run now).
  int64_t floor_ms = std::max(now.utc_ms, it->second.store->clock().last().physical_ms);
  if (held) floor_ms = std::max(floor_ms, held->physical_ms);
  auto trigger = schedule::add_trigger(*entry, id, floor_ms + 1, now.utc_ms);
  if (!trigger) return trigger.error();
  auto ack = put_entry(volume, *entry, now, want_acks);
  if (!ack) return ack.error();
  assert(ack->record.version.physical_ms <= trigger->at_utc_ms);
  return TriggerAck{std::move(*ack), std::move(*trigger), false};
}

std::optional<schedule::Entry> Node::get_entry(const std::string& volume, const std::string& entity,
                                               const std::string& name) const {
  auto value = store_get(volume, schedule::entry_key(entity, name));
  if (!value) return std::nullopt;
  auto e = schedule::decode_entry(*value);
  if (!e) return std::nullopt;
  return std::move(*e);
}

std::vector<schedule::Entry> Node::list_entries(const std::string& volume, std::string_view entity_prefix,
                                                std::string_view start_after, size_t limit) const {
  std::vector<schedule::Entry> out;
  auto it = volumes_.find(volume);
  if (it == volumes_.end()) return out;
  // Entry keys are "<entity>/caesium/schedule/<name>": scanning by entity prefix visits
  // other records of those entities too (their state), which are skipped.
  std::string after(start_after);
  while (out.size() < limit) {
    size_t visited = 0;
    std::string last;
    it->second.store->scan(entity_prefix, after, 256, [&](const schedule::RecordView& r) {
      ++visited;
      last = std::string(r.key);
      if (out.size() >= limit || !r.value || !schedule::is_entry_key(r.key)) return;
      auto e = schedule::decode_entry(*r.value);
      if (e) out.push_back(std::move(*e));
    });
    if (visited == 0) break;
    after = last;
  }
  return out;
}

std::vector<Node::OccurrenceHistory> Node::history(const std::string& volume, const std::string& entity,
                                                   const std::string& name, size_t limit) const {
  std::vector<OccurrenceHistory> out;
  auto it = volumes_.find(volume);
  if (it == volumes_.end()) return out;
  const std::string prefix = std::string(schedule::kOccPrefix) + entity + "/" + name + "/";
  std::map<int64_t, OccurrenceHistory> by_time;
  it->second.store->scan(prefix, {}, SIZE_MAX, [&](const schedule::RecordView& r) {
    if (!r.value) return;
    auto parsed = schedule::parse_occ_key(r.key);
    if (!parsed) return;
    OccurrenceHistory& h = by_time[parsed->occ.scheduled_utc_ms];
    h.occ = parsed->occ;
    if (parsed->kind == schedule::ParsedOccKey::Kind::kOwner) {
      if (auto o = schedule::decode_owner_record(*r.value)) h.owners.push_back(std::move(*o));
    } else if (parsed->kind == schedule::ParsedOccKey::Kind::kWorker) {
      if (auto w = schedule::decode_worker_record(*r.value)) h.workers.emplace_back(parsed->suffix, std::move(*w));
    }  // a replace record (overlap = replace) shows through the records it brought about
  });
  // Most recent first.
  for (auto rit = by_time.rbegin(); rit != by_time.rend() && out.size() < limit; ++rit) out.push_back(std::move(rit->second));
  return out;
}

std::optional<int64_t> Node::next_occurrence(const std::string& volume, const std::string& key) const {
  return scheduler_ ? scheduler_->next_scheduled(volume, key) : std::nullopt;
}

}  // namespace caesium::node

namespace caesium::node {

size_t Node::replica_acks(const std::string& volume, const std::string& key, const schedule::Version& version) const {
  auto it = volumes_.find(volume);
  if (it == volumes_.end()) return 0;
  // This node, unless its scheduler holds the acknowledgement of an entry write back
  // (Scheduler::ack_hold_until_mono; the caller asks again).
  // The write's time here, from its version (this node's clock, or later): grants given
  // after it were given under it.
  const int64_t written_mono = last_.mono_ms - std::max<int64_t>(0, last_.utc_ms - version.physical_ms);
  const bool held =
      schedule::is_entry_key(key) && scheduler_->ack_hold_until_mono(volume, key, written_mono) > last_.mono_ms;
  size_t n = held ? 0 : 1;
  auto a = it->second.acks.find(key);
  if (a == it->second.acks.end()) return n;
  for (const auto& [node, v] : a->second.by_node) {
    if (node != options_.id && !(v < version)) ++n;
  }
  return n;
}

}  // namespace caesium::node
