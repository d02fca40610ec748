"""Real-process cluster harness: runs `caesium node` processes and watches what they do.

A test builds a Cluster in a Run (run.py makes the Run), starts nodes, injects faults
(kill -9, SIGTERM, wiped data directories, network cuts via netns.py) and reads two
kinds of evidence:
  - fire records: every node's `record` handler is an exec script that appends one
    line per run (fire id, node, entry, scheduled ms, attempt, possible_duplicate, wall
    ms) to that node's records file;
  - log lines: each node's stderr, one event per line (node/daemon/runtime/log.h).

Cleanup: every process is started in its own session with PR_SET_PDEATHSIG(SIGKILL),
so it dies with the harness even when the harness itself is killed; Run.cleanup() kills
what is left by process group.  Standard library only (runs on a fresh CI machine).
"""

import calendar
import ctypes
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

PR_SET_PDEATHSIG = 1


class TestFailure(Exception):
    """An assertion about the cluster's behaviour failed."""


class TestSkip(Exception):
    """The environment cannot run this test (the reason is printed)."""


def now_ms():
    return int(time.time() * 1000)


def utc(ms):
    """An instant as RFC 3339 UTC with milliseconds, for messages."""
    return time.strftime("%H:%M:%S", time.gmtime(ms / 1000)) + ".%03dZ" % (ms % 1000)


def occ_text(entry, scheduled_ms, volume="main"):
    """How the daemon's log names an occurrence: main/t/amo@2026-03-01T12:00:04Z."""
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(scheduled_ms // 1000))
    if scheduled_ms % 1000:
        text += ".%03d" % (scheduled_ms % 1000)
    return "%s/%s@%sZ" % (volume, entry, text)


def occ_lines(node, entry, scheduled_ms):
    """The log lines of node about one occurrence."""
    needle = " occ=%s " % occ_text(entry, scheduled_ms)
    return [l for l in node.log_lines() if needle in l]


def _die_with_parent():
    # Runs in the child between fork and exec: the node is killed when the harness dies,
    # whatever kills the harness (a ctest timeout sends SIGKILL, which runs no finally).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Run:
    """One test run: a temporary directory, a deadline, a timeline and the cleanups."""

    def __init__(self, name, binary, keep=False):
        self.name = name
        self.binary = os.path.abspath(binary)
        self.keep = keep
        self.dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "caesium-cluster-%s-%d" % (name, os.getpid()))
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.timeline = []  # (utc ms, text)
        self.cleanups = []  # callables, run last-in first-out
        self.clusters = []

    def note(self, text):
        self.timeline.append((now_ms(), text))
        print("[%s] %s" % (utc(now_ms()), text), flush=True)

    def on_cleanup(self, fn):
        self.cleanups.append(fn)

    def cleanup(self):
        while self.cleanups:
            fn = self.cleanups.pop()
            try:
                fn()
            except Exception as e:  # cleanup must go on
                print("cleanup: %s" % e, file=sys.stderr)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def report(self):
        """What the run saw, printed on failure."""
        print("\n===== timeline =====")
        for t, text in self.timeline:
            print("%s  %s" % (utc(t), text))
        for c in self.clusters:
            c.report()


def wait_until(pred, timeout_s, what, poll_s=0.1):
    """Polls pred() until it returns a true value (returned) or timeout_s passes
    (TestFailure naming `what`)."""
    end = time.monotonic() + timeout_s
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= end:
            raise TestFailure("timed out after %.0f s waiting for %s" % (timeout_s, what))
        time.sleep(poll_s)


def sleep_until_ms(t_ms):
    d = (t_ms - now_ms()) / 1000.0
    if d > 0:
        time.sleep(d)


def next_instant_ms(period_ms, after_ms, lead_ms=0):
    """The first multiple of period_ms that is at least lead_ms after after_ms."""
    t = after_ms + lead_ms
    return (t + period_ms - 1) // period_ms * period_ms


