#include "node/wire/frame.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>
#include <vector>

#include <sodium.h>

#include "base/base64.h"
#include "base/hash.h"

namespace caesium::wire {
namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The associated data of a frame: its 32 header bytes, then the cluster name (at most
// 128 bytes, the config's limit).  On the stack: it was a heap string per frame.
class AssociatedData {
 public:
  AssociatedData(const uint8_t* header, const std::string& cluster_name) {
    std::memcpy(buf_.data(), header, kFrameHeaderBytes);
    if (kFrameHeaderBytes + cluster_name.size() <= buf_.size()) {
      std::memcpy(buf_.data() + kFrameHeaderBytes, cluster_name.data(), cluster_name.size());
      size_ = kFrameHeaderBytes + cluster_name.size();
      data_ = buf_.data();
    } else {  // longer than any configured name: correct, just not on the stack
      heap_.assign(buf_.data(), buf_.data() + kFrameHeaderBytes);
      heap_.insert(heap_.end(), cluster_name.begin(), cluster_name.end());
      size_ = heap_.size();
      data_ = heap_.data();
    }
  }
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::array<uint8_t, kFrameHeaderBytes + 128> buf_;
  std::vector<uint8_t> heap_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

// --- Keyring ---------------------------------------------------------------------------

uint32_t Keyring::key_id(const Key& key) {
  return static_cast<uint32_t>(hash64(key.data(), key.size(), 0x6b6579));
}

Keyring Keyring::single(const Key& key) {
  Keyring k;
  k.keys_.push_back(key);
  k.ids_.push_back(key_id(key));
  return k;
}

Result<Keyring> Keyring::parse(std::string_view text) {
  Keyring ring;
  std::vector<Key> accepted;
  bool have_primary = false;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    const std::string where = "key file line " + std::to_string(line_no);
    if (eq == std::string_view::npos) {
      return Error(where + ": expected 'primary = <base64 key>' or 'accept = <base64 key>'");
    }
    const std::string_view name = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    auto raw = base64_decode(value);
    if (!raw) return Error(where + ": the key is not valid base64");
    if (raw->size() != kKeyBytes) {
      return Error(where + ": a key must be " + std::to_string(kKeyBytes) + " bytes, this one is " +
                   std::to_string(raw->size()));
    }
    Key key;
    std::memcpy(key.data(), raw->data(), kKeyBytes);
    if (name == "primary") {
      if (have_primary) return Error(where + ": more than one primary key");
      have_primary = true;
      ring.keys_.insert(ring.keys_.begin(), key);
    } else if (name == "accept") {
      accepted.push_back(key);
    } else {
      return Error(where + ": unknown entry '" + std::string(name) + "' (expected primary or accept)");
    }
  }
  if (!have_primary) return Error("key file has no 'primary = ...' line");
  for (const auto& k : accepted) ring.keys_.push_back(k);
  for (const auto& k : ring.keys_) ring.ids_.push_back(key_id(k));
  return ring;
}

std::string Keyring::to_text() const {
  std::ostringstream out;
  out << "# Caesium cluster key file: one primary key (seals), more accepted keys (open).\n";
  for (size_t i = 0; i < keys_.size(); ++i) {
    out << (i == 0 ? "primary = " : "accept = ")
        << base64_encode(std::string_view(reinterpret_cast<const char*>(keys_[i].data()), kKeyBytes)) << "\n";
  }
  return out.str();
}

const Key* Keyring::find(uint32_t id) const {
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (ids_[i] == id) return &keys_[i];
  }
  return nullptr;
}

// --- FrameCipher -----------------------------------------------------------------------

const char* to_string(FrameError e) {
  switch (e) {
    case FrameError::kTooShort: return "frame too short";
    case FrameError::kBadMagic: return "not a Caesium frame";
    case FrameError::kBadFormat: return "unknown frame format";
    case FrameError::kUnknownKey: return "frame sealed with an unknown key";
    case FrameError::kAuthFailed: return "frame failed authentication";
  }
  return "frame error";
}

FrameCipher::FrameCipher(Keyring keyring, std::string cluster_name, uint64_t boot_id)
    : keyring_(std::move(keyring)), cluster_name_(std::move(cluster_name)), boot_id_(boot_id) {}

// XChaCha20-Poly1305 is ChaCha20-Poly1305 (IETF) under the subkey HChaCha20(key, nonce
// bytes 0..15), with nonce bytes 16..23 as the last 8 bytes of its 12-byte nonce.  Our
// nonce's first 16 bytes are the boot id and zeros, the same for every frame this
// process seals, so the subkey is derived once per primary key instead of once per frame
// (HChaCha20 was ~5% of the simulator's CPU at N = 1000).  The frame is exactly what
// crypto_aead_xchacha20poly1305_ietf_encrypt makes of the same nonce, which the wire
// test checks; receivers open it with the standard call.
const uint8_t* FrameCipher::sealing_subkey() {
  if (!subkey_ready_) {
    uint8_t in[16] = {};
    put_u64(in, boot_id_);
    crypto_core_hchacha20(subkey_.data(), in, keyring_.primary().data(), nullptr);
    subkey_ready_ = true;
  }
  return subkey_.data();
}

std::string FrameCipher::seal(FrameChannel channel, std::string_view plaintext) {
  std::string frame(kFrameHeaderBytes + plaintext.size() + kFrameTagBytes, '\0');
  auto* h = reinterpret_cast<uint8_t*>(frame.data());
  h[0] = kFrameMagic;
  h[1] = kFrameFormat;
  h[2] = static_cast<uint8_t>(channel);
  h[3] = 0;
  put_u32(h + 4, keyring_.primary_id());
  put_u64(h + 8, boot_id_);
  // bytes 16..23 stay zero
  put_u64(h + 24, ++counter_);
  const AssociatedData ad(h, cluster_name_);
  uint8_t npub[12] = {};
  std::memcpy(npub + 4, h + 24, 8);
  unsigned long long clen = 0;
  crypto_aead_chacha20poly1305_ietf_encrypt(h + kFrameHeaderBytes, &clen,
                                            reinterpret_cast<const unsigned char*>(plaintext.data()),
                                            plaintext.size(), ad.data(), ad.size(), nullptr, npub,
                                            sealing_subkey());
  return frame;
}

bool FrameCipher::open(std::string_view frame, OpenedFrame& out, FrameError& error) const {
  if (frame.size() < kFrameOverheadBytes) {
    error = FrameError::kTooShort;
    return false;
  }
  const auto* h = reinterpret_cast<const uint8_t*>(frame.data());
  if (h[0] != kFrameMagic) {
    error = FrameError::kBadMagic;
    return false;
  }
  if (h[1] != kFrameFormat || h[2] > 1 || h[3] != 0) {
    error = FrameError::kBadFormat;
    return false;
  }
  const Key* key = keyring_.find(get_u32(h + 4));
  if (key == nullptr) {
    error = FrameError::kUnknownKey;
    return false;
  }
  const AssociatedData ad(h, cluster_name_);
  const size_t clen = frame.size() - kFrameHeaderBytes;
  out.plaintext.resize(clen - kFrameTagBytes);
  unsigned long long mlen = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(out.plaintext.data()), &mlen, nullptr, h + kFrameHeaderBytes,
          clen, ad.data(), ad.size(), h + 8, key->data()) != 0) {
    error = FrameError::kAuthFailed;
    return false;
  }
  out.channel = static_cast<FrameChannel>(h[2]);
  out.boot_id = get_u64(h + 8);
  return true;
}

