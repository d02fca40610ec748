// The in-memory layout of one record of a VolumeStore (an implementation detail of
// store.h, in its own header so that the store's templates can see it).
//
// One heap block per key: the header below followed by the key bytes, so the key is stored
// once (the ordered index and the digest hold pointers to the block).  The value lives in a
// second exact-size block, so replacing a value never moves the entry.  The version's origin
// is interned to a 31-bit id (node ids repeat across millions of records); the top bit of
// that word is the tombstone flag.  48 bytes of header on LP64.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "schedule/digest.h"

namespace caesium::schedule::detail {

class Entry : public DigestItem {
 public:
  static constexpr uint32_t kTombstoneBit = 0x8000'0000u;

  // Allocates an entry holding a copy of `key`.  REQUIRES: key.size() < 2^32.
  static Entry* create(std::string_view key) {
    void* mem = ::operator new(sizeof(Entry) + key.size());
    auto* e = new (mem) Entry(static_cast<uint32_t>(key.size()));
    if (!key.empty()) std::memcpy(e->key_bytes(), key.data(), key.size());
    return e;
  }
  static void destroy(Entry* e) {
    e->~Entry();
    ::operator delete(static_cast<void*>(e));
  }

  std::string_view key() const { return {key_bytes(), key_size_}; }
  bool tombstone() const { return (origin_and_flag_ & kTombstoneBit) != 0; }
  uint32_t origin() const { return origin_and_flag_ & ~kTombstoneBit; }
  std::string_view value() const { return {value_.get(), value_size_}; }

  // Replaces the content; the old value block is handed back so that the caller can show
  // the old record to observers before it is freed.
  std::unique_ptr<char[]> set(int64_t new_physical_ms, uint32_t new_logical, uint32_t new_origin,
                              const std::string_view* value) {
    physical_ms = new_physical_ms;
    logical = new_logical;
    origin_and_flag_ = new_origin | (value == nullptr ? kTombstoneBit : 0u);
    std::unique_ptr<char[]> old = std::move(value_);
    value_size_ = 0;
    if (value != nullptr && !value->empty()) {
      value_ = std::make_unique_for_overwrite<char[]>(value->size());
      std::memcpy(value_.get(), value->data(), value->size());
      value_size_ = static_cast<uint32_t>(value->size());
    }
    return old;
  }

  int64_t physical_ms = 0;
  uint32_t logical = 0;

 private:
  explicit Entry(uint32_t key_size) : key_size_(key_size) {}
  char* key_bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* key_bytes() const { return reinterpret_cast<const char*>(this + 1); }

  uint32_t origin_and_flag_ = 0;
  uint32_t value_size_ = 0;
  uint32_t key_size_ = 0;
  std::unique_ptr<char[]> value_;
};

}  // namespace caesium::schedule::detail
