// VolumeStore: one replica of a volume's replicated map, key -> {value or tombstone, version}.
//
// A state-based CRDT (docs/design.md §5): merge keeps, per key, the record with the highest
// (version, content), so merging is commutative, associative and idempotent and replicas
// that have seen the same records hold identical contents and digests whatever the order.
// "Content" only breaks ties between two records with the same version, which honest nodes
// never produce (a version is made once by one origin) but a bug or a corrupted peer could:
// tombstone < value, then values by bytes.  Without it two replicas could keep different
// contents under one version forever.
//
// Tombstones.  erase() writes a tombstone; purge_tombstones(now) drops those whose version
// is older than tombstone_grace.  A tombstone that arrives already older than the grace
// is not stored (it would be purged at once, and storing it would resurrect nothing), but
// it still deletes an older record this replica holds.  Trade-off: a replica that was
// partitioned longer than tombstone_grace, and still holds a record deleted meanwhile,
// brings that record back when it reconnects (everyone else purged the tombstone).  The
// grace must exceed the longest partition to survive (default 7 days), see docs/store.md.
//
// Versions come from a hybrid logical clock (schedule/hlc.h).  A local write always gets a
// version above both the clock and the version this replica holds for that key, so a
// record stamped by a runaway clock can still be overwritten.
//
// The digest (schedule/digest.h) is maintained on every change in O(log n); anti-entropy
// (gossip/anti_entropy.h) reads it through digest(), view() and the key-hash helpers.
//
// Sans-IO: time is an argument.  Not thread-safe.  Observers and the merge filter must
// not modify the store (asserted).  Memory: one block per record (header + key + value),
// a pointer in the key order and one in the digest; `caesium-bench store` measures the
// bytes per record beyond key and value (docs/store.md).
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/sorted_blocks.h"
#include "schedule/digest.h"
#include "schedule/hlc.h"
#include "schedule/store_entry.h"

namespace caesium::schedule {

struct Record {
  std::string key;
  std::optional<std::string> value;  // nullopt = tombstone
  Version version;
  friend bool operator==(const Record&, const Record&) = default;
};

// A record inside the store, without copies.  Valid until the store is next modified.
struct RecordView {
  std::string_view key;
  std::optional<std::string_view> value;  // nullopt = tombstone
  int64_t physical_ms = 0;
  uint32_t logical = 0;
  std::string_view origin;

  bool tombstone() const { return !value.has_value(); }
  Version version() const { return Version{physical_ms, logical, std::string(origin)}; }
  Record to_record() const;
};

// One state change, for observers.  Views are valid during the callback only.
struct Change {
  std::string_view key;
  std::optional<RecordView> old_record;  // nullopt: the key was absent
  std::optional<RecordView> new_record;  // nullopt: the key is now absent (purge, remove)
};

// What merge() did with a record.
enum class MergeOutcome : uint8_t {
  kApplied,    // the record is now the key's state
  kRemoved,    // an expired tombstone deleted an older local record (no tombstone kept)
  kDuplicate,  // the store already held exactly this record
  kStale,      // the store holds a greater record for the key
  kExpired,    // a tombstone older than the grace with nothing older to delete: ignored
  kRefused,    // the merge filter refused it
  kInvalid,    // key or value too large to represent
};

struct VolumeStoreOptions {
  int64_t tombstone_grace_ms = 7LL * 24 * 3600 * 1000;
  int64_t max_clock_future_ms = 60'000;  // the HLC's drift bound (schedule/hlc.h)
};

class VolumeStore {
 public:
  using Options = VolumeStoreOptions;
  static constexpr size_t kMaxKeyBytes = (size_t{1} << 31) - 1;
  static constexpr size_t kMaxValueBytes = (size_t{1} << 31) - 1;

  VolumeStore(std::string volume, std::string self_id, Options options = {});
  ~VolumeStore();
  VolumeStore(const VolumeStore&) = delete;
  VolumeStore& operator=(const VolumeStore&) = delete;

  const std::string& volume() const { return volume_; }
  const std::string& self_id() const { return hlc_.origin(); }
  const Options& options() const { return options_; }

  // Local write: a new version above the clock and above the key's current version.
  // Returns the record to persist and push to the other replicas.
  // REQUIRES: key.size() <= kMaxKeyBytes, value.size() <= kMaxValueBytes.
  Record put(std::string_view key, std::string value, int64_t now_utc_ms);
  // Local delete: writes a tombstone (also for a key this replica does not hold: another
  // replica may hold it).
  Record erase(std::string_view key, int64_t now_utc_ms);

  // Merges a record from a peer or from disk.  True iff the store's state changed.
  bool merge(const Record& rec, int64_t now_utc_ms) {
    const MergeOutcome o = merge_record(rec, now_utc_ms);
    return o == MergeOutcome::kApplied || o == MergeOutcome::kRemoved;
  }
  MergeOutcome merge_record(const Record& rec, int64_t now_utc_ms);

  // The key's record, tombstones included (value nullopt).
  std::optional<Record> get(std::string_view key) const;
  std::optional<RecordView> find(std::string_view key) const;

