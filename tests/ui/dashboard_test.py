#!/usr/bin/env python3
"""The dashboard (/ui) in a real browser: Debian's chromium, driven headless through
chromedriver's WebDriver protocol by the small client below (standard library only).

Two `caesium node` processes on 127.0.0.1 with scoped tokens (an admin and a read-only
token) and entries made through the API.  The test logs in through the page and checks
what it shows against what the API answers: members and their state and clock offset,
every volume's master, the withheld / missed / lost counts, the entry list and its
search filter, an entry's definition, next occurrences and history timeline; that a
wrong token is refused; that the admin token's Pause and Resume buttons pause and resume
an entry (the page and a GET of the entry agree each time, the list marks it paused), that
its Run now button triggers it (the API lists the trigger, the page's definition too) and
that a refused control shows the API's error; that a read-only token sees no controls,
and that controls appear only for features the API reports.  It saves a screenshot
(--out).

Exit status 0 passed, 1 failed, 77 skipped (no chromium or chromedriver, outside CI).
Bounded: every wait has a limit, the whole run has --timeout, and every process it
starts (nodes, chromedriver and the browser under it) is killed on the way out.
"""

import argparse
import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ADMIN = "ui-admin-token-0123456789abcdef"
READER = "ui-reader-token-0123456789abcdef"
DEADLINE = None


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def remaining():
    return DEADLINE - time.monotonic()


def wait_for(what, fn, limit_s=20.0, step_s=0.2):
    """Polls fn() until it returns a true value; fails after limit_s (or the deadline)."""
    end = time.monotonic() + min(limit_s, max(remaining(), 0))
    last = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except (Failure, urllib.error.URLError, OSError, KeyError, ValueError) as e:
            last = e
        if time.monotonic() >= end:
            raise Failure("timed out waiting for %s (last: %r)" % (what, last))
        time.sleep(step_s)


def free_ports(n):
    """n distinct TCP/UDP-free loopback ports below the ephemeral range."""
    ports = []
    while len(ports) < n:
        p = 20000 + int.from_bytes(os.urandom(2), "big") % 10000
        if p in ports:
            continue
        ok = True
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            ports.append(p)
    return ports


def _die_with_parent():
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