def _ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
        return lo if lo > 12000 else 32768
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count, host="127.0.0.1"):
    """Ports free for both TCP and UDP on host (held open until all are chosen), drawn
    at random below the kernel's ephemeral range: the kernel hands out ports from that
    range for every outgoing connection of every process, so a port it picked for a
    bind to port 0 and that is then released may be taken as a connection's source port
    before the node binds it (tests/unit/daemon_test_support.h has the same rule)."""
    rng = random.Random(os.getpid() ^ int(time.time() * 1e6))
    top = _ephemeral_start() - 1
    held, ports = [], []
    try:
        tries = 0
        while len(ports) < count:
            tries += 1
            if tries > 1000:
                raise RuntimeError("no free loopback ports below the ephemeral range")
            port = rng.randint(10000, top)
            if port in ports:
                continue
            t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                t.bind((host, port))
                u.bind((host, port))
            except OSError:
                t.close()
                u.close()
                continue
            held += [t, u]
            ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


class Record:
    """One handler run, as the record script wrote it."""

    __slots__ = ("fire_id", "node", "entry", "scheduled_ms", "attempt", "duplicate", "wall_ms", "file_node")

    def __init__(self, line, file_node):
        f = line.split()
        if len(f) != 7:
            raise ValueError("bad record line: %r" % line)
        self.fire_id, self.node, self.entry = f[0], f[1], f[2]
        self.scheduled_ms, self.attempt = int(f[3]), int(f[4])
        self.duplicate = f[5] == "true"
        self.wall_ms = int(f[6])
        self.file_node = file_node

    def __repr__(self):
        return "%s@%s on %s attempt %d%s fire %s ran %s" % (
            self.entry, utc(self.scheduled_ms), self.node, self.attempt,
            " possible_duplicate" if self.duplicate else "", self.fire_id, utc(self.wall_ms))


RECORD_SCRIPT = """#!/bin/sh
# Fire record handler of the cluster tests: appends one line per run to "$1".
# One printf is one write(2) of a short line to an O_APPEND file, so concurrent runs
# never interleave.
cat >/dev/null
printf '%s %s %s %s %s %s %s\\n' "$CAESIUM_FIRE_ID" "$CAESIUM_NODE" "$CAESIUM_ENTITY/$CAESIUM_ENTRY" \\
  "$CAESIUM_SCHEDULED_MS" "$CAESIUM_ATTEMPT" "$CAESIUM_POSSIBLE_DUPLICATE" "$(date +%s%3N)" >> "$1"
"""

# Protocol timings for tests: failure detection in about a second, sync every second.
# Generous enough for a loaded two-core CI machine (false suspicions only cost flagged
# duplicates of at-least-once runs, which the checks allow).
DEFAULT_TUNING = """
[gossip]
probe_interval = "400ms"
probe_timeout = "200ms"
suspicion_mult = 3
gossip_interval = "100ms"
push_pull_interval = "5s"
join_retry_interval = "500ms"
gossip_to_dead = "10s"
sync_interval = "1s"
sync_session_timeout = "3s"
startup_grace = "1s"
heard_recently = "1500ms"

[scheduler]
claim_retry = "200ms"
claim_give_up = "2s"
revoke_retry = "300ms"
max_clock_skew = "250ms"
"""

# Every scenario runs with this [scheduler] prepare_ahead, written into each node's config:
# the shipped default, 5 s (schedule/scheduler.h), unless CAESIUM_TEST_PREPARE_AHEAD_MS says
# otherwise (0: deciding at each instant; docs/firing.md, Preparing ahead).  Decisions are
# taken that much before each instant, so a scenario's window "after the fault settled"
# starts that much later too.
PREPARE_AHEAD_MS = int(os.environ.get("CAESIUM_TEST_PREPARE_AHEAD_MS", "5000"))
DEFAULT_TUNING += 'prepare_ahead = "%dms"\n' % PREPARE_AHEAD_MS


def entry_toml(name, cron, semantics, entity="t", volume="main", handler="record", **fields):
    """A [[entry]] table.  Extra fields are written as TOML strings or booleans."""
    lines = ["[[entry]]", 'volume = "%s"' % volume, 'entity = "%s"' % entity, 'name = "%s"' % name,
             'cron = "%s"' % cron, 'semantics = "%s"' % semantics, 'handler = "%s"' % handler]
    for k, v in sorted(fields.items()):
        lines.append("%s = %s" % (k, ("true" if v else "false") if isinstance(v, bool) else '"%s"' % v))
    return "\n".join(lines) + "\n"



def alo_amo_entries(cron="*/2 * * * * *"):
    """The suite's usual pair: t/alo (at-least-once) and t/amo (at-most-once) on `cron`."""
    return entry_toml("alo", cron, "at_least_once") + entry_toml("amo", cron, "at_most_once")


