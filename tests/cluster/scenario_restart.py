"""Restart nodes with their data directory intact and wiped (issue 6: "nothing lost, no
duplicate at-most-once run").

Three nodes; the at-least-once and at-most-once entries (every 2 s) are static entries
of n1's file only, so n2 and n3 hold them only through replication.

A  kill -9 the master n1 between two due instants and restart it at once with its data:
   every occurrence keeps running exactly once (at-most-once) / at least once.
B  kill -9 n2, wipe its data directory, restart it: it has no entry in its config, so
   it holds the entries again only if anti-entropy refilled it.
C  kill -9 n1 and n3: n2 is alone.  Proof that n2 holds the entries: it fires the
   at-least-once entry itself, flagged possible_duplicate (degraded path), and logs the
   at-most-once occurrences as withheld (no quorum).
D  restart n1 and n3 with their data: at-most-once runs again, exactly once.
Throughout: at-most-once never twice, at-least-once every occurrence, flagged duplicates.
"""

import checks
from harness import Cluster, TestFailure, alo_amo_entries, next_instant_ms, now_ms, occ_text, sleep_until_ms, wait_until

PERIOD_MS = 2000


def between_due_instants(run):
    """Sleeps to the middle of the next gap between two due instants; returns it."""
    t = next_instant_ms(PERIOD_MS, now_ms(), lead_ms=200) + PERIOD_MS // 2
    sleep_until_ms(t)
    return t


def restart(run):
    c = Cluster(run)
    c["n1"].extra_toml = alo_amo_entries()
    begin = c.start_firing(PERIOD_MS)

    # A: the master, data intact.
    between_due_instants(run)
    c["n1"].kill9()
    a = now_ms()
    c.start("n1")
    c.wait_members_alive()
    c.wait_records("t/amo", 3, after_ms=a)

    # B: a replica without the entries in its config, data wiped.
    between_due_instants(run)
    c["n2"].kill9()
    c["n2"].wipe()
    b = now_ms()
    c.start("n2")
    c.wait_members_alive()
    c.wait_records("t/amo", 3, after_ms=b)

    # C: n2 alone must hold the entries.
    kill_c = between_due_instants(run)
    c["n1"].kill9()
    c["n3"].kill9()

    def n2_degraded_runs():
        return [r for r in c.records("t/alo") if r.scheduled_ms > kill_c and r.node == "n2" and r.duplicate]
    wait_until(lambda: len(n2_degraded_runs()) >= 2, 30,
               "the wiped-and-restarted n2, alone, to fire the at-least-once entry (flagged)")

    def withheld():
        return [l for l in c["n2"].log_lines_since(kill_c) if " occ=main/t/amo@" in l and " withheld" in l]
    wait_until(withheld, 30, "the lone n2 to withhold the at-most-once entry")
    run.note("C: alone, n2 fired %d at-least-once runs flagged and withheld at-most-once (%s)" % (
        len(n2_degraded_runs()), withheld()[0].split(" occ=")[1].split(" ")[0]))
    amo_alone = [r for r in c.records("t/amo") if r.scheduled_ms > kill_c]
    if amo_alone:
        raise TestFailure("at-most-once ran while n2 was alone:\n" + "\n".join(map(repr, amo_alone)))

    # D: the others come back.
    d = now_ms()
    c.start("n1", "n3")
    c.wait_members_alive()
    settled = now_ms() + 2 * PERIOD_MS
    c.wait_records("t/amo", 3, after_ms=settled)
    end = c.window_end(("t/amo", "t/alo"))

    recs = c.records()
    checks.each_ran(recs, "t/alo", checks.expected_instants(PERIOD_MS, begin, end), what="across every restart")
    checks.each_ran(recs, "t/amo", checks.expected_instants(PERIOD_MS, begin, kill_c), exactly_once=True,
                    what="restarts A and B, a majority always up")
    checks.each_ran(recs, "t/amo", checks.expected_instants(PERIOD_MS, settled, end), exactly_once=True,
                    what="after the quorum returned")
    checks.run_invariants(recs)
    late = [r for r in c.records("t/amo") if kill_c < r.scheduled_ms < d]
    run.note("at-most-once occurrences withheld while n2 was alone that ran once the quorum was back: %s" % (
        ", ".join(occ_text(r.entry, r.scheduled_ms) for r in late) or "none"))
    c.stop()
