"""Partitions in network namespaces (issue 6: "the minority side withholds at-most-once
entries and fires at-least-once ones; after healing, the stores converge").

Five nodes, each in its own namespace on a bridge (netns.py); n1 has the highest
priority.  An at-least-once and an at-most-once entry every 2 s.

1  group partition {n1,n2} | {n3,n4,n5}, 12 s.  Each entry written during it through
   the API of one side (n1 and n3).  From 4 s in (failure detection settles; with
   prepare_ahead, both bounds move by it: decisions are taken that much earlier):
   - majority: the at-most-once entry runs exactly once per occurrence, there;
   - minority: the at-least-once entry runs exactly once per occurrence in that
     component, flagged possible_duplicate (degraded path: "each component of a split
     fires once"); its master n1 logs the at-most-once occurrences as withheld.
   Healed: every node's history of both entries (owners and attempts, from the
   replicated occurrence records) and its entry list become identical: the stores
   converged, both sides' API writes included.
2  one-way cut: n1's packets to everyone are dropped, theirs to n1 arrive, 12 s.
   n2..n5 fire the at-most-once entry exactly once; n1, cut off, fires the
   at-least-once entry flagged.  Healed: the stores converge again.
Throughout: at-most-once never twice, at-least-once every occurrence, every second run
flagged, nothing early.
"""

import json

import checks
from harness import (PREPARE_AHEAD_MS, Cluster, TestFailure, alo_amo_entries, next_instant_ms, now_ms, sleep_until_ms,
                     utc, wait_until)
from netns import Network

PERIOD_MS = 2000
IDS = ("n1", "n2", "n3", "n4", "n5")
# Failure detection and mastership settle after a fault; preparing ahead, occurrences
# decided before it (up to prepare_ahead before their instant) keep the owner they had.
SETTLE_MS = 4000 + PREPARE_AHEAD_MS
FAULT_MS = 12000 + PREPARE_AHEAD_MS  # the same window after settling, preparing or not
ENTRIES = ("alo", "amo")


def mid_gap():
    t = next_instant_ms(PERIOD_MS, now_ms(), lead_ms=200) + PERIOD_MS // 2
    sleep_until_ms(t)
    return t


def store_view(node, upto_ms):
    """What node's replica holds: its entry list and the history of our entries'
    occurrences scheduled up to upto_ms, normalised for comparison."""
    entries = node.api_json("GET", "/v1/volumes/main/entries?limit=1000")["entries"]
    view = {"entries": sorted(json.dumps(e, sort_keys=True) for e in entries)}
    for name in ENTRIES:
        h = node.api_json("GET", "/v1/volumes/main/entities/t/schedule/%s/history?limit=1000" % name)
        view[name] = sorted(json.dumps(o, sort_keys=True) for o in h["occurrences"] if o["scheduled_ms"] <= upto_ms)
    return view


def wait_converged(run, c, upto_ms, must_have):
    """Waits until every node's store_view is the same and holds the entries in must_have."""
    last = {}

    def same():
        last.clear()
        for n in IDS:
            last[n] = store_view(c[n], upto_ms)
        names = [json.loads(e)["name"] for e in last[IDS[0]]["entries"]]
        return all(v == last[IDS[0]] for v in last.values()) and all(m in names for m in must_have)
    try:
        wait_until(same, 30, "the stores to converge", poll_s=0.5)
    except TestFailure:
        for n in IDS:
            print("--- %s: %d entries, %s" % (n, len(last[n]["entries"]), ", ".join(
                "%s: %d occurrences" % (k, len(last[n][k])) for k in ENTRIES)))
            for k in ENTRIES:
                diff = set(last[n][k]) ^ set(last[IDS[0]][k])
                for d in sorted(diff)[:4]:
                    print("    %s differs from n1: %s" % (k, d))
        raise
    run.note("stores converged: entries and occurrence history up to %s equal on all nodes" % utc(upto_ms))


