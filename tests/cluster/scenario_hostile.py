"""Hostile traffic (issue 6: "a wrong cluster key, a replayed packet and random bytes sent
to the gossip port: dropped, counted in metrics, node unaffected").

Three nodes on loopback with an at-least-once and an at-most-once entry every 2 s.
1  An intruder: a real `caesium node` with the same cluster name but its own key, seeded
   with the cluster's addresses, runs for 8 s.  Its frames fail authentication at the
   cluster's nodes (caesium_frame_auth_failures_total rises) and it never becomes a
   member in their views.
2  A replayed packet: a real gossip datagram to n1 is captured on the loopback interface
   (an AF_PACKET socket; needs CAP_NET_RAW, else the scenario is skipped) and sent to
   n1 again three times: caesium_frame_replays_total rises by at least 3.
3  Random bytes: 300 datagrams of random length (some with a valid frame header in front)
   to n1's gossip port, and garbage on its stream port (random bytes, a huge length
   prefix): auth failures rise by at least 300; the stream connections are closed.
Throughout and after: every node stays up and alive in every view, at-most-once runs
exactly once, at-least-once runs every occurrence, nothing early.
"""

import os
import random
import socket
import struct
import time

import checks
from harness import Cluster, TestFailure, TestSkip, alo_amo_entries, now_ms, wait_until

PERIOD_MS = 2000
AUTH = "caesium_frame_auth_failures_total"
REPLAYS = "caesium_frame_replays_total"


def metric(node, name):
    return node.metrics().get(name, 0.0)


def capture_datagram(port, timeout_s=10):
    """The payload of one UDP datagram to 127.0.0.1:port seen on the loopback interface."""
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    except PermissionError:
        raise TestSkip("capturing a packet needs CAP_NET_RAW (run as root)")
    try:
        s.bind(("lo", 0))
        s.settimeout(0.5)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                pkt = s.recv(65535)
            except socket.timeout:
                continue
            ip = pkt[14:]  # loopback frames carry a (zero) Ethernet header
            if len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 17:
                continue
            ihl = (ip[0] & 0x0F) * 4
            dst_port = struct.unpack("!H", ip[ihl + 2:ihl + 4])[0]
            if ip[16:20] == socket.inet_aton("127.0.0.1") and dst_port == port:
                return bytes(ip[ihl + 8:])
    finally:
        s.close()
    raise TestFailure("no gossip datagram to port %d seen on lo within %d s" % (port, timeout_s))


def send_udp(port, payloads):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for p in payloads:
            s.sendto(p, ("127.0.0.1", port))
            time.sleep(0.002)
    finally:
        s.close()


def stream_garbage(port, payload):
    """Sends payload on a fresh connection; True when the node closed it within 5 s."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(payload)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if s.recv(4096) == b"":
                    return True
            except socket.timeout:
                return False
            except ConnectionResetError:
                return True
        return False
    finally:
        s.close()


def hostile(run):
    c = Cluster(run, entries=alo_amo_entries())
    begin = c.start_firing(PERIOD_MS)
    n1 = c["n1"]
    rng = random.Random(int(os.environ.get("CAESIUM_TEST_SEED", "7")))
    run.note("random bytes from seed %d (CAESIUM_TEST_SEED replays)" % int(os.environ.get("CAESIUM_TEST_SEED", "7")))

    # 1: a node with the wrong key.
    before = {n: metric(c[n], AUTH) for n in c.ids}
    intruder = Cluster(run, ids=("x1",), name="intruder")
    intruder["x1"].extra_seeds = [c[n].stream_addr for n in c.ids]
    intruder.start()
    run.note("intruder x1 (same cluster name, another key) started")
    time.sleep(8)
    intruder.stop()
    rose = {n: metric(c[n], AUTH) - before[n] for n in c.ids}
    if sum(rose.values()) <= 0:
        raise TestFailure("no auth failure counted while the wrong-key node ran: %s" % rose)
    for n in c.ids:
        if c.member_state(n, "x1") is not None:
            raise TestFailure("%s logged the wrong-key node x1 as a member (%s)" % (n, c.member_state(n, "x1")))
    run.note("wrong key: auth failures rose by %s; x1 is a member nowhere" % rose)

    # 2: a replayed datagram.
    packet = capture_datagram(n1.gossip_port)
    replays0 = metric(n1, REPLAYS)
    time.sleep(0.2)
    send_udp(n1.gossip_port, [packet] * 3)
    wait_until(lambda: metric(n1, REPLAYS) - replays0 >= 3, 10, "n1 to count 3 replays")
    run.note("replay: a captured %d-byte datagram sent 3 more times, n1 counted %d replays" % (
        len(packet), metric(n1, REPLAYS) - replays0))

    # 3: random bytes.
    auth0 = metric(n1, AUTH)
    junk = []
    for i in range(300):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 1400)))
        if i % 3 == 0:
            body = bytes([0xCA, 1, 0, 0]) + body  # a plausible header, then garbage
        junk.append(body)
    send_udp(n1.gossip_port, junk)
    wait_until(lambda: metric(n1, AUTH) - auth0 >= 300, 10, "n1 to count 300 auth failures")
    run.note("random datagrams: 300 sent, n1 counted %d auth failures" % (metric(n1, AUTH) - auth0))
    closed = [
        stream_garbage(n1.stream_port, bytes(rng.getrandbits(8) for _ in range(4096))),
        stream_garbage(n1.stream_port, struct.pack("<I", 0xFFFFFFF0) + b"x" * 64),
        stream_garbage(n1.stream_port, struct.pack(">I", 0xFFFFFFF0) + b"x" * 64),
    ]
    if not all(closed):
        raise TestFailure("n1 kept a stream connection open after garbage: %s" % closed)
    run.note("stream garbage: random bytes and huge length prefixes, every connection closed")

    # The cluster was unaffected.
    for n in c.ids:
        if not c[n].running():
            raise TestFailure("%s is no longer running" % n)
    c.wait_members_alive()
    for n in c.ids:
        for m in c.ids:
            if n != m and c.member_state(n, m) != "alive":
                raise TestFailure("%s sees %s as %s" % (n, m, c.member_state(n, m)))
    settled = now_ms() + PERIOD_MS
    c.wait_records("t/amo", 2, after_ms=settled)
    end = c.window_end(("t/amo", "t/alo"))
    recs = c.records()
    checks.each_ran(recs, "t/amo", checks.expected_instants(PERIOD_MS, begin, end), exactly_once=True,
                    what="under hostile traffic")
    checks.each_ran(recs, "t/alo", checks.expected_instants(PERIOD_MS, begin, end), what="under hostile traffic")
    checks.run_invariants(recs)
    c.stop()
