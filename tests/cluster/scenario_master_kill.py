"""kill -9 the master around a due time (issue 6: "kill -9 the master just before a due
time: at-least-once entries still fire, at-most-once ones fire at most once").

Three nodes, n1 the highest priority (master while up); an at-least-once and an
at-most-once entry every 2 s.

Round 1: kill -9 n1 300 ms before a due instant T1.  n2 and n3 are a majority, so the
  occurrence at T1 and every later one must run: at-least-once >= 1, at-most-once
  exactly once (DESIGN §7 AMO liveness: n1 never claimed T1, nothing is in doubt).
Round 2: restart n1 (data intact; it becomes master again), then kill -9 it 5 ms after
  a due instant T2, while it owns T2 and is likely running it itself.  At-least-once
  T2 must still run (a redispatch); at-most-once T2 may be lost (an accepted attempt
  whose worker died is unknowable) but never runs twice; later occurrences run again.
Throughout: at-most-once never twice, every second run flagged, nothing early.
"""

import checks
from harness import Cluster, TestFailure, alo_amo_entries, next_instant_ms, now_ms, occ_lines, sleep_until_ms, utc

PERIOD_MS = 2000


def last_master_seen_by(node):
    masters = [l.rsplit(" ", 1)[1] for l in node.log_lines() if " master of volume main is " in l]
    return masters[-1] if masters else None


def master_kill(run):
    c = Cluster(run, entries=alo_amo_entries())
    begin = c.start_firing(PERIOD_MS)
    if last_master_seen_by(c["n2"]) != "n1":
        raise TestFailure("n2 does not see n1 as master before the kill (sees %s)" % last_master_seen_by(c["n2"]))

    # Round 1: just before a due instant.
    t1 = next_instant_ms(PERIOD_MS, now_ms(), lead_ms=1000)
    sleep_until_ms(t1 - 300)
    c["n1"].kill9()
    run.note("round 1: killed the master 300 ms before %s" % utc(t1))
    c.wait_records("t/alo", 4, after_ms=t1)
    c.wait_records("t/amo", 4, after_ms=t1)
    round1_end = c.window_end(("t/amo", "t/alo"))
    r1 = checks.expected_instants(PERIOD_MS, t1, round1_end)
    recs = c.records()
    checks.each_ran(recs, "t/alo", r1, what="after the master was killed")
    checks.each_ran(recs, "t/amo", r1, exactly_once=True, what="majority n2+n3 up after the kill")
    failover = min(r.wall_ms for r in checks.runs_of(recs, "t/amo", t1)) - t1
    run.note("round 1: the occurrence due 300 ms after the kill ran %d ms late (shown, not asserted)" % failover)

    # Round 2: restart n1 with its data; it is master again; kill it just after a due instant.
    restarted = now_ms()
    c.start("n1")
    c.wait_members_alive()
    back = now_ms() + PERIOD_MS
    c.wait_records("t/amo", 2, after_ms=back)
    t2 = next_instant_ms(PERIOD_MS, now_ms(), lead_ms=1000)
    sleep_until_ms(t2 + 5)
    c["n1"].kill9()
    run.note("round 2: killed the master 5 ms after %s" % utc(t2))
    c.wait_records("t/alo", 4, after_ms=t2)
    c.wait_records("t/amo", 3, after_ms=t2 + PERIOD_MS)
    end = c.window_end(("t/amo", "t/alo"))
    recs = c.records()
    checks.each_ran(recs, "t/alo", checks.expected_instants(PERIOD_MS, begin, end), what="across both kills")
    after = checks.expected_instants(PERIOD_MS, t2 + PERIOD_MS, end)
    checks.each_ran(recs, "t/amo", after, exactly_once=True, what="after the second kill")
    checks.run_invariants(recs)
    fate = [l for n in ("n2", "n3") for l in occ_lines(c[n], "t/amo", t2)]
    run.note("round 2: at-most-once T2 ran %d time(s); n2/n3 say: %s" % (
        len(checks.runs_of(recs, "t/amo", t2)), "; ".join(l.split(" ", 4)[-1] for l in fate[-3:]) or "nothing"))
    c.stop()
