// merge_glibc_tunables: what `caesium node` and `caesium sim` add to GLIBC_TUNABLES
// before running themselves again (node/daemon/runtime/glibc_tunables.h).  The re-run itself,
// and that handlers see the environment the node was started with, are checked on
// real processes by the cluster suite (tests/cluster/scenario_smoke.py, `tunables`).
#include <catch2/catch.hpp>

#include "node/daemon/runtime/glibc_tunables.h"

using caesium::daemon::merge_glibc_tunables;

TEST_CASE("tunables: unset GLIBC_TUNABLES gets the wanted settings", "[tunables]") {
  CHECK(merge_glibc_tunables(nullptr, "glibc.malloc.tcache_count=16000") == "glibc.malloc.tcache_count=16000");
  CHECK(merge_glibc_tunables("", "a.b=1:c.d=2") == "a.b=1:c.d=2");
}

TEST_CASE("tunables: the operator's settings are kept and come first", "[tunables]") {
  CHECK(merge_glibc_tunables("glibc.malloc.mxfast=0", "glibc.malloc.tcache_count=16000") ==
        "glibc.malloc.mxfast=0:glibc.malloc.tcache_count=16000");
}

TEST_CASE("tunables: a tunable the operator names is never overridden", "[tunables]") {
  // Named with another value, or as the last or first of several: nothing to add.
  CHECK_FALSE(merge_glibc_tunables("glibc.malloc.tcache_count=7", "glibc.malloc.tcache_count=16000"));
  CHECK_FALSE(merge_glibc_tunables("x.y=1:glibc.malloc.tcache_count=7", "glibc.malloc.tcache_count=16000"));
  CHECK_FALSE(merge_glibc_tunables("glibc.malloc.tcache_count=7:x.y=1", "glibc.malloc.tcache_count=16000"));
  // Only the wanted settings it does not name are added.
  CHECK(merge_glibc_tunables("a.b=5", "a.b=1:c.d=2") == "a.b=5:c.d=2");
}

TEST_CASE("tunables: names match whole, not as prefixes", "[tunables]") {
  CHECK(merge_glibc_tunables("glibc.malloc.tcache_count_x=1", "glibc.malloc.tcache_count=16000") ==
        "glibc.malloc.tcache_count_x=1:glibc.malloc.tcache_count=16000");
  CHECK(merge_glibc_tunables("glibc.malloc.tcache=1", "glibc.malloc.tcache_count=16000") ==
        "glibc.malloc.tcache=1:glibc.malloc.tcache_count=16000");
}

TEST_CASE("tunables: nothing wanted, nothing added", "[tunables]") {
  CHECK_FALSE(merge_glibc_tunables(nullptr, ""));
  CHECK_FALSE(merge_glibc_tunables("a.b=1", ""));
}
