"""Full cluster stop and start (issue 6: "schedules survive, catch-up follows the
misfire policy").

Five entries every 5 s, in the config only for the first start: the restart runs from
configs without any [[entry]], so whatever fires afterwards was read back from LMDB.
misfire_threshold is 1 s, so an occurrence found more than 1 s late is a misfire and
its entry's policy decides:

  skip      at-most-once, misfire = skip               -> no missed occurrence runs
  once      at-most-once, misfire = fire_once          -> exactly one run: the latest missed
  all       at-most-once, misfire = fire_all (1 m)     -> every missed occurrence, once each
  all_alo   at-least-once, misfire = fire_all (1 m)    -> every missed occurrence, >= 1
  window    at-most-once, fire_all, misfire_window 9 s -> nothing older than 9 s at restart;
                                                          the latest missed one runs

The cluster is stopped (SIGTERM, all at once) 1 s after a due instant and started
again 1.5 s after the third due instant it missed, so at least three occurrences of
each entry are missed and the latest is already 1.5 s late (beyond the threshold)
when the nodes come back.
"""

import checks
from harness import DEFAULT_TUNING, Cluster, TestFailure, entry_toml, next_instant_ms, now_ms, sleep_until_ms, utc

PERIOD_MS = 5000
CRON = "*/5 * * * * *"
ENTRIES = {
    "skip": dict(semantics="at_most_once", misfire="skip", misfire_window="1m"),
    "once": dict(semantics="at_most_once", misfire="fire_once", misfire_window="1m"),
    "all": dict(semantics="at_most_once", misfire="fire_all", misfire_window="1m"),
    "all_alo": dict(semantics="at_least_once", misfire="fire_all", misfire_window="1m"),
    "window": dict(semantics="at_most_once", misfire="fire_all", misfire_window="9s"),
}
WINDOW_MS = 9000


def full_restart(run):
    tuning = DEFAULT_TUNING.replace("[scheduler]\n", '[scheduler]\nmisfire_threshold = "1s"\n')
    entries = "".join(entry_toml(name, CRON, **f) for name, f in sorted(ENTRIES.items()))
    c = Cluster(run, entries=entries, tuning=tuning)
    c.start()
    c.wait_members_alive()
    begin = now_ms() + 1000
    for name in ENTRIES:
        c.wait_records("t/" + name, 1, after_ms=begin)

    stop_at = next_instant_ms(PERIOD_MS, now_ms(), lead_ms=200) + 1000
    sleep_until_ms(stop_at)
    c.stop()
    stopped = now_ms()
    last_before = max(r.scheduled_ms for r in c.records())
    # Restart from configs without entries: the schedules must come from the data dirs.
    c.entries = ""
    c.write_common()
    latest_missed = next_instant_ms(PERIOD_MS, stopped, lead_ms=2 * PERIOD_MS + 1)
    sleep_until_ms(latest_missed + 1500)
    restarted = now_ms()
    c.start()
    c.wait_members_alive()
    resumed = latest_missed + PERIOD_MS
    for name in ENTRIES:
        c.wait_records("t/" + name, 2, after_ms=resumed)
    end = c.window_end(["t/" + name for name in ENTRIES])

    missed = checks.expected_instants(PERIOD_MS, stopped, restarted)
    run.note("stopped after %s, restarted at %s: missed %s" % (
        utc(last_before), utc(restarted), ", ".join(utc(t) for t in missed)))
    if len(missed) < 3 or missed[-1] != latest_missed:
        raise TestFailure("the harness missed its own timing: missed instants %s" % [utc(t) for t in missed])
    recs = c.records()
    checks.none_ran(recs, "t/skip", missed, "missed occurrences under misfire = skip")
    once = [r for r in recs if r.entry == "t/once" and r.scheduled_ms in missed]
    if len(once) != 1 or once[0].scheduled_ms != latest_missed:
        raise TestFailure("fire_once: expected one run, for the latest missed occurrence %s; got:\n%s" % (
            utc(latest_missed), "\n".join("  " + repr(r) for r in once) or "  nothing"))
    checks.each_ran(recs, "t/all", missed, exactly_once=True, what="missed, misfire = fire_all")
    checks.each_ran(recs, "t/all_alo", missed, what="missed, misfire = fire_all")
    too_old = [t for t in missed if t < restarted - WINDOW_MS]
    checks.none_ran(recs, "t/window", too_old, "missed occurrences older than its 9 s misfire window at restart")
    checks.each_ran(recs, "t/window", [latest_missed], exactly_once=True, what="the latest missed, within 9 s")
    regular = checks.expected_instants(PERIOD_MS, resumed, end)
    for name, f in ENTRIES.items():
        checks.each_ran(recs, "t/" + name, regular, exactly_once=f["semantics"] == "at_most_once",
                        what="regular occurrences after the restart")
        if f["semantics"] == "at_most_once":
            checks.amo_at_most_once(recs, "t/" + name)
    checks.duplicates_are_flagged(recs)
    checks.never_early(recs)
    for n in c.ids:
        started = [l for l in c[n].log_lines(current_start=True) if " started: " in l]
        if not started or " 0 static entries" not in started[0]:
            raise TestFailure("%s did not restart without static entries: %s" % (n, started))
    window_runs = sorted(utc(r.scheduled_ms) for r in recs if r.entry == "t/window" and r.scheduled_ms in missed)
    run.note("window entry caught up: %s (the one before the latest runs only if the restart decided "
             "within 2.5 s; not asserted)" % ", ".join(window_runs))
    c.stop()