def put_entry(node, name):
    body = {"cron": "0 0 0 1 1 *", "handler": "record", "semantics": "at_least_once"}
    node.api_json("PUT", "/v1/volumes/main/entities/t/schedule/%s" % name, body)
    node.cluster.run.note("wrote entry t/%s through the API of %s" % (name, node.id))


def partition(run):
    net = Network(run, IDS)
    c = Cluster(run, ids=IDS, ips=[net.ip(n) for n in IDS], netns=[net.ns(n) for n in IDS], entries=alo_amo_entries())
    begin = c.start_firing(PERIOD_MS)

    # 1: group partition.
    minority, majority = ["n1", "n2"], ["n3", "n4", "n5"]
    p1 = mid_gap()
    net.partition([minority, majority])
    put_entry(c["n1"], "written_on_minority")
    put_entry(c["n3"], "written_on_majority")
    sleep_until_ms(p1 + FAULT_MS)
    h1 = now_ms()
    net.heal()
    window = checks.expected_instants(PERIOD_MS, p1 + SETTLE_MS, h1 - PERIOD_MS)
    recs = c.records()
    checks.each_ran([r for r in recs if r.node in majority], "t/amo", window, exactly_once=True,
                    what="on the majority side of the partition")
    checks.none_ran([r for r in recs if r.node in minority], "t/amo", window, "on the minority side")
    minority_alo = [r for r in recs if r.node in minority and r.entry == "t/alo"]
    checks.each_ran(minority_alo, "t/alo", window, exactly_once=True, what="once in the minority component")
    unflagged = [r for r in minority_alo if r.scheduled_ms in window and not r.duplicate]
    if unflagged:
        raise TestFailure("minority runs not flagged possible_duplicate:\n" + "\n".join(map(repr, unflagged)))
    withheld = [l for l in c["n1"].log_lines_since(p1) if " occ=main/t/amo@" in l and " withheld" in l]
    if not withheld:
        raise TestFailure("the minority master n1 logged no withheld at-most-once occurrence")
    run.note("partition: minority fired %d at-least-once runs flagged, withheld %d at-most-once" % (
        len([r for r in minority_alo if r.scheduled_ms in window]), len(withheld)))
    c.wait_members_alive()
    wait_converged(run, c, h1 - PERIOD_MS, ["written_on_minority", "written_on_majority"])

    # 2: one-way cut.
    p2 = mid_gap()
    net.one_way("n1", [n for n in IDS if n != "n1"])
    sleep_until_ms(p2 + FAULT_MS)
    h2 = now_ms()
    net.heal()
    window2 = checks.expected_instants(PERIOD_MS, p2 + SETTLE_MS, h2 - PERIOD_MS)
    recs = c.records()
    checks.each_ran(recs, "t/amo", window2, exactly_once=True, what="n2..n5 connected during the one-way cut")
    cut_alo = [r for r in recs if r.node == "n1" and r.entry == "t/alo" and r.scheduled_ms in window2]
    if not cut_alo or not all(r.duplicate for r in cut_alo):
        raise TestFailure("n1, cut off, should fire the at-least-once entry flagged; its runs: %s" % cut_alo)
    run.note("one-way cut: n1 fired %d at-least-once runs flagged" % len(cut_alo))
    c.wait_members_alive()
    wait_converged(run, c, h2 - PERIOD_MS, ["written_on_minority", "written_on_majority"])

    settled = now_ms() + PERIOD_MS
    c.wait_records("t/amo", 2, after_ms=settled)
    end = c.window_end(("t/amo", "t/alo"))
    recs = c.records()
    checks.each_ran(recs, "t/alo", checks.expected_instants(PERIOD_MS, begin, end), what="through both faults")
    checks.each_ran(recs, "t/amo", checks.expected_instants(PERIOD_MS, settled, end), exactly_once=True,
                    what="after healing")
    checks.run_invariants(recs)
    c.stop()
