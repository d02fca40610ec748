#include "gossip/sync_messages.h"

#include <string>

#include "schedule/digest.h"

namespace caesium::gossip {

bool is_demanding(const SyncMessage& msg) {
  return msg.root.has_value() || !msg.fingerprints.empty() || !msg.item_lists.empty() ||
         !msg.wanted.empty();
}

size_t wire_size_varint(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

namespace {

size_t bytes_field(size_t len) { return wire_size_varint(len) + len; }

}  // namespace

size_t wire_size(const schedule::Record& rec) {
  size_t n = bytes_field(rec.key.size());
  n += 1;  // tombstone flag
  if (rec.value) n += bytes_field(rec.value->size());
  n += 8 + wire_size_varint(rec.version.logical) + bytes_field(rec.version.origin.size());
  return n;
}

size_t wire_size(const SyncMessage& msg) {
  size_t n = 8;                                   // framing: message type and length
  n += bytes_field(msg.volume.size());
  n += 8 + wire_size_varint(msg.seq) + 1;         // session id, seq, flags
  n += 1;                                         // which optional parts follow
  if (msg.root) n += 8 + wire_size_varint(msg.root->count);
  if (!msg.fingerprints.empty()) {
    n += wire_size_varint(msg.fingerprints.size());
    for (const auto& f : msg.fingerprints) {
      n += 8 + 1 + 1 + wire_size_varint(f.fingerprints.size()) + 4 * f.fingerprints.size();
    }
  }
  if (!msg.item_lists.empty()) {
    n += wire_size_varint(msg.item_lists.size());
    for (const auto& l : msg.item_lists) n += 8 + 1 + wire_size_varint(l.items.size()) + 12 * l.items.size();
  }
  if (!msg.wanted.empty()) n += wire_size_varint(msg.wanted.size()) + 8 * msg.wanted.size();
  if (!msg.records.empty()) {
    n += wire_size_varint(msg.records.size());
    for (const auto& r : msg.records) n += wire_size(r);
  }
  return n;
}

namespace {

Error shape_error(const std::string& field, size_t index, const std::string& what) {
  return Error("anti-entropy message: " + field + "[" + std::to_string(index) + "] " + what, field);
}

}  // namespace

Status validate_shape(const SyncMessage& msg, const SyncLimits& limits) {
  if (msg.final && (!msg.sender_done || is_demanding(msg))) {
    return Error("anti-entropy message: 'final' set on a message that asks for an answer or "
                 "announces more to come", "final");
  }
  size_t total = 0;
  for (size_t i = 0; i < msg.fingerprints.size(); ++i) {
    const SyncFingerprints& f = msg.fingerprints[i];
    const schedule::HashRange range{f.prefix, f.prefix_bits};
    if (f.step_bits < 1 || f.step_bits > limits.max_step_bits) {
      return shape_error("fingerprints", i, "has step " + std::to_string(f.step_bits) + ", want 1.." +
                                                std::to_string(limits.max_step_bits));
    }
    if (f.prefix_bits + f.step_bits > 64 || !range.well_formed()) {
      return shape_error("fingerprints", i, "names a malformed range (" + std::to_string(f.prefix_bits) +
                                                " prefix bits + step " + std::to_string(f.step_bits) + ")");
    }
    if (f.fingerprints.size() != (size_t{1} << f.step_bits)) {
      return shape_error("fingerprints", i, "holds " + std::to_string(f.fingerprints.size()) +
                                                " fingerprints, its step wants " +
                                                std::to_string(size_t{1} << f.step_bits));
    }
    total += f.fingerprints.size();
    if (total > limits.max_fingerprints) {
      return shape_error("fingerprints", i, "exceeds the limit of " + std::to_string(limits.max_fingerprints) +
                                                " fingerprints per message");
    }
  }
  total = 0;
  for (size_t i = 0; i < msg.item_lists.size(); ++i) {
    const SyncItemList& l = msg.item_lists[i];
    const schedule::HashRange range{l.prefix, l.prefix_bits};
    if (!range.well_formed()) return shape_error("item_lists", i, "names a malformed range");
    total += l.items.size();
    if (total > limits.max_items) {
      return shape_error("item_lists", i, "exceeds the limit of " + std::to_string(limits.max_items) +
                                              " items per message");
    }
    for (size_t k = 0; k < l.items.size(); ++k) {
      if (!range.contains(l.items[k].key_hash)) return shape_error("item_lists", i, "has an item outside its range");
      if (k > 0 && !(l.items[k - 1] < l.items[k])) {
        return shape_error("item_lists", i, "is not sorted by (key hash, fingerprint) without repeats");
      }
    }
  }
  if (msg.wanted.size() > limits.max_wanted) {
    return Error("anti-entropy message: wanted has " + std::to_string(msg.wanted.size()) +
                 " key hashes, the limit is " + std::to_string(limits.max_wanted), "wanted");
  }
  if (msg.records.size() > limits.max_records) {
    return Error("anti-entropy message: " + std::to_string(msg.records.size()) +
                 " records, the limit is " + std::to_string(limits.max_records), "records");
  }
  for (size_t i = 0; i < msg.records.size(); ++i) {
    const schedule::Record& r = msg.records[i];
    if (r.key.size() > limits.max_key_bytes) return shape_error("records", i, "has a key over the size limit");
    if (r.value && r.value->size() > limits.max_value_bytes) {
      return shape_error("records", i, "has a value over the size limit");
    }
    if (r.version.origin.empty() || r.version.origin.size() > limits.max_origin_bytes) {
      return shape_error("records", i, "has an empty or oversized origin node id");
    }
  }
  return Status::success();
}

}  // namespace caesium::gossip
