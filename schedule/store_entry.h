// The in-memory layout of one record of a VolumeStore (an implementation detail of
// store.h, in its own header so that the store's templates can see it).
//
// One heap block per record: the header below, then the key bytes, then the value bytes,
// so a record costs one allocation (the ordered index and the digest hold pointers to the
// block).  A new version of a key is written into the same block when it fits in what
// malloc gave it (malloc_usable_size) and uses at least half of it, else into a new block that takes the old one's
// place in every index (VolumeStore::replace_entry).  The version's origin is interned to
// a 31-bit id (node ids repeat across millions of records); the top bit of that word is
// the tombstone flag.  40 bytes of header on LP64.
#pragma once

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "schedule/digest.h"

namespace caesium::schedule::detail {

class Entry : public DigestItem {
 public:
  static constexpr uint32_t kTombstoneBit = 0x8000'0000u;

  // Allocates a record holding copies of `key` and `*value` (nullptr: a tombstone).
  // REQUIRES: key.size() < 2^32, value->size() < 2^32.  key_hash and entry_hash are the
  // caller's to set.
  static Entry* create(std::string_view key, int64_t physical_ms, uint32_t logical, uint32_t origin,
                       const std::string_view* value) {
    const size_t value_size = value == nullptr ? 0 : value->size();
    void* mem = std::malloc(sizeof(Entry) + key.size() + value_size);
    if (mem == nullptr) throw std::bad_alloc();
    auto* e = new (mem) Entry(static_cast<uint32_t>(key.size()));
    if (!key.empty()) std::memcpy(e->key_bytes(), key.data(), key.size());
    e->rewrite(physical_ms, logical, origin, value);
    return e;
  }
  static void destroy(Entry* e) {
    e->~Entry();
    std::free(e);
  }
  // Whether a version with a value of `value_size` bytes fits in this block without
  // wasting most of it (a large value overwritten by a small one or by a tombstone must
  // not pin its block for as long as the record lives).
  bool fits(size_t value_size) const {
    const size_t need = sizeof(Entry) + key_size_ + value_size;
    const size_t have = malloc_usable_size(const_cast<Entry*>(this));
    return need <= have && have <= 2 * need;
  }
  // Replaces version and value in place.  REQUIRES: fits(value size).  `value` may point
  // into this record's own value.
  void rewrite(int64_t new_physical_ms, uint32_t new_logical, uint32_t new_origin, const std::string_view* value) {
    physical_ms = new_physical_ms;
    logical = new_logical;
    origin_and_flag_ = new_origin | (value == nullptr ? kTombstoneBit : 0u);
    value_size_ = value == nullptr ? 0 : static_cast<uint32_t>(value->size());
    if (value_size_ != 0) std::memmove(key_bytes() + key_size_, value->data(), value_size_);
  }

  std::string_view key() const { return {key_bytes(), key_size_}; }
  bool tombstone() const { return (origin_and_flag_ & kTombstoneBit) != 0; }
  uint32_t origin() const { return origin_and_flag_ & ~kTombstoneBit; }
  std::string_view value() const { return {key_bytes() + key_size_, value_size_}; }

  int64_t physical_ms = 0;
  uint32_t logical = 0;

 private:
  explicit Entry(uint32_t key_size) : key_size_(key_size) {}
  char* key_bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* key_bytes() const { return reinterpret_cast<const char*>(this + 1); }

  uint32_t origin_and_flag_ = 0;
  uint32_t key_size_ = 0;
  uint32_t value_size_ = 0;
};

}  // namespace caesium::schedule::detail