  // Visits records whose key starts with `prefix` and is > start_after, in key order, at
  // most `limit` of them: fn(const RecordView&).  Tombstones only when asked.  Returns the
  // number visited; page on by passing the last key seen as start_after.
  template <class F>
  size_t scan(std::string_view prefix, std::string_view start_after, size_t limit, F&& fn,
              bool include_tombstones = false) const;

  size_t live_size() const { return by_key_.size() - tombstones_.size(); }
  size_t tombstone_count() const { return tombstones_.size(); }
  size_t size() const { return by_key_.size(); }

  // Drops tombstones whose version is older than now - tombstone_grace (oldest first), at
  // most `limit` of them (a mass deletion expires all at once a grace later; the caller
  // can spread the purge over several calls).  Writes no tombstone for the purge.
  // Returns how many were dropped.
  size_t purge_tombstones(int64_t now_utc_ms, size_t limit = SIZE_MAX);
  // Drops a record without a tombstone (e.g. expired occurrence state).  True if present.
  bool remove_local(std::string_view key);

  // Records for which filter(rec) is false are refused by merge (kRefused).
  void set_merge_filter(std::function<bool(const Record&)> filter) { merge_filter_ = std::move(filter); }
  // Called after every state change (put, erase, merge, purge, remove_local).
  void set_observer(std::function<void(const Change&)> observer) { observer_ = std::move(observer); }

  // Equal iff contents are equal (with probability 1 - ~2^-64).
  uint64_t root_digest() const { return digest_.root().fingerprint(); }

  // --- For anti-entropy --------------------------------------------------------------
  static uint64_t key_hash(std::string_view key);
  const Digest& digest() const { return digest_; }
  // REQUIRES: item comes from this store's digest() and the store was not modified since.
  RecordView view(const DigestItem& item) const { return view_of(static_cast<const detail::Entry&>(item)); }
  // The digest item (key hash, entry hash) of the key's record, if present.
  std::optional<DigestItem> digest_item(std::string_view key) const {
    const Entry* e = find_entry(key);
    if (e == nullptr) return std::nullopt;
    return DigestItem{e->key_hash, e->entry_hash};
  }
  // Compares the store's record for rec.key with rec: <0 store's is smaller (or absent),
  // 0 equal, >0 the store holds a greater record.
  int compare_with_local(const Record& rec) const;

  const Hlc& clock() const { return hlc_; }
  // True when the internal indexes agree (digest invariants, tombstone index); O(n).
  bool check_invariants() const;

 private:
  using Entry = detail::Entry;
  struct KeyLess {
    using is_transparent = void;
    bool operator()(const Entry* a, const Entry* b) const { return a->key() < b->key(); }
    bool operator()(const Entry* a, std::string_view b) const { return a->key() < b; }
    bool operator()(std::string_view a, const Entry* b) const { return a < b->key(); }
  };
  struct TombstoneLess {  // oldest first; key breaks ties so purge order is deterministic
    bool operator()(const Entry* a, const Entry* b) const {
      return a->physical_ms != b->physical_ms ? a->physical_ms < b->physical_ms : a->key() < b->key();
    }
  };

  Entry* find_entry(std::string_view key) const;
  uint32_t intern(std::string_view origin);
  RecordView view_of(const Entry& e) const;
  uint64_t entry_hash_of(const Entry& e) const;
  int compare_entry(const Entry& e, const Record& rec) const;
  bool tombstone_expired(int64_t physical_ms, int64_t now_utc_ms) const;
  Record write(std::string_view key, const std::string_view* value, int64_t now_utc_ms);
  // The three mutations; each keeps every index consistent and then notifies.
  void insert_entry(std::string_view key, HlcTime t, uint32_t origin, const std::string_view* value);
  void replace_entry(Entry* e, HlcTime t, uint32_t origin, const std::string_view* value);
  void remove_entry(Entry* e);
  void notify(const Change& change);

  std::string volume_;
  Options options_;
  Hlc hlc_;
  uint32_t self_origin_ = 0;
  std::vector<std::string> origin_names_;  // interned origin id -> node id
  std::vector<uint64_t> origin_hashes_;    // interned origin id -> xxh3(node id)
  std::map<std::string, uint32_t, std::less<>> origin_ids_;
  SortedBlocks<Entry*, KeyLess> by_key_;  // key order, for scans (base/sorted_blocks.h)
  std::set<Entry*, TombstoneLess> tombstones_;
  Digest digest_;
  std::function<bool(const Record&)> merge_filter_;
  std::function<void(const Change&)> observer_;
  mutable bool in_callback_ = false;  // observers and filters must not re-enter
  std::string old_value_;  // replace_entry: the old value, shown to observers after an in-place rewrite
};

template <class F>
size_t VolumeStore::scan(std::string_view prefix, std::string_view start_after, size_t limit, F&& fn,
                         bool include_tombstones) const {
  // An empty start_after means "from the first key with the prefix".
  auto it = !start_after.empty() && start_after >= prefix ? by_key_.upper_bound(start_after)
                                                          : by_key_.lower_bound(prefix);
  size_t visited = 0;
  for (; it != by_key_.end() && visited < limit; ++it) {
    const Entry* e = *it;
    if (e->key().substr(0, prefix.size()) != prefix) break;
    if (e->tombstone() && !include_tombstones) continue;
    fn(view_of(*e));
    ++visited;
  }
  return visited;
}

}  // namespace caesium::schedule
