// The one rule of backward-shift deletion (Knuth's algorithm R) in a linear-probing
// table without tombstones, shared by FlatHashMap, SlotIndex and gossip's IdIndex.
#pragma once

#include <cstddef>

namespace caesium {

// After emptying slot `hole`, the entry at slot `j` (later in the same run) whose home
// slot is `home` may stay where it is iff `home` lies cyclically in (hole, j]; otherwise
// it moves into the hole.
inline bool backshift_stays(size_t hole, size_t j, size_t home) {
  return hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
}

}  // namespace caesium
