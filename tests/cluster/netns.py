"""Network namespaces for partition tests: one namespace per node, a bridge between them.

Layout (everything lives in namespaces this run creates; the host's own network is not
touched, not even by a bridge):

    cst-<pid>-hub:  bridge br0, one veth end per node (v1, v2, ...)
    cst-<pid>-<id>: eth0 = the other veth end, 10.99.0.<i>/24, lo; nftables table
                    `inet cut` with input and output chains that the faults fill

Faults are nftables drop rules inside the node namespaces:
    partition([[a, b], [c, d, e]])  every node drops traffic to and from nodes outside
                                    its group (both directions, UDP and TCP);
    one_way(src, [dst...])          src's packets to dst are dropped at src's output;
                                    dst's packets to src still arrive;
    heal()                          flushes every rule.

Namespaces named cst-<pid>-* whose pid is no longer running (a run killed with SIGKILL)
are deleted when the next run starts.
"""

import os
import re
import shutil
import subprocess

from harness import TestFailure, TestSkip

SUBNET = "10.99.0.%d"


def sh(*argv, check=True):
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise TestFailure("%s failed (%d): %s" % (" ".join(argv), r.returncode, (r.stderr or r.stdout).strip()))
    return r


def remove_stale():
    """Deletes namespaces of earlier runs whose process is gone."""
    r = sh("ip", "netns", "list", check=False)
    for line in r.stdout.splitlines():
        m = re.match(r"(cst-(\d+)-\S+)", line)
        if not m:
            continue
        pid = int(m.group(2))
        try:
            os.kill(pid, 0)
            continue  # still running: someone else's run
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        sh("ip", "netns", "del", m.group(1), check=False)


def require_netns():
    """TestSkip with the reason when this machine cannot make namespaces and nft rules."""
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            raise TestSkip("'%s' is not installed (iproute2 and nftables are needed; see .ci/install-deps)" % tool)
    if os.geteuid() != 0:
        raise TestSkip("network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN); run as root")
    probe = "cst-%d-probe" % os.getpid()
    r = sh("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        raise TestSkip("cannot create a network namespace: %s" % r.stderr.strip())
    try:
        r = sh("ip", "netns", "exec", probe, "nft", "add", "table", "inet", "probe", check=False)
        if r.returncode != 0:
            raise TestSkip("nftables does not work in a namespace: %s" % r.stderr.strip())
        r = sh("ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1", check=False)
        if r.returncode != 0:
            raise TestSkip("cannot create veth pairs: %s" % r.stderr.strip())
    finally:
        sh("ip", "netns", "del", probe, check=False)


class Network:
    """Namespaces for node ids; ns(i) and ip(i) are what Cluster(ips=, netns=) takes."""

    def __init__(self, run, ids):
        require_netns()
        remove_stale()
        self.run = run
        self.ids = list(ids)
        self.prefix = "cst-%d" % os.getpid()
        self.hub = self.prefix + "-hub"
        self.made = []
        run.on_cleanup(self.destroy)
        self._add_ns(self.hub)
        sh("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.hub, "link", "set", "br0", "up")
        for i, nid in enumerate(self.ids, start=1):
            ns = self.ns(nid)
            self._add_ns(ns)
            sh("ip", "-n", self.hub, "link", "add", "v%d" % i, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", self.hub, "link", "set", "v%d" % i, "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", SUBNET % i + "/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            self.nft(nid, "add table inet cut")
            self.nft(nid, "add chain inet cut input { type filter hook input priority 0; policy accept; }")
            self.nft(nid, "add chain inet cut output { type filter hook output priority 0; policy accept; }")
        run.note("network: namespaces %s-{hub,%s} on a bridge, %s" % (
            self.prefix, ",".join(self.ids), ", ".join("%s=%s" % (n, self.ip(n)) for n in self.ids)))

    def _add_ns(self, name):
        sh("ip", "netns", "add", name)
        self.made.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def ns(self, nid):
        return "%s-%s" % (self.prefix, nid)

    def ip(self, nid):
        return SUBNET % (self.ids.index(nid) + 1)

    def nft(self, nid, rule):
        sh("ip", "netns", "exec", self.ns(nid), "nft", *rule.split())

    def _drop(self, nid, chain, field, peers):
        if peers:
            addrs = ", ".join(self.ip(p) for p in peers)
            self.nft(nid, "add rule inet cut %s ip %s { %s } drop" % (chain, field, addrs))

    def partition(self, groups):
        """Each node drops everything to and from the nodes outside its group."""
        self.heal(quiet=True)
        for g in groups:
            others = [n for n in self.ids if n not in g]
            for nid in g:
                self._drop(nid, "input", "saddr", others)
                self._drop(nid, "output", "daddr", others)
        self.run.note("partition: %s" % " | ".join(",".join(g) for g in groups))

    def one_way(self, src, dsts):
        """src's packets to dsts are dropped (at src's output); the reverse passes."""
        self.heal(quiet=True)
        self._drop(src, "output", "daddr", dsts)
        self.run.note("one-way cut: %s -> %s dropped, %s -> %s delivered" % (
            src, ",".join(dsts), ",".join(dsts), src))

    def heal(self, quiet=False):
        for nid in self.ids:
            self.nft(nid, "flush chain inet cut input")
            self.nft(nid, "flush chain inet cut output")
        if not quiet:
            self.run.note("network healed")

    def exec_argv(self, nid, argv):
        """argv run inside nid's namespace."""
        return ["ip", "netns", "exec", self.ns(nid)] + list(argv)

    def destroy(self):
        # Processes inside are gone by now (clusters clean up after the network is made,
        # so they run first); a namespace with a process left would linger unnamed.
        for name in reversed(self.made):
            sh("ip", "netns", "del", name, check=False)
        self.made = []
