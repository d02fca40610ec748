"""overlap = "forbid" under real faults (issue 35: "forbid holds while the worker is
kill -9ed mid-run and while the network splits").

Three nodes; at-most-once entries with overlap = "forbid" every 2 s whose exec handler
sleeps 6 s, so every run overlaps the next two due instants.  The handler appends its
start (fire id, node, entry, scheduled ms, pid, wall ms) and its end to a file per node:
those are the real execution intervals.  Handlers run in their own session (setsid), so
a handler outlives its node's kill -9 and records its own end (one that died with its
node would end at the kill).  The entries are written through the API once the nodes are
past their amnesia horizon (fresh replicas abstain on forbid claims of an entry due by
then); occurrence_retention is 1 m, its minimum.

A  t/fa.  kill -9 the node running it 2 s into a run, restart it 10 s later.  The killed
   run is `lost` and the replicas that accepted it cannot learn that it ended, so the
   entry stays blocked until the occurrence retention forgets the run (docs/entries.md,
   Overlap): the history shows the run's occurrence `lost` and every later one
   `skipped_overlap` naming the killed run, no run starts meanwhile, and t/fa runs again
   once the retention has passed (bound: the occurrence + 1 m + 25 s).
B  t/fb, written after A's kill, so A's fault never touched it (needs network
   namespaces; without root only A runs, on loopback, and the output says so).  Cut the
   node running it off from the others 2 s into a run, heal 12 s later.  The isolated
   worker finishes the run and keeps its record; once healed the record spreads and t/fb
   runs again within 30 s.
Throughout: no two runs of one entry overlap (each starts after the previous run's
recorded end), at-most-once never twice per occurrence, nothing early; the API history
of each entry shows `skipped_overlap` occurrences.
"""

import os
import signal

import checks
from harness import DEFAULT_TUNING, Cluster, TestFailure, TestSkip, now_ms, sleep_until_ms, utc, wait_until
from netns import Network

PERIOD_MS = 2000
CRON = "*/2 * * * * *"
RUN_S = 6
MID_RUN_MS = 2000     # a fault hits this long after the handler started
FAULT_MS = 12000
LIVE_S = 30           # bound for the entry to run again after a fault
RETENTION_MS = 60000  # occurrence_retention: the minimum the config takes
TUNING = DEFAULT_TUNING.replace("[scheduler]\n", '[scheduler]\noccurrence_retention = "1m"\n').replace(
    "[gossip]\n", '[gossip]\nmaintenance_interval = "1s"\n')
IDS = ("n1", "n2", "n3")

SLOW_SCRIPT = """#!/bin/sh
# The forbid scenario's handler: a harness fire record ("$1"), then its start and end
# ("$2": start|end, fire id, node, entry, scheduled ms, pid, wall ms) around a sleep of "$3" s.
cat >/dev/null
start=$(date +%s%3N)
printf '%s %s %s %s %s %s %s\\n' "$CAESIUM_FIRE_ID" "$CAESIUM_NODE" "$CAESIUM_ENTITY/$CAESIUM_ENTRY" \\
  "$CAESIUM_SCHEDULED_MS" "$CAESIUM_ATTEMPT" "$CAESIUM_POSSIBLE_DUPLICATE" "$start" >> "$1"
span="$CAESIUM_FIRE_ID $CAESIUM_NODE $CAESIUM_ENTITY/$CAESIUM_ENTRY $CAESIUM_SCHEDULED_MS $$"
printf 'start %s %s\\n' "$span" "$start" >> "$2"
sleep "$3"
printf 'end %s %s\\n' "$span" "$(date +%s%3N)" >> "$2"
"""

SLOW_HANDLER = """
[[handler]]
name = "slow"
kind = "exec"
argv = ["%s", "%s", "%s", "%d"]
timeout = "20s"
"""


class Span:
    """One real execution of the handler: [start, end] by its own clock readings."""

    def __init__(self, line):
        self.fire_id, self.node, self.entry, scheduled, pid, start = line.split()[1:]
        self.scheduled, self.pid, self.start, self.end = int(scheduled), int(pid), int(start), None
        self.line = line.split(" ", 1)[1].rsplit(" ", 1)[0]  # what its end line repeats

    def __repr__(self):
        end = utc(self.end) if self.end is not None else "(still running)"
        return "%s@%s run %s on %s from %s to %s" % (self.entry, utc(self.scheduled), self.fire_id, self.node,
                                                     utc(self.start), end)