def line_time_ms(line):
    """The UTC ms a log line is stamped with (-1 for a line without a stamp)."""
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z ", line)
    if not m:
        return -1
    y, mo, d, h, mi, sec, ms = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, sec)) * 1000 + ms


class Node:
    """One node: its files, its address and its process (at most one at a time)."""

    def __init__(self, cluster, node_id, ip, ports, netns=None):
        self.cluster = cluster
        self.id = node_id
        self.ip = ip
        self.gossip_port, self.stream_port, self.api_port = ports
        self.netns = netns
        base = os.path.join(cluster.dir, node_id)
        os.makedirs(base, exist_ok=True)
        self.config_path = os.path.join(base, "node.toml")
        self.data_dir = os.path.join(base, "data")
        self.log_path = os.path.join(base, "node.log")
        self.records_path = os.path.join(base, "records")
        self.proc = None
        self.extra_toml = ""   # appended to the node file (e.g. entries only this node has)
        self.extra_seeds = []  # stream addresses of nodes outside this cluster object
        self.starts = 0

    @property
    def gossip_addr(self):
        return "%s:%d" % (self.ip, self.gossip_port)

    @property
    def stream_addr(self):
        return "%s:%d" % (self.ip, self.stream_port)

    def write_config(self):
        c = self.cluster
        addrs = [n.stream_addr for n in c.nodes.values() if n is not self] + self.extra_seeds
        seeds = ", ".join('"%s"' % a for a in addrs)
        text = "\n".join([
            'node_id = "%s"' % self.id,
            'cluster_name = "%s"' % c.cluster_name,
            'data_dir = "%s"' % self.data_dir,
            'key_file = "%s"' % c.key_path,
            'include = "%s"' % c.common_path,
            'gossip_listen = "%s"' % self.gossip_addr,
            'stream_listen = "%s"' % self.stream_addr,
            "seeds = [%s]" % seeds,
            'log_level = "%s"' % c.log_level,
            'shutdown_grace = "2s"',
            "",
            "[api]",
            'listen = "%s:%d"' % (self.ip, self.api_port),
            'token_file = "%s"' % c.token_path,
            c.tuning,
            "[[handler]]",
            'name = "record"',
            'kind = "exec"',
            'argv = ["%s", "%s"]' % (c.record_script, self.records_path),
            'timeout = "10s"',
            "",
            self.extra_toml,
        ])
        with open(self.config_path, "w") as f:
            f.write(text)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        assert not self.running(), "%s is already running" % self.id
        self.write_config()
        argv = [self.cluster.run.binary, "node", "--config", self.config_path]
        if self.starts == 0:
            # Its first start, on a new data directory: it never ran (docs/firing.md,
            # Amnesia).  A restart after wipe() is a wiped node and abstains.
            argv.append("--first-start")
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns] + argv
        log = open(self.log_path, "a")
        self.starts += 1
        log.write("##### harness: start %d of %s at %s\n" % (self.starts, self.id, utc(now_ms())))
        log.flush()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        log.close()
        self.cluster.run.note("started %s (pid %d)" % (self.id, self.proc.pid))

    def wait_started(self, timeout_s=20):
        """Waits for the node's `started:` line of its latest start (TestFailure if it exits)."""
        def ok():
            if self.proc.poll() is not None:
                raise TestFailure("%s exited with status %s at start:\n%s" % (
                    self.id, self.proc.returncode, "\n".join(self.log_tail(15))))
            return any(" started: " in l for l in self.log_lines(current_start=True))
        wait_until(ok, timeout_s, "%s to start" % self.id)

    def kill9(self):
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.cluster.run.note("kill -9 %s" % self.id)

    def terminate(self):
        """SIGTERM without waiting (see wait_exit)."""
        if self.running():
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.cluster.run.note("SIGTERM %s" % self.id)

    def wait_exit(self, timeout_s=20):
        """Waits for the process to exit; returns its status (TestFailure on timeout)."""
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise TestFailure("%s did not exit within %d s of SIGTERM" % (self.id, timeout_s))
        self.cluster.run.note("%s exited with status %d" % (self.id, rc))
        return rc

    def wipe(self):
        assert not self.running()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.cluster.run.note("wiped the data directory of %s" % self.id)

    def log_lines(self, current_start=False):
        try:
            with open(self.log_path, errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        if current_start:
            marks = [i for i, l in enumerate(lines) if l.startswith("##### harness: start")]
            if marks:
                lines = lines[marks[-1] + 1:]
        return lines

    def log_lines_since(self, since_ms):
        """Log lines stamped at or after since_ms (harness marker lines excluded)."""
        return [l for l in self.log_lines() if line_time_ms(l) >= since_ms]

    def log_tail(self, n):
        return self.log_lines()[-n:]

    def api(self, method, path, body=None, token="test-token", timeout_s=10):
        """One HTTP request to this node's API: (status, body text); status 0 when no
        answer came (the text says why).  Inside a namespace it runs curl there."""
        url = "http://%s:%d%s" % (self.ip, self.api_port, path)
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, "curl", "-sS", "-m", str(timeout_s), "-o", "-",
                    "-w", "\n%{http_code}", "-X", method]
            if token:
                argv += ["-H", "Authorization: Bearer " + token]
            if body is not None:
                argv += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
            r = subprocess.run(argv + [url], input=body or "", capture_output=True, text=True)
            if r.returncode != 0:
                return 0, r.stderr.strip()
            text, _, code = r.stdout.rpartition("\n")
            return int(code), text
        req = urllib.request.Request(url, data=None if body is None else body.encode(), method=method)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def api_json(self, method, path, body=None):
        """The JSON answer of a request that must succeed (TestFailure otherwise)."""
        status, text = self.api(method, path, None if body is None else json.dumps(body))
        if not 200 <= status < 300:
            raise TestFailure("%s %s on %s: %s %s" % (method, path, self.id, status, text[:500]))
        return json.loads(text) if text else None

    def metrics(self):
        """GET /metrics as {sample name with labels: value}."""
        status, text = self.api("GET", "/metrics", token=None)
        if status != 200:
            raise TestFailure("GET /metrics on %s: %s %s" % (self.id, status, text[:300]))
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def records(self):
        try:
            with open(self.records_path) as f:
                text = f.read()
        except FileNotFoundError:
            return []
        # A handler may be writing its line right now: only complete lines count.
        complete = text[:text.rfind("\n") + 1]
        return [Record(l, self.id) for l in complete.splitlines() if l.strip()]