// --- ReplayGuard -----------------------------------------------------------------------

ReplayGuard::Verdict ReplayGuard::check(std::string_view sender, uint64_t boot, FrameChannel channel,
                                        uint64_t seq, int64_t sent_utc_ms, int64_t now_utc_ms) {
  const int64_t age = now_utc_ms - sent_utc_ms;
  if (age > window_ms_ || -age > window_ms_) return Verdict::kTooOld;
  forget_idle(now_utc_ms);
  Window& w = windows_.get_or_insert(key_of(sender, boot, channel));
  w.last_seen_utc_ms = now_utc_ms;
  if (seq == 0) return Verdict::kStale;  // senders number from 1
  if (seq > w.highest) {
    const uint64_t advance = seq - w.highest;
    if (advance >= kWindowBits) {
      w.bits.fill(0);
    } else {
      // Clear the ring positions of highest+1 .. seq: they held numbers now out of the
      // window.  A word at a time where the run covers whole words.
      uint64_t pos = (w.highest + 1) % kWindowBits;
      for (uint64_t left = advance; left > 0;) {
        const uint64_t offset = pos % 64;
        const uint64_t n = std::min<uint64_t>(left, 64 - offset);
        const uint64_t mask = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1) << offset;
        w.bits[pos / 64] &= ~mask;
        left -= n;
        pos = (pos + n) % kWindowBits;
      }
    }
    w.highest = seq;
    w.bits[(seq % kWindowBits) / 64] |= uint64_t{1} << (seq % 64);
    return Verdict::kFresh;
  }
  if (w.highest - seq >= kWindowBits) return Verdict::kStale;
  uint64_t& word = w.bits[(seq % kWindowBits) / 64];
  const uint64_t bit = uint64_t{1} << (seq % 64);
  if (word & bit) return Verdict::kReplayed;
  word |= bit;
  return Verdict::kFresh;
}

uint64_t ReplayGuard::key_of(std::string_view sender, uint64_t boot, FrameChannel channel) {
  return hash_combine(hash64(sender), boot ^ (uint64_t{static_cast<uint8_t>(channel)} << 56));
}

void ReplayGuard::forget_idle(int64_t now_utc_ms) {
  // A window idle for more than twice the timestamp window can be forgotten: any
  // replay of its frames now carries a timestamp outside the window.
  if (now_utc_ms - last_sweep_utc_ms_ < window_ms_) return;
  last_sweep_utc_ms_ = now_utc_ms;
  windows_.erase_if([&](const Window& w) { return now_utc_ms - w.last_seen_utc_ms > 2 * window_ms_; });
}

}  // namespace caesium::wire