def spans_path(c, nid):
    return os.path.join(c.dir, nid, "spans")


def spans(c, entry):
    """The handler runs of entry on every node, by start."""
    out = {}
    for nid in c.ids:
        try:
            with open(spans_path(c, nid)) as f:
                text = f.read()
        except FileNotFoundError:
            continue
        for line in text[:text.rfind("\n") + 1].splitlines():
            f = line.split()
            if f[3] != entry:
                continue
            if f[0] == "start":
                out[f[1]] = Span(line)
            elif f[1] in out:
                out[f[1]].end = int(f[-1])
    return sorted(out.values(), key=lambda s: s.start)


def never_overlapped(c, entry):
    """No run of entry started before the previous one's recorded end (a run still going
    counts as running for ever)."""
    runs = spans(c, entry)
    for a, b in zip(runs, runs[1:]):
        if a.end is None or b.start < a.end:
            raise TestFailure("two runs of %s at once (overlap = forbid violated):\n  %r\n  %r" % (entry, a, b))
    return runs


def handler_alive(pid, script):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return script.encode() in f.read()
    except OSError:
        return False


def kill_handlers(script):
    """Handlers live in their own sessions and outlive their nodes: kill every one of this
    run's (their command line names the run's script) with its process group."""
    for pid in os.listdir("/proc"):
        if pid.isdigit() and handler_alive(int(pid), script):
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except OSError:
                pass


def end_of_killed_run(run, c, span, killed_ms, script):
    """Waits for the run of a node killed with kill -9 to end: a handler that outlived its
    node records its own end; one that died with it ended at the kill (written for it)."""
    def ended():
        return spans_ended(c, span) or not handler_alive(span.pid, script)
    wait_until(ended, RUN_S + 5, "the handler of the killed node's run %s to end" % span.fire_id)
    if not spans_ended(c, span):
        with open(spans_path(c, span.node), "a") as f:
            f.write("end %s %d\n" % (span.line, killed_ms))
        run.note("A: the handler died with its node: its run ended at the kill")
    end = [s for s in spans(c, span.entry) if s.fire_id == span.fire_id][0].end
    run.note("A: the killed node's run ended at %s (the node was killed at %s)" % (utc(end), utc(killed_ms)))


def run_in_progress(run, c, entry, after_ms):
    """Waits for a run of entry that started after after_ms to be MID_RUN_MS old."""
    def going():
        live = [s for s in spans(c, entry) if s.end is None and s.start >= after_ms]
        return live[-1] if live else None
    s = wait_until(going, 30, "a run of %s to start after %s" % (entry, utc(after_ms)))
    sleep_until_ms(s.start + MID_RUN_MS)
    if spans_ended(c, s):
        raise TestFailure("the run %r ended within %d ms (the handler sleeps %d s)" % (s, MID_RUN_MS, RUN_S))
    run.note("%s runs on %s since %s (fire %s)" % (entry, s.node, utc(s.start), s.fire_id))
    return s


def spans_ended(c, span):
    return any(s.fire_id == span.fire_id and s.end is not None for s in spans(c, span.entry))


def history(node, name):
    """The occurrences of t/name in node's history, oldest first."""
    h = node.api_json("GET", "/v1/volumes/main/entities/t/schedule/%s/history?limit=1000" % name)
    return sorted(h["occurrences"], key=lambda o: o["scheduled_ms"])


def blocked_by(run, node, killed, upto_ms):
    """The history on node: the killed run's occurrence `lost`, every later one due by
    upto_ms that it has decided `skipped_overlap` for the killed run (none run)."""
    occs = [o for o in history(node, "fa") if killed.scheduled <= o["scheduled_ms"] <= upto_ms]
    if not occs or occs[0]["scheduled_ms"] != killed.scheduled or occs[0]["outcome"] != "lost":
        raise TestFailure("history of t/fa on %s: the killed run's occurrence %s should be lost:\n%s" % (
            node.id, utc(killed.scheduled), "\n".join(map(str, occs[:2]))))
    later = occs[1:]
    wrong = [o for o in later if o["outcome"] != "skipped_overlap" or not any(
        killed.fire_id in (w.get("reason") or "") for w in o["owners"])]
    if not later or wrong:
        raise TestFailure("history of t/fa on %s: every occurrence after the lost run should be skipped_overlap "
                          "naming %s (documented: a lost run blocks the entry); %d later, not so:\n%s" % (
                              node.id, killed.fire_id, len(later), "\n".join(map(str, wrong[:3]))))
    run.note("A: history on %s: %s lost, the %d later occurrences skipped_overlap for it" % (
        node.id, utc(killed.scheduled), len(later)))


