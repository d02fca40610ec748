// ByteWriter / ByteReader: a compact, versionable binary encoding for values Caesium
// stores (occurrence records, grants, node state): LEB128 varints, zigzag for signed,
// length-prefixed strings.  The reader treats its input as hostile: every read is
// bounds-checked and a failure sticks (`ok()` turns false and stays false), so a
// decoder can read a whole record and check once at the end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace caesium {

class ByteWriter {
 public:
  ByteWriter() = default;
  // Room for `bytes` without regrowing (an estimate of the encoding's size).
  explicit ByteWriter(size_t bytes) { out_.reserve(bytes); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void svarint(int64_t v) {
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void str(std::string_view s) {
    varint(s.size());
    out_.append(s);
  }
  void boolean(bool b) { u8(b ? 1 : 0); }

  const std::string& data() const& { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  uint8_t u8() {
    if (pos_ >= in_.size()) return fail<uint8_t>();
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return fail<uint64_t>();
      const auto b = static_cast<uint8_t>(in_[pos_++]);
      if (shift == 63 && b > 1) return fail<uint64_t>();  // overflow
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        if (b == 0 && shift > 0) shortest_ = false;  // a redundant form (0x80 0x00 is also 0)
        return v;
      }
    }
    return fail<uint64_t>();
  }
  int64_t svarint() {
    const uint64_t z = varint();
    return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  // REQUIRES: nothing; a length beyond the input (or beyond `max_len`) fails.
  std::string str(size_t max_len = 1 << 24) {
    const uint64_t n = varint();
    if (!ok_ || n > max_len || n > in_.size() - pos_) return fail<std::string>();
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  bool boolean() {
    const uint8_t b = u8();
    if (b > 1) return fail<bool>();
    return b == 1;
  }

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  // Every varint read so far (string lengths included) was in its shortest form, the one
  // ByteWriter writes.  Formats with exactly one encoding per value check it.
  bool shortest_varints() const { return shortest_; }
  // True when everything read succeeded and all input was consumed.
  bool done() const { return ok_ && at_end(); }

 private:
  template <class T>
  T fail() {
    ok_ = false;
    pos_ = in_.size();
    return T{};
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
  bool shortest_ = true;
};

}  // namespace caesium