class Cluster:
    """A cluster of nodes sharing a key, a common.toml ([cluster], entries) and timings.

    ids: node ids, in priority order (the first is the highest priority: the master of
    every volume while it is up).  ips: one address per node (loopback by default).
    replicas: the replicas of volume "main" at epoch 1 (default: every node).
    """

    def __init__(self, run, ids=("n1", "n2", "n3"), ips=None, netns=None, entries="",
                 tuning=DEFAULT_TUNING, log_level="info", name="c", replicas=None):
        self.run = run
        self.replicas = list(replicas) if replicas else list(ids)  # of volume "main"
        self.dir = os.path.join(run.dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.cluster_name = "test-" + run.name
        self.tuning = tuning
        self.log_level = log_level
        self.entries = entries
        self.key_path = os.path.join(self.dir, "cluster.key")
        self.token_path = os.path.join(self.dir, "token")
        self.common_path = os.path.join(self.dir, "common.toml")
        self.record_script = os.path.join(self.dir, "record.sh")
        self.make_key(self.key_path)
        with open(self.token_path, "w") as f:
            f.write("test-token\n")
        with open(self.record_script, "w") as f:
            f.write(RECORD_SCRIPT)
        os.chmod(self.record_script, 0o755)
        self.nodes = {}
        if ips is None:
            ports = free_ports(3 * len(ids))
            for i, nid in enumerate(ids):
                self.nodes[nid] = Node(self, nid, "127.0.0.1", ports[3 * i:3 * i + 3])
        else:
            for i, nid in enumerate(ids):
                self.nodes[nid] = Node(self, nid, ips[i], (7000, 7001, 7002), netns[i] if netns else None)
        self.ids = list(ids)
        self.write_common()
        run.clusters.append(self)
        run.on_cleanup(self.kill_all)

    def make_key(self, path):
        r = subprocess.run([self.run.binary, "keygen", "--out", path], capture_output=True, text=True)
        if r.returncode != 0:
            raise TestFailure("caesium keygen failed: %s%s" % (r.stdout, r.stderr))

    def write_common(self):
        """[cluster] (priorities follow the order of ids), then the entries."""
        parts = ["[cluster]", "epoch = 1", ""]
        for i, nid in enumerate(self.ids):
            parts += ["[[cluster.node]]", 'id = "%s"' % nid, "priority = %d" % (100 - 10 * i), ""]
        parts += ["[[cluster.volume]]", 'name = "main"',
                  "replicas = [%s]" % ", ".join('"%s"' % n for n in self.replicas), "", self.entries]
        with open(self.common_path, "w") as f:
            f.write("\n".join(parts))

    def __getitem__(self, nid):
        return self.nodes[nid]

    def start(self, *ids):
        ids = ids or self.ids
        for nid in ids:
            self.nodes[nid].start()
        for nid in ids:
            self.nodes[nid].wait_started()

    def stop(self, *ids):
        """Graceful stop (SIGTERM) of ids (default all), in parallel; asserts status 0."""
        ids = ids or [n for n in self.ids if self.nodes[n].running()]
        for nid in ids:
            self.nodes[nid].terminate()
        for nid in ids:
            rc = self.nodes[nid].wait_exit()
            if rc != 0:
                raise TestFailure("%s exited with status %d after SIGTERM" % (nid, rc))

    def kill_all(self):
        for n in self.nodes.values():
            if n.running():
                os.killpg(n.proc.pid, signal.SIGKILL)
                n.proc.wait()

    def records(self, entry=None):
        out = []
        for n in self.nodes.values():
            out += n.records()
        if entry is not None:
            out = [r for r in out if r.entry == entry]
        out.sort(key=lambda r: (r.scheduled_ms, r.entry, r.wall_ms))
        return out

    def member_state(self, viewer, subject):
        """The last state viewer logged for subject since viewer's current start, or None."""
        state = None
        for l in self.nodes[viewer].log_lines(current_start=True):
            m = re.search(r" member (\S+) is (\w+) \(incarnation", l)
            if m and m.group(1) == subject:
                state = m.group(2)
        return state

    def wait_members_alive(self, ids=None, timeout_s=30):
        """Waits until every node in ids sees every other one alive: the last state it
        logged for it since its current start is `alive`.  (A node killed and restarted
        faster than failure detection never leaves `alive` in its peers' logs.)"""
        ids = ids or [n for n in self.ids if self.nodes[n].running()]

        def formed():
            return all(self.member_state(a, b) == "alive" for a in ids for b in ids if a != b)
        wait_until(formed, timeout_s, "membership of %s to form" % ",".join(ids))
        self.run.note("membership formed among %s" % ",".join(ids))

    def start_firing(self, period_ms):
        """Starts every node, waits for membership and for two runs of t/amo scheduled
        after a period from now; returns that instant (the first occurrence checked)."""
        self.start()
        self.wait_members_alive()
        begin = now_ms() + period_ms
        self.wait_records("t/amo", 2, after_ms=begin)
        return begin

    def wait_records(self, entry, count, after_ms=0, timeout_s=30):
        """Waits until `count` distinct occurrences of entry scheduled at or after after_ms
        have a record."""
        def enough():
            return len({r.scheduled_ms for r in self.records(entry) if r.scheduled_ms >= after_ms}) >= count
        wait_until(enough, timeout_s, "%d runs of %s scheduled after %s" % (count, entry, utc(after_ms)))

    def window_end(self, entries):
        """The last scheduled instant that every entry in `entries` has a record for.

        Entries due at the same instant fire on different nodes, and their records appear
        a few milliseconds apart; a window that ended at one entry's latest record would
        count the other's run, still being written, as missing."""
        ends = []
        for e in entries:
            recs = self.records(e)
            if not recs:
                raise TestFailure("no run of %s at all" % e)
            ends.append(max(r.scheduled_ms for r in recs))
        return min(ends)

    def report(self, log_lines=60):
        for nid in self.ids:
            n = self.nodes[nid]
            print("\n===== %s: last %d log lines (%s) =====" % (nid, log_lines, n.log_path))
            for l in n.log_tail(log_lines):
                print(l)
        print("\n===== fire records (all nodes, by scheduled time) =====")
        for r in self.records():
            print(r)