def put_forbid_entry(node, name):
    body = {"cron": CRON, "handler": "slow", "semantics": "at_most_once", "overlap": "forbid",
            "misfire_window": "30s"}  # below the occurrence retention
    node.api_json("PUT", "/v1/volumes/main/entities/t/schedule/%s?w=2" % name, body)
    node.cluster.run.note("wrote t/%s through the API of %s" % (name, node.id))


def forbid(run):
    try:
        net = Network(run, IDS)
    except TestSkip as e:
        net = None
        run.note("no network namespaces (%s): phase A only, on loopback; phase B (network split) not run" % e)
    handlers_of = []
    run.on_cleanup(lambda: [kill_handlers(s) for s in handlers_of])  # after the nodes are killed
    if net:
        c = Cluster(run, ids=IDS, ips=[net.ip(n) for n in IDS], netns=[net.ns(n) for n in IDS], tuning=TUNING)
    else:
        c = Cluster(run, ids=IDS, tuning=TUNING)
    script = os.path.join(c.dir, "slow.sh")
    with open(script, "w") as f:
        f.write(SLOW_SCRIPT)
    os.chmod(script, 0o755)
    handlers_of.append(script)
    for n in c.nodes.values():
        n.extra_toml = SLOW_HANDLER % (script, n.records_path, spans_path(c, n.id), RUN_S)
    c.start()
    started = now_ms()
    c.wait_members_alive()
    sleep_until_ms(started + 1500)  # past the horizon: first start + 2 x max_clock_skew
    put_forbid_entry(c["n1"], "fa")

    # A: kill -9 the worker mid-run, restart it.
    a = run_in_progress(run, c, "t/fa", now_ms())
    c[a.node].kill9()
    killed = now_ms()
    end_of_killed_run(run, c, a, killed, script)
    sleep_until_ms(killed + 10000)
    c.start(a.node)
    c.wait_members_alive()
    blocked_by(run, c[[n for n in IDS if n != a.node][0]], a, now_ms() - 3000)

    if net:
        # B: cut the worker off mid-run, heal.
        put_forbid_entry(c["n1"], "fb")
        b = run_in_progress(run, c, "t/fb", now_ms())
        net.partition([[b.node], [n for n in IDS if n != b.node]])
        sleep_until_ms(now_ms() + FAULT_MS)
        net.heal()
        healed = now_ms()
        wait_until(lambda: [s for s in spans(c, "t/fb") if s.start > healed], LIVE_S,
                   "t/fb to run again after the network healed")
        runs_b = never_overlapped(c, "t/fb")
        run.note("B: %d runs of t/fb, none overlapping; the first after the heal started at %s" % (
            len(runs_b), utc(min(s.start for s in runs_b if s.start > healed))))

    # A, continued: the retention forgets the lost run, and t/fa runs again.
    bound_s = (a.scheduled + RETENTION_MS + 25000 - now_ms()) / 1000.0
    again = wait_until(lambda: [s for s in spans(c, "t/fa") if s.start > a.start], bound_s,
                       "t/fa to run again once the occurrence retention forgot the lost run of %s" % utc(
                           a.scheduled))[0]
    if again.start < a.scheduled + RETENTION_MS:
        raise TestFailure("t/fa ran while the lost run %s still blocked it (documented: until the occurrence "
                          "retention forgets it): %r" % (a.fire_id, again))
    run.note("A: t/fa ran again at %s, %.1f s after the lost occurrence was due" % (
        utc(again.start), (again.start - a.scheduled) / 1000.0))

    recs = c.records()
    checks.amo_at_most_once(recs, "t/fa")
    checks.amo_at_most_once(recs, "t/fb")
    checks.never_early(recs)
    for name in ("fa", "fb") if net else ("fa",):
        never_overlapped(c, "t/" + name)
        skipped = [o for o in history(c["n1"], name) if o["outcome"] == "skipped_overlap"]
        if not skipped:
            raise TestFailure("the history of t/%s on n1 shows no skipped_overlap occurrence" % name)
        run.note("history of t/%s: %d occurrences skipped_overlap" % (name, len(skipped)))
    c.stop()
