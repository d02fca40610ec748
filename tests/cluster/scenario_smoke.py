"""Smoke scenarios: a healthy three-node cluster fires, and the example cluster works.

smoke            three nodes on loopback, an at-least-once and an at-most-once entry
                 every 2 s: every occurrence runs, at-most-once ones exactly once, no run
                 is early, any second run of an occurrence is flagged, and SIGTERM stops
                 every node with status 0.  SIGHUP on n1: a config that no longer
                 loads is reported and ignored; a good one switches it to debug logging.
                 Each node runs on the binary's allocator: mimalloc (the default build)
                 mapped into it, or under glibc's the node ran itself again with its glibc
                 tunable (same pid); the handlers it starts see the environment it was
                 started with.
example          the README's main command: examples/run-cluster.sh (copied to a
                 temporary directory, ports moved to free ones) runs the example cluster
                 for 12 s; it must exit 0 and report completed occurrences.
"""

import os
import re
import shutil
import signal
import subprocess

import checks
from harness import (Cluster, _die_with_parent, TestFailure, alo_amo_entries, entry_toml, free_ports, now_ms, utc,
                     wait_until)

PERIOD_MS = 2000


ENVDUMP_HANDLER = """
[[handler]]
name = "envdump"
kind = "exec"
argv = ["/bin/sh", "-c", "cat >/dev/null; env > '%s'"]
timeout = "10s"
"""
NODE_TUNABLE = "glibc.malloc.tcache_count=16000"  # node/cli/node_cmd.cpp


def smoke(run):
    c = Cluster(run, entries=alo_amo_entries() + entry_toml("env", "*/2 * * * * *", "at_least_once",
                                                             handler="envdump"))
    for n in c.nodes.values():
        n.extra_toml = ENVDUMP_HANDLER % os.path.join(c.dir, "env-%s.txt" % n.id)
    c.start()
    c.wait_members_alive()
    tunables(run, c)
    t0 = now_ms() + PERIOD_MS  # the first occurrence after membership formed, with room
    for e in ("t/alo", "t/amo"):
        c.wait_records(e, 4, after_ms=t0, timeout_s=30)
    end = c.window_end(("t/amo", "t/alo"))
    recs = [r for r in c.records() if r.scheduled_ms >= t0]
    instants = checks.expected_instants(PERIOD_MS, t0, end)
    checks.each_ran(recs, "t/amo", instants, exactly_once=True, what="healthy cluster")
    checks.each_ran(recs, "t/alo", instants, what="healthy cluster")
    checks.duplicates_are_flagged(c.records())
    checks.never_early(c.records())
    late = sorted(r.wall_ms - r.scheduled_ms for r in recs)
    run.note("%d runs; handler start lateness median %d ms, max %d ms (shown, not asserted)" % (
        len(recs), late[len(late) // 2], late[-1]))
    sighup(run, c)
    c.stop()


def binary_allocator(binary):
    """The allocator `caesium version` names (node/cli/allocator.h)."""
    out = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"^allocator: (.*)$", out, re.M)
    if not m:
        raise TestFailure("`%s version` names no allocator: %r" % (binary, out))
    return m.group(1)


def tunables(run, c):
    """A binary linked with mimalloc runs on it, and leaves GLIBC_TUNABLES alone.  Under
    glibc's allocator `caesium node` runs itself again (same pid) with its glibc tunable
    added.  Either way the environment is put back, so handlers inherit the operator's
    GLIBC_TUNABLES, not ours."""
    ours = os.environ.get("GLIBC_TUNABLES")
    names_it = ours is not None and any(t.split("=")[0] == NODE_TUNABLE.split("=")[0] for t in ours.split(":"))
    allocator = binary_allocator(run.binary)
    mimalloc = allocator.startswith("mimalloc")
    for n in c.nodes.values():
        with open("/proc/%d/environ" % n.proc.pid, "rb") as f:
            started = [v.decode(errors="replace") for v in f.read().split(b"\0")]
        value = next((v[len("GLIBC_TUNABLES="):] for v in started if v.startswith("GLIBC_TUNABLES=")), None)
        if mimalloc:
            with open("/proc/%d/maps" % n.proc.pid) as f:
                if "libmimalloc" not in f.read():
                    raise TestFailure("%s: the binary names %s, but no libmimalloc is mapped" % (n.id, allocator))
            if value != ours:
                raise TestFailure("%s: GLIBC_TUNABLES %r was changed to %r (mimalloc: nothing to tune)" % (
                    n.id, ours, value))
        elif names_it:
            if value != ours:
                raise TestFailure("%s: GLIBC_TUNABLES %r was changed to %r" % (n.id, ours, value))
        elif value is None or NODE_TUNABLE not in value.split(":"):
            raise TestFailure("%s runs without %s (GLIBC_TUNABLES=%r)" % (n.id, NODE_TUNABLE, value))
    paths = [os.path.join(c.dir, "env-%s.txt" % nid) for nid in c.ids]
    wait_until(lambda: any(os.path.exists(p) and os.path.getsize(p) > 0 for p in paths), 30,
               "a run of the envdump handler")
    for p in paths:
        if not (os.path.exists(p) and os.path.getsize(p) > 0):
            continue
        with open(p) as f:
            env = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        if "CAESIUM_NODE" not in env:
            raise TestFailure("%s: not a handler's environment: %r" % (p, sorted(env)))
        if env.get("GLIBC_TUNABLES") != ours or any(k.startswith("CAESIUM_GLIBC_TUNABLES") for k in env):
            raise TestFailure("%s: handler saw GLIBC_TUNABLES=%r (started with %r), markers %r" % (
                p, env.get("GLIBC_TUNABLES"), ours, [k for k in env if k.startswith("CAESIUM_GLIBC")]))
    run.note("nodes run on %s%s; handlers see the environment they were started with" % (
        allocator, "" if mimalloc else " with " + NODE_TUNABLE))


def sighup(run, c):
    """SIGHUP reloads the log level (and handlers) from the file; a file that no longer
    loads is reported and the running configuration kept."""
    n1 = c["n1"]
    with open(n1.config_path) as f:
        good = f.read()
    since = now_ms()
    with open(n1.config_path, "w") as f:
        f.write(good + "\nthis is not toml = = =\n")
    n1.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: any("SIGHUP: the config does not load" in l for l in n1.log_lines_since(since)), 10,
               "n1 to report the broken config")
    with open(n1.config_path, "w") as f:
        f.write(good.replace('log_level = "info"', 'log_level = "debug"'))
    n1.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: any("SIGHUP: reloaded" in l and "log level debug" in l for l in n1.log_lines_since(since)),
               10, "n1 to reload at debug level")
    after = now_ms()
    wait_until(lambda: any(" debug node=n1 " in l for l in n1.log_lines_since(after)), 10,
               "a debug line from n1 after the reload")
    if not n1.running():
        raise TestFailure("n1 exited after SIGHUP")
    c.wait_records("t/amo", 1, after_ms=after + PERIOD_MS)
    run.note("SIGHUP: a broken config was reported and kept out; a good one switched n1 to debug logging")


