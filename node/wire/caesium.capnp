# The one schema for every message Caesium puts on the wire (DESIGN.md §8).
@0xff2f2554b03d19cb;

struct Placeholder {
  version @0 :UInt16;
}
