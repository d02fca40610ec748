"""A paused entry stays quiet through restarts (issue 35: "a paused entry stays quiet
through a restart"; docs/entries.md, Controls: Pause and resume).

Three nodes; static entries every 2 s: t/amo (at-most-once) and t/alo (at-least-once),
both misfire = "fire_once" (the default), and t/live (at-least-once), never paused: its
runs show that the cluster is deciding, so the quiet of the paused ones is not a dead
cluster's.  misfire_threshold is 1 s, so what fell due during the pause is a misfire on
resume, and the policy decides it.

P  Between two due instants, once the previous one has run: POST .../pause?w=2 for t/amo
   and t/alo (a majority of the 3 replicas); each answer says paused, next null, and its
   arrival is the acknowledgement time.
K  kill -9 the master n1; t/live runs twice without it; start n1 again; t/live runs
   twice after it is back.
R  SIGTERM every node (status 0), 2 s later start them all again from the same configs
   (their [[entry]] tables do not set `paused`); t/live runs three times after that.
   Every node's API says both entries are still paused, with no next occurrence.
Q  No run of t/amo or t/alo started at or after its pause's acknowledgement: not one.
U  POST .../resume?w=2, 1.5 s after a due instant: each entry runs its regular
   occurrences again within 20 s, and of the occurrences that fell due while it was
   paused (after the acknowledgement, up to the `resumed` instant, all of them misfires
   by then) exactly one ran, the latest (fire_once: "runs the latest (and any found less
   than the misfire threshold late)").
Throughout: at-most-once never twice, every second run flagged, nothing early.
"""

import calendar
import time

import checks
from harness import (DEFAULT_TUNING, Cluster, TestFailure, alo_amo_entries, entry_toml, next_instant_ms, now_ms,
                     sleep_until_ms, utc, wait_until)

PERIOD_MS = 2000
PAUSED = ("alo", "amo")
RESUME_S = 20


def rfc3339_ms(text):
    """2026-03-01T12:00:04.123Z -> UTC ms."""
    base, _, frac = text.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) * 1000 + int((frac + "000")[:3])


def control(run, node, name, action):
    """POST .../{pause|resume}?w=2 through node; returns (the entry it answers, the time
    the answer arrived)."""
    e = node.api_json("POST", "/v1/volumes/main/entities/t/schedule/%s/%s?w=2" % (name, action), {})
    at = now_ms()
    want = action == "pause"
    if e.get("paused") is not want or (want and e.get("next") is not None):
        raise TestFailure("%s of t/%s answered paused=%s next=%s" % (action, name, e.get("paused"), e.get("next")))
    run.note("%s of t/%s acknowledged by %s (w=2)" % (action, name, node.id))
    return e, at


def still_paused(c):
    for nid in c.ids:
        for name in PAUSED:
            e = c[nid].api_json("GET", "/v1/volumes/main/entities/t/schedule/%s" % name)
            if e.get("paused") is not True or e.get("next") is not None:
                raise TestFailure("after the restarts %s says t/%s is paused=%s next=%s" % (
                    nid, name, e.get("paused"), e.get("next")))


def live_runs_after(run, c, count, what):
    since = now_ms()
    c.wait_records("t/live", count, after_ms=since, timeout_s=30)
    run.note("t/live ran %d times %s" % (count, what))


def paused(run):
    tuning = DEFAULT_TUNING.replace("[scheduler]\n", '[scheduler]\nmisfire_threshold = "1s"\n')
    c = Cluster(run, entries=alo_amo_entries() + entry_toml("live", "*/2 * * * * *", "at_least_once"),
                tuning=tuning)
    c.start_firing(PERIOD_MS)

    # P: pause between two due instants, once the previous one has run.
    last = next_instant_ms(PERIOD_MS, now_ms(), lead_ms=200)
    sleep_until_ms(last + PERIOD_MS // 2)
    for name in PAUSED:
        c.wait_records("t/" + name, 1, after_ms=last, timeout_s=5)
    acked = {name: control(run, c["n2"], name, "pause")[1] for name in PAUSED}

    # K: kill -9 the master, start it again.
    c["n1"].kill9()
    live_runs_after(run, c, 2, "with n1 down")
    c.start("n1")
    c.wait_members_alive()
    live_runs_after(run, c, 2, "after n1 was back")

    # R: every node stopped and started again.
    c.stop()
    sleep_until_ms(now_ms() + PERIOD_MS)
    c.start()
    c.wait_members_alive()
    live_runs_after(run, c, 3, "after the full restart")
    still_paused(c)

    # Q: quiet since each pause was acknowledged, up to 1.5 s after a due instant, when the
    # resume comes (so that even the latest occurrence missed is a misfire by then).
    sleep_until_ms(next_instant_ms(PERIOD_MS, now_ms()) + 1500)
    recs = c.records()
    for name in PAUSED:
        loud = [r for r in recs if r.entry == "t/" + name and r.wall_ms >= acked[name]]
        if loud:
            raise TestFailure("t/%s ran after its pause was acknowledged at %s:\n%s" % (
                name, utc(acked[name]), "\n".join("  %r" % r for r in loud)))
    run.note("no run of %s since the pause (%.1f s, two restarts)" % (
        ", ".join("t/" + n for n in PAUSED), (now_ms() - min(acked.values())) / 1000.0))

    # U: resume; the regular occurrences run again, and fire_once decides the paused ones.
    resumed = {}
    for name in PAUSED:
        e, _ = control(run, c["n3"], name, "resume")
        if not e.get("resumed"):
            raise TestFailure("the resume of t/%s answered no `resumed` instant: %s" % (name, e))
        resumed[name] = rfc3339_ms(e["resumed"])
    for name in PAUSED:
        regular = next_instant_ms(PERIOD_MS, resumed[name], lead_ms=1)
        c.wait_records("t/" + name, 2, after_ms=regular, timeout_s=RESUME_S)
    recs = c.records()
    for name in PAUSED:
        missed = checks.expected_instants(PERIOD_MS, acked[name] + 1, resumed[name])
        ran = sorted({r.scheduled_ms for r in recs if r.entry == "t/" + name and r.scheduled_ms in missed})
        run.note("t/%s: %d occurrences fell due while paused (%s .. %s); ran: %s" % (
            name, len(missed), utc(missed[0]), utc(missed[-1]), ", ".join(map(utc, ran)) or "none"))
        if ran != missed[-1:]:
            raise TestFailure("t/%s: on resume (misfire = fire_once, threshold 1 s) exactly the latest of the "
                              "occurrences due while paused, %s, should run; ran: %s" % (
                                  name, utc(missed[-1]), ", ".join(map(utc, ran)) or "none"))
    checks.run_invariants(recs)
    c.stop()