def example_cluster(run):
    src = os.path.join(run.source_dir, "examples")
    dst = os.path.join(run.dir, "examples")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("data"))
    # The example's fixed ports (71N1 gossip, 71N2 stream, 71N3 API) -> free ones, so the
    # check runs beside a developer's own example cluster.
    fixed = [7100 + 10 * n + k for n in (1, 2, 3) for k in (1, 2, 3)]
    moved = dict(zip(fixed, free_ports(len(fixed))))
    for name in ("n1.toml", "n2.toml", "n3.toml", "run-cluster.sh"):
        path = os.path.join(dst, name)
        with open(path) as f:
            text = f.read()
        text = re.sub(r"\b(71[123][123])\b", lambda m: str(moved.get(int(m.group(1)), m.group(1))), text)
        with open(path, "w") as f:
            f.write(text)
    env = dict(os.environ, CAESIUM_BIN=run.binary)
    out_path = os.path.join(run.dir, "run-cluster.out")
    run.note("examples/run-cluster.sh --for 12s (copy in %s)" % dst)
    with open(out_path, "w") as out:
        proc = subprocess.Popen(["bash", os.path.join(dst, "run-cluster.sh"), "--for", "12s"], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_parent)

    def stop_leftovers():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        # The script starts nodes in sessions of their own; any left (it was killed) are
        # found by their config paths, which only this run uses.
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if any(a.startswith(dst.encode()) and a.endswith(b".toml") for a in cmd):
                os.kill(int(pid), signal.SIGKILL)
    run.on_cleanup(stop_leftovers)
    rc = proc.wait(timeout=60)
    with open(out_path, errors="replace") as f:
        output = f.read()
    fired = re.search(r"run-cluster: stopped; (\d+) occurrences completed", output)
    if rc != 0 or not fired or int(fired.group(1)) < 1:
        tail = "\n".join(output.splitlines()[-40:])
        raise TestFailure("run-cluster.sh exited with %d; its last lines:\n%s" % (rc, tail))
    for n in ("n1", "n2", "n3"):
        log = os.path.join(dst, "data", n + ".log")
        with open(log, errors="replace") as f:
            text = f.read()
        if " started: " not in text or " stopped: " not in text:
            raise TestFailure("%s did not start and stop cleanly; see %s" % (n, log))
    run.note("the example cluster completed %s occurrences in 12 s (at %s)" % (fired.group(1), utc(now_ms())))
