#include "gossip/membership_wire_size.h"

#include <type_traits>

namespace caesium::gossip {
namespace {

constexpr size_t kPointerBytes = 8;
constexpr size_t kStructBytes = 32;        // pointer + up to three data words
constexpr size_t kListHeaderBytes = 16;    // pointer + tag word
constexpr size_t kListElementBytes = 16;   // a union element: discriminant word + pointer
constexpr size_t kMessageHeaderBytes = 16; // segment table + root pointer
constexpr size_t kWideDataBytes = 24;      // MemberMeta's integers (priority, epoch, version)

size_t round_up8(size_t n) { return (n + 7) / 8 * 8; }

}  // namespace

size_t estimated_text_size(std::string_view s) { return kPointerBytes + round_up8(s.size() + 1); }

size_t estimated_wire_size(const MemberMeta& meta) {
  size_t tags = kListHeaderBytes;
  for (const auto& tag : meta.tags) tags += estimated_text_size(tag);
  // A list of texts is its elements' pointers and bytes (estimated_text_size); its own
  // pointer fits in the struct's over-count above (MemberMeta's data takes 32 of 56).
  size_t unfilled = 0;
  for (const auto& v : meta.unfilled_volumes) unfilled += estimated_text_size(v);
  return kStructBytes + kWideDataBytes + estimated_text_size(meta.stream_addr) +
         estimated_text_size(meta.api_addr) + tags + unfilled + 2 * kStructBytes /* capacity, load */;
}

size_t estimated_wire_size(const Update& update) {
  return kListElementBytes + std::visit(
      [](const auto& u) -> size_t {
        using T = std::decay_t<decltype(u)>;
        if constexpr (std::is_same_v<T, Alive>) {
          return kStructBytes + estimated_text_size(u.node) + estimated_text_size(u.addr) +
                 estimated_wire_size(u.meta);
        } else {  // Suspect, Dead: node, incarnation, from
          return kStructBytes + estimated_text_size(u.node) + estimated_text_size(u.from);
        }
      },
      update);
}

size_t estimated_base_size(const Primary& primary) {
  const size_t primary_bytes = std::visit(
      [](const auto& p) -> size_t {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, Ping>) {
          return kStructBytes + estimated_text_size(p.target);
        } else if constexpr (std::is_same_v<T, PingReq>) {
          return kStructBytes + estimated_text_size(p.target) + estimated_text_size(p.target_addr);
        } else {  // GossipOnly, Ack, Nack: a sequence number at most
          return kStructBytes;
        }
      },
      primary);
  return kMessageHeaderBytes + kStructBytes + kListHeaderBytes + primary_bytes;
}

size_t estimated_wire_size(const Packet& packet) {
  size_t total = estimated_base_size(packet.primary);
  for (const auto& u : packet.updates) total += estimated_wire_size(u);
  return total;
}

}  // namespace caesium::gossip
