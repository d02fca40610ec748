// Conservative estimates of the encoded size of membership datagrams.
//
// Membership must keep every UDP payload under the configured limit, but the bytes are
// produced later by node/wire's Cap'n Proto codec.  So membership packs packets against
// these estimates, and the codec's tests check that the real encoding of any Packet is
// never larger than estimated_wire_size(packet).  The estimates deliberately over-count
// (an unpacked Cap'n Proto layout with generous struct headers):
//   - a string: an 8-byte pointer plus its bytes and NUL, rounded up to 8;
//   - a struct: 32 bytes for its pointer and data section, plus its pointed-to fields;
//   - a list: an 8-byte pointer and an 8-byte tag word, plus 16 bytes per struct element;
//   - the message: 16 bytes of segment table and root pointer.
// Sizes are additive: estimated_wire_size(packet) ==
//   estimated_base_size(packet.primary) + sum of estimated_wire_size(update).
#pragma once

#include <cstddef>
#include <string_view>

#include "gossip/messages.h"

namespace caesium::gossip {

// Bytes a string field costs, pointer included.
size_t estimated_text_size(std::string_view s);

size_t estimated_wire_size(const MemberMeta& meta);

// One element of a Packet's update list, list-element overhead included.
size_t estimated_wire_size(const Update& update);

// A packet with `primary` and no updates: message header, Packet struct, the (empty)
// update list and the primary message.
size_t estimated_base_size(const Primary& primary);

size_t estimated_wire_size(const Packet& packet);

}  // namespace caesium::gossip
