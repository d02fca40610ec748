"""Replace a replica with real processes (issue 7: "apply a new epoch (add or remove
replicas) with no loss of entries"; docs/api.md, Cluster config).

Four nodes; volume main is replicated on n1, n2, n3 and n4 is a node without it.  The
entries firing every 2 s are static entries of n1's file; 40 more are written through
n3's API (due in an hour), so before the change only n1..n3 hold them.

R  Two changes of the same epoch at the same instant, through n2 and n4 (each tags n4
   differently): at most one is applied (200), the other is refused (409), and every
   node ends with the same config — the nodes agree on each epoch before adopting it
   (docs/api.md, How a change is agreed).
A  PUT /v1/config through n1: main becomes [n1,n2,n4] with previous [n1,n2,n3].
B  at once, the final step ([n1,n2,n4] alone): refused with 409 (a replica still holds epoch 1,
   or n4 has not filled); retried until it is applied.
C  n4 holds every entry (status: filled, records; the 40 listed through its own API),
   and n3 hands its copy over and lets go of the volume (its status has no records, and
   names n1, elected from its own view, as the master).
D  kill -9 n3: it no longer matters; the new majority keeps firing.
Throughout: at-most-once exactly once, at-least-once every occurrence.
"""

import json
import threading

import checks
from harness import Cluster, TestFailure, alo_amo_entries, now_ms, wait_until

PERIOD_MS = 2000
LOAD = 40


def main_volume(node):
    status = node.api_json("GET", "/v1/status")
    for v in status["volumes"]:
        if v["name"] == "main":
            return v
    raise TestFailure("%s: no volume main in its status" % node.id)


def with_main(config, epoch, replicas, previous=None):
    c = json.loads(json.dumps(config))
    c["epoch"] = epoch
    for v in c["volumes"]:
        if v["name"] == "main":
            v["replicas"] = replicas
            v.pop("previous_replicas", None)
            if previous:
                v["previous_replicas"] = previous
    return json.dumps(c)


def reconfig(run):
    c = Cluster(run, ids=("n1", "n2", "n3", "n4"), replicas=("n1", "n2", "n3"))
    c["n1"].extra_toml = alo_amo_entries()
    begin = c.start_firing(PERIOD_MS)
    timer = json.dumps({"timer": {"after": "1h"}, "handler": "record", "semantics": "at_most_once"})
    for i in range(LOAD):
        status, text = c["n3"].api("PUT", "/v1/volumes/main/entities/load/schedule/t%02d" % i, timer)
        if status not in (200, 201):
            raise TestFailure("PUT load/t%02d through n3: %s %s" % (i, status, text[:300]))
    if "records" in main_volume(c["n4"]):
        raise TestFailure("n4 holds volume main before the change")

    # R: two changes of one epoch at once.
    config = c["n1"].api_json("GET", "/v1/config")
    answers = {}

    def tag_n4(via, tag):
        doc = json.loads(json.dumps(config))
        doc["epoch"] = config["epoch"] + 1
        for n in doc["nodes"]:
            if n["id"] == "n4":
                n["tags"] = [tag]
        answers[via] = c[via].api("PUT", "/v1/config", json.dumps(doc))
    racers = [threading.Thread(target=tag_n4, args=(via, tag)) for via, tag in (("n2", "race-a"), ("n4", "race-b"))]
    for t in racers:
        t.start()
    for t in racers:
        t.join()
    codes = sorted(a[0] for a in answers.values())
    if codes.count(200) > 1 or any(code not in (200, 409) for code in codes):
        raise TestFailure("two changes of one epoch at once answered %s" % answers)

    def one_config():
        held = [c[n].api_json("GET", "/v1/config") for n in ("n1", "n2", "n3", "n4")]
        return all(h == held[0] for h in held)
    wait_until(one_config, 10, "every node to hold the same config after the race")
    config = c["n1"].api_json("GET", "/v1/config")
    won = [n["tags"] for n in config["nodes"] if n["id"] == "n4"]
    if codes.count(200) == 1 and config["epoch"] != 2:
        raise TestFailure("the race was won but the config is at epoch %d" % config["epoch"])
    run.note("R: answers %s; n4's tags now %s (epoch %d)" % (codes, won, config["epoch"]))

    # A: the joint epoch.
    # (Refused with 409 until n1 has heard, through gossip, that the others hold it.)
    epoch = config["epoch"] + 1
    joint = with_main(config, epoch, ["n1", "n2", "n4"], ["n1", "n2", "n3"])
    last = []

    def joint_applied():
        last[:] = c["n1"].api("PUT", "/v1/config", joint)
        return last[0] == 200 or last[0] != 409
    wait_until(joint_applied, 15, "the joint epoch to be accepted")
    if last[0] != 200:
        raise TestFailure("the joint epoch was refused: %s %s" % (last[0], last[1][:500]))
    change = now_ms()

    # B: the final step at once is refused; later it is applied.
    final = with_main(config, epoch + 1, ["n1", "n2", "n4"])
    status, text = c["n1"].api("PUT", "/v1/config", final)
    if status != 409:
        raise TestFailure("the final step right after the joint one answered %s, not 409: %s" % (status, text[:500]))
    run.note("B: the final step at once: 409 %s" % json.loads(text).get("error", "")[:160])
    answers = []

    def applied():
        s, t = c["n1"].api("PUT", "/v1/config", final)
        answers.append(s)
        return s == 200
    wait_until(applied, 60, "the final step to be accepted")
    run.note("B: applied %.1f s after the joint epoch, after %d refusals" % ((now_ms() - change) / 1000.0, len(answers) - 1))

    # C: n4 holds everything; n3 hands over and lets go.
    v4 = main_volume(c["n4"])
    if not v4.get("filled") or not v4.get("replica"):
        raise TestFailure("n4 after the change: %s" % v4)
    listed = c["n4"].api_json("GET", "/v1/volumes/main/entries?prefix=load&limit=1000")["entries"]
    if len(listed) != LOAD:
        raise TestFailure("n4 lists %d of the %d entries written through n3" % (len(listed), LOAD))
    wait_until(lambda: "records" not in main_volume(c["n3"]), 30, "n3 to hand volume main over and let go")
    v3 = main_volume(c["n3"])
    if v3.get("replica") or v3.get("master") != "n1":
        raise TestFailure("n3, no longer a replica, should see n1 as master of main: %s" % v3)
    run.note("C: n4 filled with %d records; n3 handed its copy over" % v4["records"])

    # D: n3 no longer matters.
    c["n3"].kill9()
    settled = now_ms() + 2 * PERIOD_MS
    c.wait_records("t/amo", 3, after_ms=settled)
    end = c.window_end(("t/amo", "t/alo"))

    recs = c.records()
    checks.each_ran(recs, "t/alo", checks.expected_instants(PERIOD_MS, begin, end), what="across the change")
    checks.each_ran(recs, "t/amo", checks.expected_instants(PERIOD_MS, begin, end), exactly_once=True,
                    what="across the change (a majority of both sets always up)")
    checks.run_invariants(recs)
    c.stop()
