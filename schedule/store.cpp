#include "schedule/store.h"

#include <cstring>
#include <limits>
#include <utility>

#include "base/hash.h"

namespace caesium::schedule {

namespace {

// Distinct seeds so that a key hash never equals an entry hash by construction.
constexpr uint64_t kKeyHashSeed = 0x6b65792d68617368ULL;    // "key-hash"
constexpr uint64_t kEntryHashSeed = 0x656e7472792d6821ULL;  // "entry-h!"

int sign_of(int c) { return (c > 0) - (c < 0); }

// Tie-break for equal versions: tombstone < any value < larger value (bytes, then length).
int compare_content(bool a_tomb, std::string_view a_value, const std::optional<std::string>& b) {
  if (a_tomb || !b) return static_cast<int>(!a_tomb) - static_cast<int>(b.has_value());
  return sign_of(a_value.compare(*b));
}

}  // namespace

Record RecordView::to_record() const {
  Record r;
  r.key.assign(key);
  if (value) r.value.emplace(*value);
  r.version = version();
  return r;
}

VolumeStore::VolumeStore(std::string volume, std::string self_id, Options options)
    : volume_(std::move(volume)),
      options_(options),
      hlc_(std::move(self_id), Hlc::Options{options.max_clock_future_ms}) {
  self_origin_ = intern(hlc_.origin());
}

VolumeStore::~VolumeStore() {
  for (Entry* e : by_key_) Entry::destroy(e);
}

uint64_t VolumeStore::key_hash(std::string_view key) { return hash64(key, kKeyHashSeed); }

uint32_t VolumeStore::intern(std::string_view origin) {
  if (auto it = origin_ids_.find(origin); it != origin_ids_.end()) return it->second;
  // Origins are node ids: a handful per cluster.  The table is never shrunk.
  const auto id = static_cast<uint32_t>(origin_names_.size());
  assert(id < Entry::kTombstoneBit);
  origin_names_.emplace_back(origin);
  origin_hashes_.push_back(hash64(origin));
  origin_ids_.emplace(std::string(origin), id);
  return id;
}

VolumeStore::Entry* VolumeStore::find_entry(std::string_view key) const {
  // Through the digest's buckets (sorted by key hash): one hash and a binary search over
  // ~15 pointers, instead of ~20 key comparisons down the ordered index.
  Entry* found = nullptr;
  digest_.for_each_with_key_hash(key_hash(key), [&](const DigestItem& item) {
    const auto& e = static_cast<const Entry&>(item);
    if (found == nullptr && e.key() == key) found = const_cast<Entry*>(&e);
  });
  return found;
}

RecordView VolumeStore::view_of(const Entry& e) const {
  RecordView v;
  v.key = e.key();
  if (!e.tombstone()) v.value = e.value();
  v.physical_ms = e.physical_ms;
  v.logical = e.logical;
  v.origin = origin_names_[e.origin()];
  return v;
}

uint64_t VolumeStore::entry_hash_of(const Entry& e) const {
  // Everything that distinguishes two records of one key: the version (origin by its
  // hash), the tombstone flag and the value (by its hash).  The key enters through its
  // hash, which the digest places the item by anyway.
  const uint64_t words[5] = {
      e.key_hash,
      static_cast<uint64_t>(e.physical_ms),
      uint64_t{e.logical} | (e.tombstone() ? uint64_t{1} << 32 : 0),
      origin_hashes_[e.origin()],
      e.tombstone() ? 0 : hash64(e.value()),
  };
  return hash64(words, sizeof words, kEntryHashSeed);
}

int VolumeStore::compare_entry(const Entry& e, const Record& rec) const {
  if (e.physical_ms != rec.version.physical_ms) return e.physical_ms < rec.version.physical_ms ? -1 : 1;
  if (e.logical != rec.version.logical) return e.logical < rec.version.logical ? -1 : 1;
  if (int c = sign_of(std::string_view(origin_names_[e.origin()]).compare(rec.version.origin)); c != 0) {
    return c;
  }
  return compare_content(e.tombstone(), e.value(), rec.value);
}

int VolumeStore::compare_with_local(const Record& rec) const {
  const Entry* e = find_entry(rec.key);
  return e == nullptr ? -1 : compare_entry(*e, rec);
}

bool VolumeStore::tombstone_expired(int64_t physical_ms, int64_t now_utc_ms) const {
  // physical_ms < now - grace, written so that it cannot overflow for any inputs.
  return physical_ms < now_utc_ms && now_utc_ms - physical_ms > options_.tombstone_grace_ms;
}

void VolumeStore::notify(const Change& change) {
  if (!observer_) return;
  in_callback_ = true;
  observer_(change);
  in_callback_ = false;
}

void VolumeStore::insert_entry(std::string_view key, HlcTime t, uint32_t origin, const std::string_view* value) {
  Entry* e = Entry::create(key, t.physical_ms, t.logical, origin, value);
  e->key_hash = key_hash(key);
  e->entry_hash = entry_hash_of(*e);
  by_key_.insert(e);
  if (e->tombstone()) tombstones_.insert(e);
  digest_.insert(e);
  notify(Change{e->key(), std::nullopt, view_of(*e)});
}

// The new version goes into the record's own block when it fits snugly (observers are
// shown the old value from a copy); otherwise into a new block that takes the old one's place in
// the indexes, the old one living until observers have seen it.
void VolumeStore::replace_entry(Entry* e, HlcTime t, uint32_t origin, const std::string_view* value) {
  if (e->fits(value == nullptr ? 0 : value->size())) {
    if (e->tombstone()) tombstones_.erase(e);  // before the sort key (physical_ms) changes
    RecordView old_view = view_of(*e);
    if (old_view.value && observer_) {  // the rewrite overwrites the bytes the view shows
      old_value_.assign(*old_view.value);
      old_view.value = std::string_view(old_value_);
    }
    const uint64_t old_hash = e->entry_hash;
    e->rewrite(t.physical_ms, t.logical, origin, value);
    e->entry_hash = entry_hash_of(*e);
    if (e->tombstone()) tombstones_.insert(e);
    digest_.update(e, old_hash);
    notify(Change{e->key(), old_view, view_of(*e)});
    return;
  }
  Entry* n = Entry::create(e->key(), t.physical_ms, t.logical, origin, value);
  n->key_hash = e->key_hash;
  n->entry_hash = entry_hash_of(*n);
  if (e->tombstone()) tombstones_.erase(e);
  digest_.replace(e, n);
  const bool swapped = by_key_.replace(e, n);
  assert(swapped);
  (void)swapped;
  if (n->tombstone()) tombstones_.insert(n);
  notify(Change{n->key(), view_of(*e), view_of(*n)});
  Entry::destroy(e);
}

void VolumeStore::remove_entry(Entry* e) {
  if (e->tombstone()) tombstones_.erase(e);
  digest_.erase(e);
  by_key_.erase(e);
  if (observer_) notify(Change{e->key(), view_of(*e), std::nullopt});
  Entry::destroy(e);
}

Record VolumeStore::write(std::string_view key, const std::string_view* value, int64_t now_utc_ms) {
  assert(!in_callback_);
  assert(key.size() <= kMaxKeyBytes);
  assert(value == nullptr || value->size() <= kMaxValueBytes);
  Entry* e = find_entry(key);
  HlcTime t = hlc_.tick_time(now_utc_ms);
  if (e != nullptr) {
    // The per-key rule: a local write supersedes whatever this replica holds for the key,
    // even a version from a clock far ahead of ours (which the HLC refused to follow).
    const HlcTime held{e->physical_ms, e->logical};
    if (t <= held) {
      t = hlc_successor(held);
      (void)hlc_.observe_time(t, now_utc_ms);
    }
  }
  // Built before the write: `key` and `value` may point into the record being replaced.
  Record r;
  r.key.assign(key);
  if (value != nullptr) r.value.emplace(*value);
  if (e != nullptr) {
    replace_entry(e, t, self_origin_, value);
  } else {
    insert_entry(key, t, self_origin_, value);
  }
  r.version = Version{t.physical_ms, t.logical, hlc_.origin()};
  return r;
}

Record VolumeStore::put(std::string_view key, std::string value, int64_t now_utc_ms) {
  const std::string_view v(value);
  return write(key, &v, now_utc_ms);
}

Record VolumeStore::erase(std::string_view key, int64_t now_utc_ms) { return write(key, nullptr, now_utc_ms); }

MergeOutcome VolumeStore::merge_record(const Record& rec, int64_t now_utc_ms) {
  assert(!in_callback_);
  if (rec.key.size() > kMaxKeyBytes || (rec.value && rec.value->size() > kMaxValueBytes)) {
    return MergeOutcome::kInvalid;
  }
  if (merge_filter_) {
    in_callback_ = true;
    const bool accepted = merge_filter_(rec);
    in_callback_ = false;
    if (!accepted) return MergeOutcome::kRefused;
  }
  (void)hlc_.observe(rec.version, now_utc_ms);
  Entry* e = find_entry(rec.key);
  const int cmp = e == nullptr ? -1 : compare_entry(*e, rec);
  if (!rec.value && tombstone_expired(rec.version.physical_ms, now_utc_ms)) {
    // Too old to keep, but it still wins over an older record: delete that without
    // keeping a tombstone (which would only be purged at once).
    if (e != nullptr && cmp < 0) {
      remove_entry(e);
      return MergeOutcome::kRemoved;
    }
    return MergeOutcome::kExpired;
  }
  if (cmp == 0) return MergeOutcome::kDuplicate;
  if (cmp > 0) return MergeOutcome::kStale;
  const HlcTime t{rec.version.physical_ms, rec.version.logical};
  const uint32_t origin = intern(rec.version.origin);
  std::string_view value;
  if (rec.value) value = *rec.value;
  const std::string_view* vp = rec.value ? &value : nullptr;
  if (e != nullptr) {
    replace_entry(e, t, origin, vp);
  } else {
    insert_entry(rec.key, t, origin, vp);
  }
  return MergeOutcome::kApplied;
}

std::optional<Record> VolumeStore::get(std::string_view key) const {
  const Entry* e = find_entry(key);
  if (e == nullptr) return std::nullopt;
  return view_of(*e).to_record();
}

std::optional<RecordView> VolumeStore::find(std::string_view key) const {
  const Entry* e = find_entry(key);
  if (e == nullptr) return std::nullopt;
  return view_of(*e);
}

size_t VolumeStore::purge_tombstones(int64_t now_utc_ms, size_t limit) {
  assert(!in_callback_);
  size_t purged = 0;
  while (purged < limit && !tombstones_.empty() && tombstone_expired((*tombstones_.begin())->physical_ms, now_utc_ms)) {
    remove_entry(*tombstones_.begin());
    ++purged;
  }
  return purged;
}

bool VolumeStore::remove_local(std::string_view key) {
  assert(!in_callback_);
  Entry* e = find_entry(key);
  if (e == nullptr) return false;
  remove_entry(e);
  return true;
}

bool VolumeStore::check_invariants() const {
  if (!digest_.check_invariants() || !by_key_.check() || digest_.size() != by_key_.size()) return false;
  size_t tombs = 0;
  for (const Entry* e : by_key_) {
    if (e->key_hash != key_hash(e->key()) || e->entry_hash != entry_hash_of(*e)) return false;
    if (e->tombstone()) {
      ++tombs;
      if (tombstones_.count(const_cast<Entry*>(e)) != 1) return false;
    }
  }
  return tombs == tombstones_.size();
}

}  // namespace caesium::schedule
