// The Caesium dashboard: plain JavaScript, no libraries, nothing fetched but this
// node's /v1 API.  Every value from the API reaches the page as text (textContent),
// never as markup.
//
// The token is kept in sessionStorage (this tab only, gone when it closes) and sent as
// a bearer token.  What the page shows:
//   status (every 5 s): this node, counts, members, volumes and their masters;
//   entries of the chosen volume (up to kMaxEntries), filtered by the search box;
//   an entry: whether it is paused, its definition, next occurrences (?upcoming=N), and
//   its history drawn as a timeline of occurrences and attempts.
// Operator controls (Pause, Resume, Run now) appear only for a feature the API lists in
// /v1/status "features" and a token whose scope allows it (controlsFor below), and only
// those that apply to the entry as it stands (Run now: not while paused).
"use strict";

(function () {
  const kTokenKey = "caesium.token";
  const kRefreshMs = 5000;
  const kPageSize = 1000;
  const kMaxEntries = 5000;
  const kUpcoming = 5;
  const kHistory = 50;
  const kScopeRank = { read: 1, write: 2, admin: 3 };
  // Controls in the order they are shown.  Each is POST <entry>/<action>; it needs its
  // API feature (the feature "pause" covers both routes) and a scope, and applies to an
  // entry in some states only, so that Pause and Resume never show together.
  const kControls = [
    { action: "pause", feature: "pause", label: "Pause", scope: "write", applies: (e) => !e.paused },
    { action: "resume", feature: "pause", label: "Resume", scope: "write", applies: (e) => !!e.paused },
    { action: "trigger", feature: "trigger", label: "Run now", scope: "write", applies: (e) => !e.paused },
  ];

  const state = {
    token: null,
    whoami: null,
    status: null,
    volume: null,
    entries: [],
    entriesTruncated: false,
    selected: null, // {volume, entity, name}
    entry: null, // the selected entry as last read (or as a control's answer left it)
    controlBusy: false, // a control's request is in flight: its buttons are disabled
    timer: null,
  };

  const $ = (id) => document.getElementById(id);

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (className) e.className = className;
    return e;
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  function badge(text, kind) {
    return el("span", text, "badge " + kind + "-" + String(text).replace(/[^a-z_]/g, ""));
  }

  // The controls a token may see, given the node's features and the token's scope.
  function controlsFor(features, scope) {
    const rank = kScopeRank[scope] || 0;
    return kControls.filter((c) => (features || []).includes(c.feature) && rank >= kScopeRank[c.scope]);
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, { token = state.token, method = "GET" } = {}) {
    let response;
    try {
      response = await fetch(path, { method, headers: { Authorization: "Bearer " + token }, cache: "no-store" });
    } catch (e) {
      // fetch refuses header values with control characters before sending anything.
      throw new ApiError(0, e instanceof TypeError && /header/i.test(e.message)
        ? "the token holds characters a header cannot carry"
        : "the node did not answer: " + e.message);
    }
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;
    }
    if (!response.ok) {
      const why = body && body.error ? body.error : response.statusText;
      throw new ApiError(response.status, response.status + ": " + why);
    }
    return body;
  }

  function entryPath(sel) {
    const enc = encodeURIComponent;
    return "/v1/volumes/" + enc(sel.volume) + "/entities/" + enc(sel.entity) + "/schedule/" + enc(sel.name);
  }

  // ---- login -------------------------------------------------------------------

  function showLogin(message) {
    clearInterval(state.timer);
    state.timer = null;
    state.token = null;
    state.whoami = null;
    state.selected = null;
    state.entry = null;
    renderControls(); // none: the next token may not be allowed them
    $("entry").hidden = true;
    sessionStorage.removeItem(kTokenKey);
    $("dashboard").hidden = true;
    $("logout").hidden = true;
    $("whoami").textContent = "";
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("token-input").value = "";
    $("token-input").focus();
  }

  async function logIn(token) {
    const who = await api("/v1/whoami", { token });
    state.token = token;
    state.whoami = who;
    sessionStorage.setItem(kTokenKey, token);
    $("login").hidden = true;
    $("dashboard").hidden = false;
    $("logout").hidden = false;
    const volumes = who.volumes ? " · volumes " + who.volumes.join(", ") : "";
    $("whoami").textContent = "token " + who.token + " (" + who.scope + ")" + volumes;
    $("node-id").textContent = "node " + who.node;
    await refreshStatus();
    await loadEntries();
    state.timer = setInterval(() => refreshStatus().catch(onError), kRefreshMs);
    await openFromHash();
  }

  function onError(e) {
    if (e instanceof ApiError && e.status === 401) {
      showLogin("The token is no longer accepted (" + e.message + ")");
      return;
    }
    $("load-error").textContent = e.message;
  }

  // ---- status: counts, members, volumes -----------------------------------------

  async function refreshStatus() {
    const s = await api("/v1/status");
    state.status = s;
    $("load-error").textContent = "";
    renderCounts(s.scheduler || {});
    renderMembers(s.members || []);
    renderVolumes(s.volumes || []);
    renderVolumeChoice(s.volumes || []);
    if (state.selected) renderControls();
  }

  function renderCounts(sch) {
    for (const name of ["withheld", "missed", "lost", "completed", "failed", "due"]) {
      const v = sch[name] === undefined ? "–" : sch[name];
      $("count-" + name).textContent = v;
      const alarm = ["withheld", "missed", "lost", "failed"].includes(name) && v > 0;
      $("count-" + name).parentElement.classList.toggle("alarm", alarm);
    }
  }

  // Replaces a table's rows: one per item, row.dataset[keyName] = key(item), and a cell
  // per [class, content] of cells(item) (content: text, or an element to put in).
  function fillTable(id, items, keyName, key, cells) {
    const body = $(id).tBodies[0];
    body.replaceChildren(...items.map((item) => {
      const tr = el("tr");
      tr.dataset[keyName] = key(item);
      for (const [cls, content] of cells(item)) {
        const td = el("td", content instanceof Node ? null : content, cls);
        if (content instanceof Node) td.append(content);
        tr.append(td);
      }
      return tr;
    }));
  }

  function orNone(v, none) {
    return v === null || v === undefined ? none : v;
  }

  function renderMembers(members) {
    fillTable("members", members, "member", (m) => m.id, (m) => {
      const load = m.load || {};
      const cpu = typeof load.cpu === "number" ? " · cpu " + load.cpu.toFixed(2) : "";
      const ahead = orNone(m.clock_ahead_ms, null);
      return [["id", m.id], ["state", badge(m.state, "state")],
        ["load", (load.running || 0) + " running · " + (load.queued || 0) + " queued" + cpu],
        ["clock", ahead === null ? "–" : ahead + " ms"], ["api", m.api_addr || "–"]];
    });
  }

  function renderVolumes(volumes) {
    fillTable("volumes", volumes, "volume", (v) => v.name, (v) => [
      ["name", v.name], ["master", orNone(v.master, "none")], ["replicas", (v.replicas || []).join(", ")],
      ["records", v.replica ? v.records : "not a replica"]]);
  }

  function renderVolumeChoice(volumes) {
    const select = $("volume-select");
    const names = volumes.map((v) => v.name);
    const current = Array.from(select.options).map((o) => o.value);
    if (names.join("\n") === current.join("\n")) return;
    select.replaceChildren(...names.map((n) => {
      const o = el("option", n);
      o.value = n;
      return o;
    }));
    if (!names.includes(state.volume)) state.volume = names.length ? names[0] : null;
    select.value = state.volume || "";
  }

  // ---- entries --------------------------------------------------------------------

  async function loadEntries() {
    state.entries = [];
    state.entriesTruncated = false;
    if (!state.volume) {
      renderEntries();
      return;
    }
    let after = null;
    while (state.entries.length < kMaxEntries) {
      let path = "/v1/volumes/" + encodeURIComponent(state.volume) + "/entries?limit=" + kPageSize;
      if (after) path += "&after=" + encodeURIComponent(after);
      const page = await api(path);
      state.entries.push(...page.entries);
      after = page.next;
      if (!after) break;
    }
    state.entriesTruncated = after !== null && after !== undefined;
    renderEntries();
  }

  function scheduleText(e) {
    if (e.cron) return e.cron + (e.tz && e.tz !== "UTC" ? " (" + e.tz + ")" : "");
    const t = e.timer || {};
    if (t.at) return "at " + t.at;
    if (t.after) return "after " + t.after;
    if (t.interval) {
      if (t.count) return "every " + t.interval + " × " + t.count;
      return "every " + t.interval + (t.repeat_for ? " for " + t.repeat_for : "");
    }
    return "–";
  }

  function matches(e, query) {
    if (!query) return true;
    const q = query.toLowerCase();
    const fields = [e.entity, e.name, e.handler, e.key, e.paused ? "paused" : ""];
    return fields.some((s) => String(s || "").toLowerCase().includes(q));
  }

  function renderEntries() {
    const body = $("entries").tBodies[0];
    body.replaceChildren();
    const query = $("search").value.trim();
    const shown = state.entries.filter((e) => matches(e, query));
    for (const e of shown) {
      const tr = el("tr", null, "clickable");
      tr.dataset.key = e.key;
      tr.tabIndex = 0;
      tr.append(el("td", e.entity, "entity"), el("td", e.name, "name"), el("td", scheduleText(e), "schedule"),
        el("td", e.handler, "handler"), el("td", e.semantics, "semantics"), el("td", e.next || "none", "next"));
      const mark = el("td", null, "paused");
      if (e.paused) mark.append(badge("paused", "entry"));
      tr.append(mark);
      const sel = state.selected;
      if (sel && sel.volume === state.volume && sel.entity === e.entity && sel.name === e.name) {
        tr.classList.add("selected");
      }
      const open = () => openEntry({ volume: state.volume, entity: e.entity, name: e.name }).catch(onError);
      tr.addEventListener("click", open);
      tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") open(); });
      body.append(tr);
    }
    const more = state.entriesTruncated ? " (the first " + state.entries.length + "; the volume has more)" : "";
    $("entries-note").textContent = shown.length + " of " + state.entries.length + " entries" + more;
  }

  // ---- one entry --------------------------------------------------------------------

  async function openEntry(sel) {
    state.selected = sel;
    $("control-error").textContent = "";
    const hash = "#/entry/" + [sel.volume, sel.entity, sel.name].map(encodeURIComponent).join("/");
    if (location.hash !== hash) history.replaceState(null, "", hash);
    const entry = await api(entryPath(sel) + "?upcoming=" + kUpcoming);
    let hist = { occurrences: [] };
    try {
      hist = await api(entryPath(sel) + "/history?limit=" + kHistory);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
    }
    state.entry = entry;
    $("entry").hidden = false;
    $("entry-title").textContent = sel.volume + " / " + sel.entity + " / " + sel.name;
    renderEntryState(entry);
    const definition = Object.assign({}, entry);
    delete definition.upcoming;
    $("entry-definition").textContent = JSON.stringify(definition, null, 2);
    const upcoming = $("entry-upcoming");
    upcoming.replaceChildren(...(entry.upcoming || []).map((t) => el("li", t)));
    if (!(entry.upcoming || []).length) upcoming.append(el("li", "none: the entry has no more occurrences", "muted"));
    renderHistory(hist.occurrences || []);
    renderControls();
    renderEntries();
  }

  // Paused or active, in words; the element's data-paused mirrors the entry's field.
  function renderEntryState(entry) {
    const box = $("entry-state");
    box.dataset.paused = String(!!entry.paused);
    if (entry.paused) {
      box.replaceChildren(badge("paused", "entry"), " nothing of it runs until it is resumed");
    } else {
      box.replaceChildren(badge("active", "entry"), entry.resumed ? " resumed " + entry.resumed : "");
    }
  }

  function lateMs(attempt, scheduledMs) {
    const t = Date.parse(attempt.accepted || "");
    return Number.isNaN(t) ? null : Math.max(0, t - scheduledMs);
  }

  function renderHistory(occurrences) {
    const box = $("entry-history");
    box.replaceChildren();
    if (!occurrences.length) {
      box.append(el("p", "No occurrence recorded yet (records are kept for the occurrence retention).", "muted"));
      return;
    }
    // One scale for every row, so that rows compare: the latest acceptance, at least 1 s.
    let scale = 1000;
    for (const o of occurrences) {
      for (const a of o.attempts || []) scale = Math.max(scale, lateMs(a, o.scheduled_ms) || 0);
    }
    for (const o of occurrences) {
      const row = el("div", null, "occurrence");
      row.dataset.scheduled = o.scheduled;
      row.dataset.outcome = o.outcome;
      row.append(el("span", o.scheduled, "when"));
      const oc = el("span");
      oc.append(badge(o.outcome, "outcome"));
      row.append(oc);
      const track = el("div", null, "track");
      for (const a of o.attempts || []) {
        const late = lateMs(a, o.scheduled_ms);
        const mark = el("span", "#" + a.attempt + " " + a.worker, "mark attempt-" + a.state);
        mark.style.left = (late === null ? 0 : (late / scale) * 80) + "%";
        mark.title = "attempt " + a.attempt + " on " + a.worker + ": " + a.state +
          (late === null ? "" : ", accepted " + late + " ms after the scheduled instant") +
          (a.possible_duplicate ? ", possible duplicate" : "") + (a.detail ? " (" + a.detail + ")" : "");
        track.append(mark);
      }
      row.append(track);
      const owners = (o.owners || []).map((w) => w.node + " (" + w.path + (w.reason ? ", " + w.reason : "") + ")");
      const workers = (o.attempts || []).map((a) => {
        const late = lateMs(a, o.scheduled_ms);
        return a.worker + (late === null ? "" : " +" + late + " ms");
      });
      const who = "claimed by " + (owners.length ? owners.join(", ") : "nobody yet") +
        (workers.length ? " · ran on " + workers.join(", ") : "") +
        " · " + plural((o.attempts || []).length, "attempt") + (o.duplicates ? " · " + plural(o.duplicates, "duplicate") : "");
      row.append(el("span", who, "who"));
      box.append(row);
    }
  }

  // Called on every status refresh too: the buttons are rebuilt only when what they
  // would be changes, so that a refresh never swaps a button from under a click.
  function renderControls() {
    const box = $("controls");
    const features = (state.status && state.status.features) || [];
    const entry = state.entry;
    const allowed = entry ? controlsFor(features, state.whoami ? state.whoami.scope : "") : [];
    const shown = allowed.filter((c) => c.applies(entry));
    const signature = shown.map((c) => c.action).join(" ") + (state.controlBusy ? " busy" : "");
    if (box.dataset.signature === signature) return;
    box.dataset.signature = signature;
    box.replaceChildren(...shown.map((c) => {
      const b = el("button", c.label);
      b.type = "button";
      b.dataset.control = c.action;
      b.disabled = state.controlBusy;
      b.addEventListener("click", () => control(c).catch(onError));
      return b;
    }));
    box.hidden = shown.length === 0;
  }

  // POST <entry>/<action>; a refusal shows under the buttons with the API's own words.
  // The answer is the entry as it now stands (a trigger's answer holds it as "entry"),
  // which the list takes at once; the entry view is then read again (its next
  // occurrences moved).
  async function control(c) {
    const sel = state.selected;
    $("control-error").textContent = "";
    state.controlBusy = true;
    renderControls();
    let entry;
    try {
      const answer = await api(entryPath(sel) + "/" + c.action, { method: "POST" });
      entry = c.action === "trigger" ? answer.entry : answer;
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) throw e;
      $("control-error").textContent = c.label + " failed: " + e.message;
      return;
    } finally {
      state.controlBusy = false;
      renderControls();
    }
    if (sel.volume === state.volume) {
      const i = state.entries.findIndex((e) => e.entity === sel.entity && e.name === sel.name);
      if (i >= 0) state.entries[i] = entry;
    }
    await openEntry(sel);
  }

  async function openFromHash() {
    const m = /^#\/entry\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(location.hash);
    if (!m) return;
    const [volume, entity, name] = m.slice(1).map(decodeURIComponent);
    await openEntry({ volume, entity, name });
  }

  // ---- wiring -------------------------------------------------------------------------

  function start() {
    $("login-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = $("token-input").value.trim();
      $("login-error").textContent = "";
      logIn(token).catch((e) => showLogin(e.status === 401 ? "That token is not accepted by this node." : e.message));
    });
    $("logout").addEventListener("click", () => showLogin(""));
    $("volume-select").addEventListener("change", () => {
      state.volume = $("volume-select").value;
      loadEntries().catch(onError);
    });
    $("search").addEventListener("input", renderEntries);
    const saved = sessionStorage.getItem(kTokenKey);
    if (saved) {
      logIn(saved).catch((e) => showLogin(e.status === 401 ? "The saved token is no longer accepted." : e.message));
    } else {
      showLogin("");
    }
  }

  window.caesiumUi = { controlsFor, state };
  document.addEventListener("DOMContentLoaded", start);
})();
