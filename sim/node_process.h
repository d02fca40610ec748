// The "node" process kind: the real Node core (node/core) behind the simulator's
// Process interface, with the real codec and frame authentication, a simulated disk,
// and the firing checker.  This is what `caesium sim` runs by default.
//
// [node_options] keys (durations as "500ms"/"2s" or integer ms):
//   probe_interval, probe_timeout, gossip_interval, push_pull_interval, suspicion_mult,
//   indirect_checks, retransmit_mult, lifeguard (bool), sync_interval, startup_grace,
//   lazy_push_hold, burst_hold, claim_retry, claim_give_up, misfire_threshold, max_clock_skew,
//   occurrence_retention, prepare_ahead, cores, max_running (also the hard running cap, as
//   [capacity] max_running), test_grant_every_claim (bool: TEST ONLY,
//   breaks at-most-once so the checker can prove it bites), test_grant_ignores_overlap (bool:
//   TEST ONLY, votes ignore overlap = forbid so the checker's overlap rule can prove it bites),
//   test_ignore_running_cap (bool: TEST ONLY, workers accept beyond their cap: cap.exceeded bites)
#pragma once

#include "sim/registry.h"

namespace caesium::sim {

ProcessKind node_process_kind();
// Registers "node" (idempotent).  Called by register_builtin_process_kinds().
void register_node_process_kind();

}  // namespace caesium::sim