class Processes:
    """Everything started here, each in its own process group; killed at the end."""

    def __init__(self):
        self.procs = []

    def start(self, argv, log_path, env=None):
        log = open(log_path, "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=_die_with_parent, env=env)
        log.close()
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + 10
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group: chromium's children too
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


# ---- HTTP --------------------------------------------------------------------------

def http(method, url, body=None, token=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=min(timeout, max(remaining(), 1))) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


class Api:
    def __init__(self, base):
        self.base = base

    def get(self, path, token=ADMIN):
        status, body = http("GET", self.base + path, token=token)
        check(status == 200, "GET %s: %s %s" % (path, status, body))
        return body

    def put(self, path, body, token=ADMIN):
        status, answer = http("PUT", self.base + path, body, token=token)
        check(status in (200, 201), "PUT %s: %s %s" % (path, status, answer))
        return answer


# ---- WebDriver -------------------------------------------------------------------------

class Browser:
    """A W3C WebDriver session with chromedriver: the few commands this test needs."""

    def __init__(self, port, chromium, profile_dir):
        self.base = "http://127.0.0.1:%d" % port
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,1300", "--user-data-dir=" + profile_dir]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args}}}}
        value = self._call("POST", "/session", caps, timeout=60)
        self.session = "/session/" + value["sessionId"]
        self._call("POST", self.session + "/timeouts", {"implicit": 0, "pageLoad": 20000, "script": 10000})

    def _call(self, method, path, body=None, timeout=20):
        status, answer = http(method, self.base + path, body if body is not None else
                              ({} if method == "POST" else None), timeout=timeout)
        if not isinstance(answer, dict) or status != 200:
            raise Failure("webdriver %s %s: %s %s" % (method, path, status, answer))
        return answer.get("value")

    def close(self):
        try:
            self._call("DELETE", self.session, timeout=10)
        except (Failure, OSError):
            pass

    def go(self, url):
        self._call("POST", self.session + "/url", {"url": url})

    def js(self, script, *args):
        return self._call("POST", self.session + "/execute/sync", {"script": script, "args": list(args)})

    def find_all(self, css):
        found = self._call("POST", self.session + "/elements", {"using": "css selector", "value": css})
        return [list(e.values())[0] for e in found]

    def find(self, css):
        found = self.find_all(css)
        check(len(found) == 1, "expected one element for %r, found %d" % (css, len(found)))
        return found[0]

    def text(self, css):
        """The rendered text of the one element `css` selects ("" when it is hidden)."""
        return self._call("GET", self.session + "/element/%s/text" % self.find(css))

    def shown(self, css):
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return !!e && !e.closest('[hidden]') && e.getClientRects().length > 0;", css)

    def type(self, css, text):
        e = self.find(css)
        self._call("POST", self.session + "/element/%s/clear" % e)
        self._call("POST", self.session + "/element/%s/value" % e, {"text": text})

    def click(self, css):
        self._call("POST", self.session + "/element/%s/click" % self.find(css))

    def screenshot(self, path):
        png = base64.b64decode(self._call("GET", self.session + "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        return len(png)

    def rows(self, table_css, key_attr, cell_css):
        """{row's data attribute: its cell's text} for the rows of a table."""
        return self.js(
            "const out = {};"
            "for (const tr of document.querySelectorAll(arguments[0] + ' tbody tr'))"
            "  out[tr.dataset[arguments[1]]] = tr.querySelector(arguments[2]).textContent;"
            "return out;", table_css, key_attr, cell_css)


# ---- the cluster ------------------------------------------------------------------------

def write_node(dir_, node_id, ports, seeds, key_file, tokens_file):
    gossip, stream, api = ports
    text = """node_id = "%s"
cluster_name = "ui-test"
data_dir = "%s"
key_file = "%s"
gossip_listen = "127.0.0.1:%d"
stream_listen = "127.0.0.1:%d"
seeds = [%s]
shutdown_grace = "2s"

[api]
listen = "127.0.0.1:%d"
tokens_file = "%s"

[gossip]
probe_interval = "300ms"
probe_timeout = "150ms"
startup_grace = "1s"

[cluster]
epoch = 1

[[cluster.node]]
id = "n1"
priority = 20

[[cluster.node]]
id = "n2"
priority = 10

[[cluster.volume]]
name = "main"
replicas = ["n1", "n2"]

[[cluster.volume]]
name = "solo"
replicas = ["n2"]

[[handler]]
name = "log"
kind = "builtin"
builtin = "log"
""" % (node_id, os.path.join(dir_, "data-" + node_id), key_file, gossip, stream,
       ", ".join('"127.0.0.1:%d"' % s for s in seeds), api, tokens_file)
    path = os.path.join(dir_, node_id + ".toml")
    with open(path, "w") as f:
        f.write(text)
    return path


ENTRIES = {
    ("main", "acme", "report"): {"timer": {"interval": "1s", "count": 3}, "handler": "log"},
    ("main", "acme", "nightly"): {"cron": "30 2 * * *", "tz": "Europe/London", "handler": "log",
                                  "semantics": "at_most_once"},
    ("main", "billing", "invoice"): {"cron": "0 9 1 * *", "handler": "log"},
    ("main", "billing", "reminder"): {"cron": "0 12 * * MON", "handler": "log"},
    ("solo", "ops", "cleanup"): {"cron": "15 3 * * *", "handler": "log"},
}


def entry_path(volume, entity, name):
    return "/v1/volumes/%s/entities/%s/schedule/%s" % (volume, entity, name)


# ---- the checks ------------------------------------------------------------------------------

def check_login(b, ui):
    b.go(ui)
    wait_for("the login form", lambda: b.shown("#login"))
    check(not b.shown("#dashboard"), "the dashboard shows before a login")
    b.type("#token-input", "not-a-token-of-this-node")
    b.click("#login-button")
    wait_for("the refusal of a wrong token", lambda: "not accepted" in b.text("#login-error"))
    check(not b.shown("#dashboard"), "a wrong token opened the dashboard")
    check(b.js("return sessionStorage.getItem('caesium.token');") is None, "a refused token was kept")


def log_in(b, ui, token, expect):
    b.go(ui)
    wait_for("the login form", lambda: b.shown("#login"))
    b.type("#token-input", token)
    b.click("#login-button")
    wait_for("the dashboard after logging in", lambda: b.shown("#dashboard") and b.find_all("#entries tbody tr"))
    check(expect in b.text("#whoami"), "whoami shows %r, not %r" % (b.text("#whoami"), expect))
    check(b.js("return sessionStorage.getItem('caesium.token');") == token, "the token is not in sessionStorage")


def check_status(b, api):
    """The page against the API, until they agree: the page refreshes every 5 s, so a
    value that changed in between (a clock offset, a load) is given one refresh more."""
    return wait_for("the page to show what /v1/status says", lambda: status_matches(b, api), limit_s=15, step_s=1)


def status_matches(b, api):
    status = api.get("/v1/status")
    members = b.rows("#members", "member", ".state")
    want = {m["id"]: m["state"] for m in status["members"]}
    check(members == want, "members shown %r, API %r" % (members, want))
    clocks = b.rows("#members", "member", ".clock")
    for m in status["members"]:
        if m["clock_ahead_ms"] is None:
            check(clocks[m["id"]] == "–", "clock of %s shown %r, API null" % (m["id"], clocks[m["id"]]))
        else:
            check(clocks[m["id"]].endswith(" ms"), "clock of %s shown %r" % (m["id"], clocks[m["id"]]))
    loads = b.rows("#members", "member", ".load")
    for m in status["members"]:
        check(loads[m["id"]].startswith("%d running · %d queued" % (m["load"]["running"], m["load"]["queued"])),
              "load of %s shown %r, API %r" % (m["id"], loads[m["id"]], m["load"]))
    masters = b.rows("#volumes", "volume", ".master")
    want = {v["name"]: v["master"] or "none" for v in status["volumes"]}
    check(masters == want, "masters shown %r, API %r" % (masters, want))
    for name in ("withheld", "missed", "lost"):
        shown = b.text("#count-" + name)
        check(shown == str(status["scheduler"][name]), "%s shown %r, API %r" % (name, shown, status["scheduler"][name]))
    check(status["node"] in b.text("#node-id"), "the node id is not shown")
    return status


def check_entries(b, api):
    listed = api.get("/v1/volumes/main/entries?limit=1000")["entries"]
    shown = set(b.rows("#entries", "key", ".name").keys())
    check(shown == {e["key"] for e in listed}, "entries shown %r, API %r" % (shown, [e["key"] for e in listed]))
    handlers = b.rows("#entries", "key", ".handler")
    for e in listed:
        check(handlers[e["key"]] == e["handler"], "handler of %s shown %r" % (e["key"], handlers[e["key"]]))
    b.type("#search", "bill")
    wait_for("the search filter", lambda: set(b.rows("#entries", "key", ".name")) ==
             {e["key"] for e in listed if "bill" in e["key"]})
    check("2 of %d entries" % len(listed) in b.text("#entries-note"), "the note says %r" % b.text("#entries-note"))
    b.type("#search", "nightly")
    wait_for("the search filter", lambda: list(b.rows("#entries", "key", ".name")) == ["acme/caesium/schedule/nightly"])
    b.js("const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input'));")
    wait_for("the cleared filter", lambda: len(b.rows("#entries", "key", ".name")) == len(listed))
    # Another volume: its entries come from the node that replicates it (forwarded).
    b.js("const s = document.getElementById('volume-select'); s.value = 'solo';"
         "s.dispatchEvent(new Event('change'));")
    wait_for("the entries of volume solo", lambda: list(b.rows("#entries", "key", ".name")) ==
             ["ops/caesium/schedule/cleanup"])
    b.js("const s = document.getElementById('volume-select'); s.value = 'main';"
         "s.dispatchEvent(new Event('change'));")
    wait_for("the entries of volume main again", lambda: len(b.rows("#entries", "key", ".name")) == len(listed))


def open_entry(b, key):
    b.js("document.querySelector('#entries tbody tr[data-key=\"' + arguments[0] + '\"]').click();", key)
    wait_for("the entry panel of " + key, lambda: b.shown("#entry") and key.split("/")[-1] in b.text("#entry-title"))


def check_entry(b, api):
    # A cron entry: its next occurrences do not move while the test runs.
    open_entry(b, "acme/caesium/schedule/nightly")
    want = api.get(entry_path("main", "acme", "nightly") + "?upcoming=5")
    shown = json.loads(b.js("return document.getElementById('entry-definition').textContent;"))
    for field in ("cron", "tz", "handler", "semantics", "key", "created", "origin", "next"):
        check(shown.get(field) == want.get(field), "definition %s shown %r, API %r" % (field, shown.get(field),
                                                                                     want.get(field)))
    upcoming = b.js("return Array.from(document.querySelectorAll('#entry-upcoming li')).map(li => li.textContent);")
    check(upcoming == want["upcoming"], "upcoming shown %r, API %r" % (upcoming, want["upcoming"]))
    # The timer entry: three occurrences, all run by now; the timeline shows each.
    open_entry(b, "acme/caesium/schedule/report")
    history = api.get(entry_path("main", "acme", "report") + "/history?limit=50")["occurrences"]
    rows = b.js("return Array.from(document.querySelectorAll('#entry-history .occurrence')).map(r => ["
                "r.dataset.scheduled, r.dataset.outcome, r.querySelectorAll('.mark').length,"
                "r.querySelector('.who').textContent]);")
    want_rows = [[o["scheduled"], o["outcome"], len(o["attempts"])] for o in history]
    check([r[:3] for r in rows] == want_rows, "timeline shows %r, API %r" % (rows, want_rows))
    for row, o in zip(rows, history):
        for owner in o["owners"]:
            check(("claimed by " + owner["node"]) in row[3] or (", " + owner["node"] + " (") in row[3],
                  "the timeline row %r does not name the owner %s" % (row[3], owner["node"]))
        for a in o["attempts"]:
            check(a["worker"] in row[3], "the timeline row %r does not name the worker %s" % (row[3], a["worker"]))


def control_buttons(b):
    """The actions of the control buttons the page shows, in order."""
    return b.js("return Array.from(document.querySelectorAll('#controls button'))"
                ".filter(x => !x.closest('[hidden]')).map(x => x.dataset.control);")


def check_controls(b, api, scope):
    """Which controls a token sees: none for read, the one that applies for write and
    admin, and only for features /v1/status lists."""
    features = api.get("/v1/status")["features"]
    check("pause" in features, "/v1/status does not list the feature pause: %r" % features)
    check("trigger" in features, "/v1/status does not list the feature trigger: %r" % features)
    if scope == "read":
        check(not b.shown("#controls"), "operator controls show for a read token")
        check(b.find_all("#controls button") == [], "control buttons exist for a read token")
    else:
        paused = b.js("return caesiumUi.state.entry.paused;")
        want = ["resume"] if paused else ["pause", "trigger"]
        wait_for("the %s button" % want[0], lambda: control_buttons(b) == want)
    got = b.js("return caesiumUi.controlsFor(arguments[0], arguments[1]).map(c => c.action);", features, scope)
    check(got == ([] if scope == "read" else ["pause", "resume", "trigger"]), "controls for %s: %r" % (scope, got))
    got = b.js("return caesiumUi.controlsFor(arguments[0], arguments[1]).map(c => c.action);", [], scope)
    check(got == [], "controls for %s with no feature listed: %r" % (scope, got))


def page_paused(b, key):
    """(the entry view's paused state, the list's marker of key), as the page shows them."""
    return (b.js("return document.getElementById('entry-state').dataset.paused;"),
            b.rows("#entries", "key", ".paused").get(key))


def check_pause_resume(b, api, volume, entity, name):
    """Pause, then Resume, through the page's buttons; each time the page and the API
    agree.  A cron entry: paused it has no next occurrence, resumed it has one again."""
    key = "%s/caesium/schedule/%s" % (entity, name)
    path = entry_path(volume, entity, name)
    open_entry(b, key)
    check(api.get(path)["paused"] is False, "%s is paused before the test pauses it" % key)
    check(page_paused(b, key) == ("false", ""), "the page shows %r for %s before a pause" % (page_paused(b, key), key))
    wait_for("the Pause and Run now buttons", lambda: control_buttons(b) == ["pause", "trigger"])
    b.click("#controls button[data-control=pause]")
    wait_for("the page to show %s paused" % key,
             lambda: page_paused(b, key) == ("true", "paused") and control_buttons(b) == ["resume"])
    entry = api.get(path)
    check(entry["paused"] is True, "the API says %s paused = %r after Pause" % (key, entry["paused"]))
    check(entry["next"] is None, "a paused entry has next %r" % entry["next"])
    shown = json.loads(b.js("return document.getElementById('entry-definition').textContent;"))
    check(shown["paused"] is True and shown["next"] is None, "the definition shows %r after Pause" % shown)
    check(b.text("#control-error") == "", "an error shows after Pause: %r" % b.text("#control-error"))
    b.click("#controls button[data-control=resume]")
    wait_for("the page to show %s resumed" % key,
             lambda: page_paused(b, key) == ("false", "") and control_buttons(b) == ["pause", "trigger"])
    entry = api.get(path)
    check(entry["paused"] is False, "the API says %s paused = %r after Resume" % (key, entry["paused"]))
    check(entry["next"] is not None and entry.get("resumed"), "a resumed entry: next %r, resumed %r" % (
        entry["next"], entry.get("resumed")))
    check(("resumed " + entry["resumed"]) in b.text("#entry-state"), "the page shows %r" % b.text("#entry-state"))
    check(b.rows("#entries", "key", ".next")[key] == entry["next"], "the list's next of %s is not the API's" % key)
    # Run now: the entry gains a trigger, in the API and in the page's definition.
    b.click("#controls button[data-control=trigger]")
    wait_for("the API to list the trigger of %s" % key, lambda: len(api.get(path).get("triggers", [])) == 1)
    trigger = api.get(path)["triggers"][0]
    wait_for("the page's definition to show the trigger", lambda: json.loads(
        b.js("return document.getElementById('entry-definition').textContent;")).get("triggers") == [trigger])
    check(b.text("#control-error") == "", "an error shows after Run now: %r" % b.text("#control-error"))


def check_control_error(b, api, volume, entity, name):
    """A control the API refuses (the entry was deleted behind the page's back) shows
    the API's error in the page."""
    key = "%s/caesium/schedule/%s" % (entity, name)
    open_entry(b, key)
    wait_for("the Pause and Run now buttons", lambda: control_buttons(b) == ["pause", "trigger"])
    status, _ = http("DELETE", api.base + entry_path(volume, entity, name), token=ADMIN)
    check(status == 204, "DELETE of %s: %s" % (key, status))
    status, answer = http("POST", api.base + entry_path(volume, entity, name) + "/pause", {}, token=ADMIN)
    check(status == 404 and answer.get("error"), "pause of a deleted entry: %s %r" % (status, answer))
    b.click("#controls button[data-control=pause]")
    wait_for("the API's error in the page", lambda: answer["error"] in b.text("#control-error"))
    check(b.text("#control-error").startswith("Pause failed: 404"), "the page says %r" % b.text("#control-error"))


def run(args, procs, tmp):
    binary = os.path.abspath(args.bin)
    key = os.path.join(tmp, "cluster.key")
    subprocess.run([binary, "keygen", "--out", key], check=True, stdout=subprocess.DEVNULL, timeout=30)
    tokens = os.path.join(tmp, "tokens.toml")
    with open(tokens, "w") as f:
        f.write('[[token]]\nname = "ops"\ntoken = "%s"\nscope = "admin"\n\n'
                '[[token]]\nname = "dash"\ntoken = "%s"\nscope = "read"\n' % (ADMIN, READER))
    ports = free_ports(6)
    n1 = write_node(tmp, "n1", ports[0:3], [ports[4]], key, tokens)
    n2 = write_node(tmp, "n2", ports[3:6], [ports[1]], key, tokens)
    for node, conf in (("n1", n1), ("n2", n2)):
        procs.start([binary, "node", "--config", conf], os.path.join(tmp, node + ".log"))
    api = Api("http://127.0.0.1:%d" % ports[2])
    wait_for("both nodes alive with masters", lambda: (
        lambda s: all(m["state"] == "alive" for m in s["members"]) and len(s["members"]) == 2 and
        all(v["master"] for v in s["volumes"]))(api.get("/v1/status")), limit_s=30)
    for (volume, entity, name), body in ENTRIES.items():
        api.put(entry_path(volume, entity, name), body)
    wait_for("the three runs of acme/report", lambda: [
        o["outcome"] for o in api.get(entry_path("main", "acme", "report") + "/history")["occurrences"]] ==
        ["completed"] * 3, limit_s=30)

    driver_port = free_ports(1)[0]
    procs.start([args.chromedriver, "--port=%d" % driver_port], os.path.join(tmp, "chromedriver.log"))
    wait_for("chromedriver", lambda: http("GET", "http://127.0.0.1:%d/status" % driver_port)[0] == 200)
    b = Browser(driver_port, args.chromium, os.path.join(tmp, "profile"))
    try:
        ui = api.base + "/ui/"
        check_login(b, ui)
        log_in(b, ui, ADMIN, "token ops (admin)")
        check_status(b, api)
        check_entries(b, api)
        check_entry(b, api)
        check_controls(b, api, "admin")
        size = b.screenshot(args.out)
        print("screenshot: %s (%d bytes)" % (args.out, size))
        check_pause_resume(b, api, "main", "billing", "invoice")
        check_control_error(b, api, "main", "billing", "reminder")
        # A reload keeps the session's token; logging out forgets it.
        b.go(ui)
        wait_for("the dashboard after a reload", lambda: b.shown("#dashboard") and "(admin)" in b.text("#whoami"))
        b.click("#logout")
        wait_for("the login form after logging out", lambda: b.shown("#login"))
        check(b.js("return sessionStorage.getItem('caesium.token');") is None, "logging out kept the token")
        log_in(b, ui, READER, "token dash (read)")
        check_status(b, api)
        open_entry(b, "acme/caesium/schedule/report")
        check_controls(b, api, "read")
        shown = page_paused(b, "acme/caesium/schedule/report")
        check(shown[0] == "false", "the read token's page shows report as %r" % (shown,))
    finally:
        b.close()


def main():
    global DEADLINE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="the caesium binary")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--out", required=True, help="where to save the screenshot (PNG)")
    p.add_argument("--timeout", type=float, default=150, help="seconds for the whole run")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = p.parse_args()
    DEADLINE = time.monotonic() + args.timeout
    for tool in (args.chromedriver, args.chromium):
        if not os.access(tool, os.X_OK):
            if os.environ.get("CI"):
                print("FAILED: %s is missing (bash .ci/install-deps installs chromium and chromium-driver)" % tool)
                return 1
            print("skipped: %s is missing (apt-get install chromium chromium-driver)" % tool)
            return 77
    tmp = tempfile.mkdtemp(prefix="caesium-ui-")
    procs = Processes()
    try:
        run(args, procs, tmp)
        print("ui dashboard: 1 passed, 0 failed")
        return 0
    except Failure as e:
        print("FAILED: %s" % e)
        for name in ("n1.log", "n2.log", "chromedriver.log"):
            path = os.path.join(tmp, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    print("---- %s (last lines)\n%s" % (name, "".join(f.readlines()[-15:])))
        return 1
    finally:
        procs.stop_all()
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
