// antidrift view: a small single-page app over the viewer's JSON API.
// Every text from the data is set as text, never parsed as HTML.
"use strict";

const app = document.getElementById("app");
// STATIC is the data of a static export (antidrift view --export): the
// pages then read data/*.js instead of the API.
const STATIC = window.ANTIDRIFT_STATIC || null;
let current = null; // the trajectory page's state, for keyboard navigation

// bidi matches the Unicode bidirectional controls (embeddings, overrides,
// isolates, marks): shown raw they reorder what follows, so an id could
// read as another; every text shown spells them out as \u202E and so on.
const bidi = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
function visible(s) {
  return String(s).replace(bidi, (c) => "\\u" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0"));
}

// h builds an element: h("a", {href: "#"}, "text", child, ...). Text and
// titles are shown through visible; other attributes (links, data-*) keep
// the bytes they address.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "title") el.setAttribute(k, visible(v));
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(visible(kid)));
  }
  return el;
}

async function api(path) {
  if (STATIC) return staticApi(path);
  const r = await fetch(path);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function fail(err) {
  app.replaceChildren(h("p", { class: "error", id: "error" }, String(err.message || err)));
}

// route parses location.hash: "#/path/parts?k=v".
function route() {
  const raw = location.hash.replace(/^#/, "") || "/runs";
  const [path, qs] = raw.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(qs || "") };
}

function go(path, params) {
  const qs = params && params.toString();
  location.hash = "#" + path + (qs ? "?" + qs : "");
}

// isSim: the policy is one of antidrift's simulated policies (directly or
// served by sim-server), not a language model.
const isSim = (policy) => /(^|:)sim:/.test(policy || "");
const pct = (x) => (x * 100).toFixed(1) + "%";
const pretty = (s) => {
  if (typeof s !== "string") return JSON.stringify(s, null, 2);
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch { return s; }
};

function setNav(name) {
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.nav === name);
}

// liveTimer re-checks a list while runs are being written; any render
// cancels it.
let liveTimer = null;

async function render() {
  const { parts, params } = route();
  current = null;
  clearTimeout(liveTimer);
  try {
    switch (parts[0]) {
      case "t": setNav("runs"); return await renderTrajectory(parts[1], params);
      case "compare": setNav("runs"); return await renderCompare(parts[1], params);
      case "tables": setNav("tables"); return await renderTables();
      case "table": setNav("tables"); return await renderTable(parts[1], params);
      case "row": setNav("tables"); return await renderRow(parts[1], parts[2]);
      case "reports": setNav("reports"); return await renderReports();
      default: setNav("runs"); return await renderRuns(params);
    }
  } catch (err) { fail(err); }
}

// ---- trajectory list ----

const FILTERS = ["checkpoint", "framework", "scenario", "domain", "status", "type", "kind", "provision"];
const COLUMNS = [
  ["checkpoint", "checkpoint"], ["framework", "framework"], ["scenario", "scenario_id"], ["domain", "domain"],
  ["rollout", "rollout"], ["status", "status"], ["success", "success"], ["drift", "drift"], ["calls", "calls"], ["tokens", "tokens"],
];

function listParams(params) {
  const p = new URLSearchParams();
  for (const k of ["run", ...FILTERS, "success", "drift", "q", "sort"]) if (params.get(k)) p.set(k, params.get(k));
  return p;
}

// runCell is a run folder's short name in a table cell; its title holds
// the full label (name, folder, start, distinguishing settings).
function runCell(runs, i) {
  const r = runs[i];
  if (!r) return h("td", {}, "");
  return h("td", { class: "run", title: r.label },
    shortRun(r), h("div", { class: "muted small" }, [r.start, ...r.distinct].filter(Boolean).join(" · ")));
}

// shortRun is a run's name and the last two parts of its folder.
function shortRun(r) {
  return (r.name ? r.name + " · " : "") + r.path.split(/[\\/]/).filter(Boolean).slice(-2).join("/");
}

function stateBadge(state) {
  return h("span", { class: "pill state-" + state, title: {
    live: "being written: the list follows it",
    finished: "every planned record is written",
    stopped: "short of its plan, and no process is writing it",
    indexing: "being indexed",
  }[state] }, state === "live" ? "● live" : state);
}

async function renderRuns(params) {
  const p = listParams(params);
  p.set("page", params.get("page") || "1");
  p.set("size", params.get("size") || "50");
  const res = await api("/api/trajectories?" + p.toString());
  showProgress(res.progress);

  const update = (k, v) => {
    const next = listParams(params);
    if (v) next.set(k, v); else next.delete(k);
    go("/runs", next);
  };
  const sel = (name, values) => h("label", {}, name,
    h("select", { id: "filter-" + name, onchange: (e) => update(name, e.target.value) },
      h("option", { value: "" }, "all"),
      values.map((v) => h("option", { value: v, selected: params.get(name) === v }, v))));
  const bool = (name) => h("label", {}, name,
    h("select", { id: "filter-" + name, onchange: (e) => update(name, e.target.value) },
      ["", "true", "false"].map((v) => h("option", { value: v, selected: (params.get(name) || "") === v }, v || "all"))));
  const search = h("input", { id: "search", type: "search", placeholder: "search messages  (/)", value: params.get("q") || "", size: 28 });
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") update("q", search.value.trim()); });

  const runSel = h("label", {}, "run",
    h("select", { id: "filter-run", onchange: (e) => update("run", e.target.value) },
      h("option", { value: "" }, "all"),
      res.runs.map((r, i) => h("option", { value: String(i), selected: params.get("run") === String(i) }, r.label))));
  const filters = h("div", { class: "filters" },
    runSel, FILTERS.map((f) => sel(f, res.facets[f] || [])), bool("success"), bool("drift"),
    h("label", {}, "text", search),
    h("button", { type: "button", onclick: () => go("/runs") }, "clear"));

  const sort = params.get("sort") || "";
  const head = h("tr", {}, [["run", "run"], ...COLUMNS].map(([key, label]) => {
    const mark = sort === key ? " ▲" : sort === "-" + key ? " ▼" : "";
    return h("th", { "data-sort": key, onclick: () => update("sort", sort === key ? "-" + key : key) }, label + mark);
  }), h("th", {}, "drift types"), h("th", {}, "kinds"));
  const here = listParams(params);
  const rows = res.rows.map((r) => h("tr", { "data-id": r.traj_id, onclick: () => go("/t/" + encodeURIComponent(r.traj_id), here) },
    runCell(res.runs, r.run_dir),
    h("td", {}, r.checkpoint, isSim(r.policy) ? h("span", { class: "muted", title: "a simulated policy, not a language model" }, " (simulated)") : null), h("td", {}, r.framework),
    h("td", {}, h("a", { href: "#/compare/" + encodeURIComponent(r.scenario_id), onclick: (e) => e.stopPropagation(), title: "compare checkpoints" }, r.scenario_id)),
    h("td", {}, r.domain), h("td", {}, r.rollout), h("td", {}, r.status),
    h("td", {}, h("span", { class: "pill " + (r.success ? "ok" : "") }, r.success ? "success" : "fail")),
    h("td", {}, r.drift ? h("span", { class: "pill drift" }, "drift") : ""),
    h("td", {}, r.calls), h("td", {}, r.tokens),
    h("td", {}, r.drift_types.map((t) => h("span", { class: "pill drift" }, t))),
    h("td", {}, r.violation_kinds.map((t) => h("span", { class: "pill" }, t)))));

  const page = res.page, pages = Math.max(1, Math.ceil(res.total / res.size));
  const toPage = (n) => { const q = listParams(params); q.set("page", n); go("/runs", q); };
  const pager = h("div", { class: "pager" },
    h("button", { type: "button", disabled: page <= 1, onclick: () => toPage(page - 1) }, "‹ prev"),
    h("span", { id: "count" }, `${res.total} trajectories · page ${page} of ${pages}`),
    h("button", { type: "button", disabled: page >= pages, onclick: () => toPage(page + 1) }, "next ›"));

  const groups = h("table", { class: "grid", id: "groups" },
    h("thead", {}, h("tr", {}, ["run", "checkpoint", "framework", "N scored", "listed", "TSR", "DR", "CSR"].map((c) => h("th", {}, c)))),
    h("tbody", {}, res.groups.map((g) => h("tr", {}, runCell(res.runs, g.run_dir), h("td", {}, g.checkpoint), h("td", {}, g.framework), h("td", {}, g.n), h("td", {}, g.listed),
      h("td", {}, pct(g.tsr)), h("td", {}, pct(g.dr)), h("td", {}, pct(g.csr))))));

  app.replaceChildren(filters,
    h("details", { open: true }, h("summary", {}, "TSR / DR / CSR of the current filter (scored statuses only, as antidrift score counts them)"), groups),
    pager,
    h("table", { class: "grid", id: "traj-table" }, h("thead", {}, head), h("tbody", {}, rows)),
    pager.cloneNode(true));
  // cloneNode drops listeners: wire the second pager's buttons again.
  const second = app.lastChild.querySelectorAll("button");
  second[0].onclick = () => toPage(page - 1);
  second[1].onclick = () => toPage(page + 1);
  if (!res.progress.done) liveTimer = setTimeout(() => { if (route().parts[0] !== "t") render(); }, 700);
  else if (res.progress.live) follow(p, res);
}

// follow re-reads the list while a run is being written and redraws it
// when it changed, unless the reader is typing or choosing a filter.
function follow(p, shown) {
  const where = location.hash;
  liveTimer = setTimeout(async () => {
    if (location.hash !== where) return;
    let res;
    try { res = await api("/api/trajectories?" + p.toString()); } catch { return follow(p, shown); }
    if (location.hash !== where) return;
    const busy = document.activeElement && document.activeElement.matches("input, select");
    const changed = res.total !== shown.total || res.progress.records !== shown.progress.records ||
      res.progress.live !== shown.progress.live || res.runs.some((r, i) => !shown.runs[i] || r.state !== shown.runs[i].state);
    if (changed && !busy) return render();
    showProgress(res.progress);
    follow(p, busy ? shown : res);
  }, 1000);
}

function showProgress(p) {
  const el = document.getElementById("progress");
  const live = document.getElementById("live");
  if (!p) return;
  live.classList.toggle("hidden", !p.live);
  live.textContent = p.live ? `● live: ${p.live} run${p.live > 1 ? "s" : ""} being written` : "";
  if (p.static) {
    el.textContent = `static export: ${p.records} trajectories` + (STATIC.selected > p.records ? ` (the first ${p.records} of ${STATIC.selected} selected)` : "") +
      (Object.keys(STATIC.filter).length ? " · exported with " + new URLSearchParams(STATIC.filter).toString() : "");
  } else if (p.error) el.textContent = "indexing failed: " + p.error;
  else if (!p.done) el.textContent = `indexing… ${p.records} records (${pct(p.total_bytes ? p.bytes / p.total_bytes : 1)})`;
  else {
    const runs = [p.finished ? `${p.finished} finished` : "", p.stopped ? `${p.stopped} stopped short of the plan` : ""].filter(Boolean).join(", ");
    el.textContent = `${p.records} trajectories` + (p.duplicates ? ` (${p.duplicates} duplicates dropped)` : "") + (runs ? ` · runs: ${runs}` : "");
  }
}

// ---- one trajectory ----

function matchText(m) {
  const bits = [m.drift + " drift"];
  if (m.kind) bits.push(m.kind);
  if (m.provisions && m.provisions.length) bits.push(m.provisions.join(", "));
  bits.push(m.annotated ? "annotated" : "derived" + (m.rule ? " (" + m.rule + ")" : ""));
  if (m.resource) bits.push("resource " + m.resource);
  if (m.detail) bits.push(m.detail);
  if (m.counted === false) bits.push("not counted by type (another match of this call counts)");
  return "⚠ " + bits.join(" · ");
}

// highlight returns text as nodes with every lure marked.
function highlight(text, lures) {
  const out = [];
  let rest = text;
  while (rest.length) {
    let best = -1, len = 0;
    for (const l of lures) {
      for (const form of [l, JSON.stringify(l).slice(1, -1)]) {
        const i = rest.indexOf(form);
        if (i >= 0 && (best < 0 || i < best)) { best = i; len = form.length; }
      }
    }
    if (best < 0) { out.push(rest); break; }
    out.push(rest.slice(0, best), h("mark", { class: "lure", title: "lure (the scenario's trigger)" }, rest.slice(best, best + len)));
    rest = rest.slice(best + len);
  }
  return out;
}

function renderMessages(msgs, ctx) {
  return msgs.map((m, i) => {
    const idx = i;
    const step = ctx.steps[idx];
    const head = [h("span", {}, m.role + (m.name ? " · " + m.name : ""))];
    if (step) {
      if (step.finish_reason) head.push(h("span", { class: "finish" }, "finish: " + step.finish_reason));
      if (step.usage) head.push(h("span", {}, `tokens ${step.usage.prompt_tokens}/${step.usage.completion_tokens}`));
      if (step.visible_tools) head.push(h("details", { class: "visible" }, h("summary", {}, `${step.visible_tools.length} tools visible`), step.visible_tools.join(", ")));
    }
    const reasoning = m.reasoning || m.reasoning_content;
    const body = [];
    // dd: this message's word diff against the other side of a pair.
    const dd = ctx.diff && ctx.diff.at[idx];
    if (reasoning) body.push(h("details", { class: "reasoning" }, h("summary", {}, "reasoning"), h("pre", {}, reasoning)));
    if (dd && dd.content.some((o) => o.op !== "=")) body.push(h("pre", {}, diffNodes(dd.content, ctx.diff.own)));
    else if (m.content) body.push(h("pre", {}, m.role === "tool" ? highlight(pretty(m.content), ctx.luresAt[idx] || []) : m.content));
    let drifting = false;
    (m.tool_calls || []).forEach((tc, j) => {
      const mk = ctx.markByID[tc.id];
      if (mk) drifting = true;
      const cd = dd && dd.calls[j];
      body.push(h("div", { class: "call" + (mk ? " drift-call" : "") + (cd && cd.arguments.concat(cd.name).some((o) => o.op !== "=") ? " diff-call" : ""), "data-call": tc.id },
        h("div", {}, "→ ", h("b", {}, cd ? diffNodes(cd.name, ctx.diff.own) : tc.function.name)),
        h("pre", {}, cd ? diffNodes(cd.arguments, ctx.diff.own) : pretty(tc.function.parsed_arguments || tc.function.arguments)),
        mk ? mk.matches.map((x) => h("div", { class: "drift-mark" }, matchText(x))) : null));
    });
    for (const mk of ctx.answerMarks.filter((x) => x.message === idx)) {
      drifting = true;
      body.push(mk.matches.map((x) => h("div", { class: "drift-mark" }, matchText(x))));
    }
    const differs = dd && !dd.same;
    if (differs && ctx.diff.first === idx) head.push(h("span", { class: "diverge-here" }, "⇄ the sides differ from here"));
    return h("div", { class: `msg ${m.role}` + (drifting ? " drifting" : "") + (differs ? " differs" : ""), "data-index": idx }, h("div", { class: "role" }, head), body);
  });
}

// diffNodes shows one side of a word diff: the words only this side has
// are marked.
function diffNodes(ops, own) {
  return ops.filter((o) => o.op === "=" || o.op === own).map((o) => o.op === "=" ? o.text
    : h("mark", { class: "diff " + (own === "-" ? "diff-chosen" : "diff-rejected"), title: own === "-" ? "only the chosen side has this" : "only the rejected side has this" }, o.text));
}

async function renderTrajectory(id, params) {
  const here = listParams(params);
  const d = await api("/api/trajectory/" + encodeURIComponent(id) + "?" + here.toString());
  const rec = d.record;
  const stripped = params.get("stripped") === "1";

  const steps = {};
  for (const st of rec.steps || []) steps[st.turn] = st;
  const markByID = {};
  for (const mk of d.marks) if (mk.call_id) markByID[mk.call_id] = mk;
  const luresAt = {};
  for (const l of d.lures) (luresAt[l.message] = luresAt[l.message] || []).push(l.text);
  const ctx = { steps, markByID, luresAt, answerMarks: d.marks.filter((m) => m.call < 0) };
  const msgs = stripped ? d.stripped : rec.messages;
  // The stripped view renumbers messages: per-message notes do not apply.
  if (stripped) { ctx.steps = {}; ctx.answerMarks = []; ctx.luresAt = {}; }

  const nav = (to) => { if (to) go("/t/" + encodeURIComponent(to), params); };
  current = {
    prev: () => nav(d.prev), next: () => nav(d.next),
    toggle: () => { const q = new URLSearchParams(params); if (stripped) q.delete("stripped"); else q.set("stripped", "1"); go("/t/" + encodeURIComponent(id), q); },
    up: () => go("/runs", here),
  };

  const sc = d.scenario;
  const side = h("div", { class: "side" },
    h("section", { id: "labels" }, h("h3", {}, "Labels"),
      h("div", {}, h("span", { class: "pill " + (rec.success ? "ok" : "") }, rec.success ? "success" : "failure"),
        rec.drift ? h("span", { class: "pill drift" }, "drift") : h("span", { class: "pill" }, "no drift"),
        h("span", { class: "pill" }, rec.status),
        isSim(rec.policy) ? h("span", { class: "pill", id: "simulated", title: "a simulated policy, not a language model" }, "simulated policy") : null),
      rec.error ? h("p", { class: "error" }, rec.error) : null,
      h("p", { id: "judge" }, h("b", {}, "judge " + (rec.judge.kind || "") + ": "), rec.judge.reason || ""),
      h("div", { class: "muted" }, `${rec.checkpoint} · ${rec.framework} · ${rec.policy} · rollout ${rec.rollout} · seed ${rec.seed}`),
      h("div", { class: "muted" }, `tokens ${rec.usage.prompt_tokens} prompt / ${rec.usage.completion_tokens} completion`),
      rec.timings ? h("div", { class: "muted" }, `wall ${Math.round(rec.timings.total_ms)} ms (model ${Math.round(rec.timings.model_ms)}, tools ${Math.round(rec.timings.tool_ms)})`) : null),
    d.marks.length ? h("section", { id: "drift" }, h("h3", {}, `Drift (${d.marks.length} call${d.marks.length > 1 ? "s" : ""})`),
      h("ul", {}, d.marks.map((mk) => h("li", {}, h("b", {}, mk.tool || "final answer"), mk.matches.map((x) => h("div", { class: "drift-mark" }, matchText(x))))))) : null,
    d.lures.length ? h("section", {}, h("h3", {}, "Lures"), h("ul", {}, d.lures.map((l) => h("li", {}, h("mark", { class: "lure" }, l.text))))) : null,
    sc ? h("section", { id: "boundary" }, h("h3", {}, "Boundary"),
      h("div", {}, h("b", {}, "data: "), (sc.boundary.data || []).join(", ")),
      h("div", {}, h("b", {}, "tools: "), (sc.boundary.tools || []).join(", ")),
      h("div", {}, h("b", {}, "scope: "), sc.boundary.scope),
      h("div", {}, h("b", {}, "time: "), sc.boundary.time),
      sc.boundary.constraints && sc.boundary.constraints.length ? h("details", {}, h("summary", {}, `${sc.boundary.constraints.length} constraints`), h("pre", {}, JSON.stringify(sc.boundary.constraints, null, 2))) : null)
      : h("section", {}, h("h3", {}, "Boundary"), h("p", { class: "muted" }, d.scenario_error || "scenario not found")),
    sc ? h("section", { id: "success" }, h("h3", {}, "Success checks"), h("pre", {}, JSON.stringify(sc.success, null, 2))) : null,
    rec.plan ? h("section", {}, h("h3", {}, "Plan"), h("pre", {}, rec.plan)) : null);

  const bar = h("div", { class: "pager" },
    h("button", { type: "button", onclick: current.up }, "↑ list (u)"),
    h("button", { type: "button", id: "prev", disabled: !d.prev, onclick: current.prev }, "‹ prev (k)"),
    h("button", { type: "button", id: "next", disabled: !d.next, onclick: current.next }, "next (j) ›"),
    h("label", {}, h("input", { type: "checkbox", id: "stripped-toggle", checked: stripped, onchange: current.toggle }), " what the judge saw (s)"),
    h("a", { href: "#/compare/" + encodeURIComponent(rec.scenario_id) }, "compare checkpoints on " + rec.scenario_id),
    h("span", { class: "muted", id: "run-label", title: d.run.label }, [rec.traj_id, shortRun(d.run), d.run.start, ...d.run.distinct].filter(Boolean).join(" · ")));

  app.replaceChildren(bar, h("div", { class: "layout" },
    h("div", { id: "conversation", "data-view": stripped ? "stripped" : "full" },
      sc ? h("p", { class: "muted" }, "Task: " + sc.instruction) : null,
      stripped ? h("p", { class: "muted" }, "The judges' view: drifting calls, refused calls and their results removed.") : null,
      renderMessages(msgs, ctx)),
    side));
}

// ---- compare ----

async function renderCompare(id, params) {
  const runsParam = params.get("runs") || "";
  const d = await api("/api/compare/" + encodeURIComponent(id) + (runsParam ? "?runs=" + encodeURIComponent(runsParam) : ""));
  const picked = runsParam ? runsParam.split(",") : ["", ""];
  // Two runs side by side: any two run folders, typically two runs of one
  // checkpoint (repeated rollouts, synth rounds).
  const pick = (slot) => h("select", { id: "compare-run-" + slot, onchange: (e) => {
      const next = [...picked]; next[slot] = e.target.value;
      const keep = next.filter(Boolean);
      go("/compare/" + encodeURIComponent(id), keep.length ? new URLSearchParams({ runs: keep.join(",") }) : null);
    } },
    h("option", { value: "" }, "every run"),
    d.runs.map((r, i) => h("option", { value: String(i), selected: picked[slot] === String(i) }, `${r.checkpoint} — ${r.label}`)));
  const rows = d.groups.map((g) => h("tr", {}, runCell(d.runs, g.run_dir), h("td", {}, g.checkpoint), h("td", {}, g.framework), h("td", {}, g.n),
    h("td", {}, pct(g.success / g.n)), h("td", {}, pct(g.drift / g.n)), h("td", {}, pct(g.clean / g.n)),
    h("td", { class: "chips" }, g.rollouts.map((r) => h("a", {
      href: "#/t/" + encodeURIComponent(r.traj_id) + "?scenario=" + encodeURIComponent(id),
      class: r.success && !r.drift ? "clean" : r.drift ? "drifted" : "failed",
      title: `rollout ${r.rollout}: ${r.status}, ${r.success ? "success" : "failure"}${r.drift ? ", drift: " + r.drift_types.join(", ") : ""}`,
    })))));
  app.replaceChildren(h("h2", {}, "Scenario " + id + " across checkpoints"),
    h("div", { class: "filters" }, h("label", {}, "run A", pick(0)), h("label", {}, "run B", pick(1))),
    h("table", { class: "grid", id: "compare" },
      h("thead", {}, h("tr", {}, ["run", "checkpoint", "framework", "N", "TSR", "DR", "CSR", "rollouts (green clean, red drift, grey failure)"].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows)),
    d.reports.length ? h("p", {}, "Pareto reports: ", d.reports.map((r) => h("a", { href: r.url, target: "_blank" }, r.name + " "))) : null);
}

// ---- datasets ----

async function renderTables() {
  const s = await api("/api/sources");
  app.replaceChildren(h("h2", {}, "Dataset tables"),
    s.tables.length ? h("table", { class: "grid", id: "tables" },
      h("thead", {}, h("tr", {}, ["table", "kind", "rows"].map((c) => h("th", {}, c)))),
      h("tbody", {}, s.tables.map((t, i) => h("tr", { onclick: () => go("/table/" + i) }, h("td", {}, h("a", { href: "#/table/" + i }, t.name)), h("td", {}, t.kind), h("td", {}, t.rows)))))
      : h("p", { class: "muted" }, "No dataset folder was given (antidrift view DIR with a pairs, kto, rewards or trajectories export)."));
}

// renderTable lists a dataset table with the trajectory list's tools:
// filters on its columns, text search over its messages, sortable
// columns and paging, all answered by the server.
async function renderTable(n, params) {
  const p = new URLSearchParams(params);
  if (!p.get("page")) p.set("page", "1");
  if (!p.get("size")) p.set("size", "50");
  const d = await api(`/api/tables/${n}/rows?` + p.toString());
  const keep = () => { const q = new URLSearchParams(params); q.delete("page"); return q; };
  const update = (k, v) => { const q = keep(); if (v) q.set(k, v); else q.delete(k); go("/table/" + n, q); };
  const facetNames = Object.keys(d.facets).filter((k) => d.columns.includes(k));
  const search = h("input", { id: "table-search", type: "search", placeholder: "search messages  (/)", value: params.get("q") || "", size: 28 });
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") update("q", search.value.trim()); });
  const filters = h("div", { class: "filters" },
    facetNames.map((k) => h("label", {}, k,
      h("select", { id: "table-filter-" + k, "data-column": k, onchange: (e) => update(k, e.target.value) },
        h("option", { value: "" }, "all"),
        d.facets[k].map((v) => h("option", { value: v, selected: params.get(k) === v }, v))))),
    h("label", {}, "text", search),
    h("button", { type: "button", onclick: () => go("/table/" + n) }, "clear"));
  const sort = params.get("sort") || "";
  const pages = Math.max(1, Math.ceil(d.total / d.size));
  const toPage = (pg) => { const q = new URLSearchParams(params); q.set("page", pg); go("/table/" + n, q); };
  const pager = () => h("div", { class: "pager" },
    h("button", { type: "button", disabled: d.page <= 1, onclick: () => toPage(d.page - 1) }, "‹ prev"),
    h("span", { class: "table-count" }, `${d.total} rows · page ${d.page} of ${pages}`),
    h("button", { type: "button", disabled: d.page >= pages, onclick: () => toPage(d.page + 1) }, "next ›"));
  const cell = (v) => (v === undefined ? "" : String(v));
  app.replaceChildren(h("h2", {}, `${d.table.name} (${d.table.kind}, ${d.table.rows} rows)`),
    filters, pager(),
    h("table", { class: "grid", id: "rows" },
      h("thead", {}, h("tr", {}, h("th", {}, "#"), d.columns.map((k) => h("th", { "data-sort": k, onclick: () => update("sort", sort === k ? "-" + k : k) },
        k + (sort === k ? " ▲" : sort === "-" + k ? " ▼" : ""))))),
      h("tbody", {}, d.rows.map((r) => h("tr", { "data-row": r.row, onclick: () => go(`/row/${n}/${r.row}`) },
        h("td", {}, r.row), d.columns.map((k) => h("td", {}, cell(r[k]))))))),
    pager());
}

function messageList(list, ctx) {
  const msgs = (list || []).map((m) => (typeof m === "string" ? JSON.parse(m) : m));
  return renderMessages(msgs, ctx || { steps: {}, markByID: {}, luresAt: {}, answerMarks: [] });
}

function trajLink(id, known) {
  if (!id) return null;
  return known ? h("a", { href: "#/t/" + encodeURIComponent(id) }, "trajectory " + id) : h("span", { class: "muted" }, `trajectory ${id} (its run folder is not being served)`);
}

async function renderRow(n, i) {
  const d = await api(`/api/tables/${n}/rows/${i}`);
  const r = d.data, kind = d.table.kind;
  const meta = h("table", { class: "grid", id: "row-meta" }, h("tbody", {},
    Object.entries(r).filter(([k]) => !["prompt", "chosen", "rejected", "completion", "messages", "tools"].includes(k))
      .map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "object" ? JSON.stringify(v) : String(v))))));
  const back = h("div", { class: "pager" },
    h("button", { type: "button", onclick: () => go("/table/" + n) }, "↑ table"),
    h("button", { type: "button", disabled: d.row <= 0, onclick: () => go(`/row/${n}/${d.row - 1}`) }, "‹ prev"),
    h("button", { type: "button", disabled: d.row + 1 >= d.table.rows, onclick: () => go(`/row/${n}/${d.row + 1}`) }, "next ›"));
  let body;
  if (kind === "pairs" && d.diff) {
    // Aligned from the shared prefix: what both sides share is shown once,
    // then each side from where they part, the differing words marked.
    const df = d.diff;
    const parse = (list) => (list || []).map((m) => (typeof m === "string" ? JSON.parse(m) : m));
    const chosen = parse(r.chosen), rejected = parse(r.rejected);
    const side = (msgs, own) => {
      const at = {};
      for (const a of df.aligned) at[a.index - df.shared] = a;
      const first = df.aligned.findIndex((a) => !a.same);
      return renderMessages(msgs.slice(df.shared), { steps: {}, markByID: {}, luresAt: {}, answerMarks: [], diff: { at, own, first: first < 0 ? -1 : df.aligned[first].index - df.shared } });
    };
    body = [
      h("h3", {}, "Prompt"), messageList(r.prompt),
      df.shared ? [h("h3", { id: "shared" }, `Shared by both sides (${df.shared} message${df.shared > 1 ? "s" : ""}, shown once)`), messageList(chosen.slice(0, df.shared))] : null,
      h("div", { class: "divergence", id: "divergence", "data-message": df.message },
        `⇄ the sides diverge at message ${df.message}` + (r.divergence_step !== undefined ? ` (the row's divergence_step: ${r.divergence_step}, a ${r.pair_type} pair)` : "") +
        ` · reward gap ${r.reward_gap !== undefined ? Number(r.reward_gap).toFixed(3) : "?"}`),
      h("div", { class: "pair" },
        h("div", { id: "pair-chosen" }, h("h3", {}, `chosen (reward ${fmt(r.chosen_reward)})`), trajLink(r.chosen_traj_id, d.trajectories[r.chosen_traj_id]), side(chosen, "-")),
        h("div", { id: "pair-rejected" }, h("h3", {}, `rejected (reward ${fmt(r.rejected_reward)})`), trajLink(r.rejected_traj_id, d.trajectories[r.rejected_traj_id]), side(rejected, "+"))),
    ];
  } else if (kind === "pairs") {
    body = [
      h("h3", {}, "Shared prefix (prompt)"), messageList(r.prompt),
      h("div", { class: "divergence", id: "divergence" }, `divergence${r.divergence_step !== undefined ? " at step " + r.divergence_step : ""} · reward gap ${r.reward_gap !== undefined ? Number(r.reward_gap).toFixed(3) : "?"}`),
      h("div", { class: "pair" },
        h("div", { id: "pair-chosen" }, h("h3", {}, `chosen (reward ${fmt(r.chosen_reward)})`), trajLink(r.chosen_traj_id, d.trajectories[r.chosen_traj_id]), messageList(r.chosen)),
        h("div", { id: "pair-rejected" }, h("h3", {}, `rejected (reward ${fmt(r.rejected_reward)})`), trajLink(r.rejected_traj_id, d.trajectories[r.rejected_traj_id]), messageList(r.rejected))),
    ];
  } else if (kind === "kto" || kind === "rewards") {
    body = [
      h("h3", {}, "prompt"), messageList(r.prompt),
      h("div", { class: "divergence" }, kind === "kto" ? `completion · label ${r.label ? "desirable" : "undesirable"}` : `completion · reward ${fmt(r.reward)} · advantage ${fmt(r.advantage)}`),
      h("div", { id: "completion" }, messageList(r.completion)),
      trajLink(r.traj_id, d.trajectories[r.traj_id]),
    ];
  } else {
    body = [trajLink(r.traj_id, d.trajectories[r.traj_id]), messageList(r.messages)];
  }
  app.replaceChildren(back, h("h2", {}, `${d.table.name} row ${d.row}`), meta, ...body.flat());
}

const fmt = (x) => (x === undefined || x === null ? "?" : Number(x).toFixed(3));

// ---- reports ----

async function renderReports() {
  const s = await api("/api/sources");
  app.replaceChildren(h("h2", {}, "Reports"),
    s.reports.length ? h("ul", { id: "reports" }, s.reports.map((r) => h("li", {}, h("a", { href: r.url, target: "_blank" }, r.name))))
      : h("p", { class: "muted" }, "No report folder was given (antidrift view REPORT_DIR, as written by antidrift pareto or rescore)."),
    h("h2", {}, "Run folders"),
    h("table", { class: "grid", id: "runs" },
      h("thead", {}, h("tr", {}, ["run", "folder", "started", "checkpoint", "policy", "settings", "state", "records", "planned"].map((c) => h("th", {}, c)))),
      h("tbody", {}, s.runs.map((r, i) => h("tr", { "data-state": r.state, onclick: () => go("/runs", new URLSearchParams({ run: String(i) })) },
        h("td", {}, r.name), h("td", {}, r.path), h("td", {}, r.start), h("td", {}, r.manifest.plan.checkpoint), h("td", {}, r.manifest.plan.policy),
        h("td", {}, r.distinct.join(" · ")), h("td", {}, stateBadge(r.state)), h("td", {}, r.records), h("td", {}, r.planned))))));
  showProgress(s.progress);
}

// ---- a static export: the data files stand in for the API ----

// loadData loads data/NAME.js once; the file hands its data to
// ANTIDRIFT_DATA (a page opened from file:// may load scripts, not fetch).
const dataWaiting = {}, dataLoaded = {};
window.ANTIDRIFT_DATA = (name, v) => { if (dataWaiting[name]) dataWaiting[name](v); };
function loadData(name) {
  if (!dataLoaded[name]) {
    dataLoaded[name] = new Promise((resolve, reject) => {
      dataWaiting[name] = resolve;
      const el = h("script", { src: "data/" + name + ".js" });
      el.onerror = () => reject(new Error(`this export has no data/${name}.js`));
      document.head.append(el);
    });
  }
  return dataLoaded[name];
}

const fileOf = {};
if (STATIC) STATIC.rows.forEach((r, k) => { fileOf[r.traj_id] = k; });
const cmpv = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const ROW_FIELD = { scenario: "scenario_id", run: "run_dir" };

// staticSelect is the list's selection over the exported rows, with the
// server's rules: equal values, members of the match lists, search over
// message text (lower case), a stable sort.
async function staticSelect(p) {
  const eq = { checkpoint: "checkpoint", framework: "framework", scenario: "scenario_id", domain: "domain", status: "status" };
  const has = { type: "drift_types", kind: "violation_kinds", provision: "provisions" };
  let sel = STATIC.rows.filter((r) =>
    (!p.get("run") || String(r.run_dir) === p.get("run")) &&
    Object.entries(eq).every(([k, f]) => !p.get(k) || r[f] === p.get(k)) &&
    Object.entries(has).every(([k, f]) => !p.get(k) || r[f].includes(p.get(k))) &&
    ["success", "drift"].every((k) => !p.get(k) || String(r[k]) === p.get(k)));
  const q = (p.get("q") || "").trim().toLowerCase();
  if (q) {
    const texts = await loadData("search");
    sel = sel.filter((r) => texts[fileOf[r.traj_id]].includes(q));
  }
  const sort = p.get("sort");
  if (sort) {
    const key = sort.replace(/^-/, ""), f = ROW_FIELD[key] || key, sign = sort.startsWith("-") ? -1 : 1;
    sel = sel.map((r, i) => [r, i]).sort((a, b) => sign * cmpv(a[0][f], b[0][f]) || a[1] - b[1]).map((x) => x[0]);
  }
  return sel;
}

function staticProgress() {
  const n = (st) => STATIC.runs.filter((r) => r.state === st).length;
  return { done: true, records: STATIC.rows.length, duplicates: 0, live: 0, finished: n("finished"), stopped: n("stopped"), static: true };
}

function staticGroups(sel, key) {
  const groups = new Map();
  for (const r of sel) {
    const k = key(r);
    if (!groups.has(k)) groups.set(k, { checkpoint: r.checkpoint, framework: r.framework, run_dir: r.run_dir, rows: [] });
    groups.get(k).rows.push(r);
  }
  return [...groups.values()];
}

async function staticList(p) {
  const sel = await staticSelect(p);
  const page = +(p.get("page") || 1), size = +(p.get("size") || 50);
  const facets = {};
  const add = (k, v) => { (facets[k] = facets[k] || new Set()).add(v); };
  for (const r of STATIC.rows) {
    add("checkpoint", r.checkpoint); add("framework", r.framework); add("scenario", r.scenario_id); add("domain", r.domain); add("status", r.status);
    r.drift_types.forEach((v) => add("type", v)); r.violation_kinds.forEach((v) => add("kind", v)); r.provisions.forEach((v) => add("provision", v));
  }
  for (const k of Object.keys(facets)) facets[k] = [...facets[k]].sort();
  const groups = staticGroups(sel, (r) => `${r.checkpoint}\u0000${r.framework}\u0000${r.run_dir}`).map((g) => {
    const scored = g.rows.filter((r) => STATIC.scored.includes(r.status));
    const n = Math.max(scored.length, 1);
    return { checkpoint: g.checkpoint, framework: g.framework, run_dir: g.run_dir, n: scored.length, listed: g.rows.length,
      tsr: scored.filter((r) => r.success).length / n, dr: scored.filter((r) => r.drift).length / n, csr: scored.filter((r) => r.success && !r.drift).length / n };
  }).sort((a, b) => cmpv(a.checkpoint, b.checkpoint) || cmpv(a.framework, b.framework) || a.run_dir - b.run_dir);
  return { total: sel.length, page, size, rows: sel.slice((page - 1) * size, page * size), groups, progress: staticProgress(), facets, runs: STATIC.runs };
}

function staticTable(n) {
  const t = STATIC.sources.tables[n];
  if (!t) throw new Error(`no table ${n} in this export`);
  return t;
}

async function staticTableRows(n, p) {
  const t = staticTable(n);
  let sel = [...Array(t.exported).keys()];
  for (const [k, v] of p) {
    if (["q", "sort", "page", "size"].includes(k) || !v) continue;
    const col = t.cells[k];
    if (!col) throw new Error(`${k}: table ${t.name} has no column "${k}" to filter on`);
    sel = sel.filter((i) => col[i] === v || (col[i].startsWith("[") && JSON.parse(col[i]).map((x) => (typeof x === "string" ? x : JSON.stringify(x))).includes(v)));
  }
  const q = (p.get("q") || "").trim().toLowerCase();
  if (q) {
    const chunks = await Promise.all([...Array(Math.ceil(t.exported / 200)).keys()].map((c) => loadData(`tables/${n}/${c}`)));
    const hit = new Set(chunks.flat().filter((e) => e.text.includes(q)).map((e) => e.row));
    sel = sel.filter((i) => hit.has(i));
  }
  const sort = p.get("sort");
  if (sort) {
    const col = t.cells[sort.replace(/^-/, "")], desc = sort.startsWith("-");
    const num = (x) => (x.trim() !== "" && !isNaN(Number(x)) ? Number(x) : null);
    sel = sel.map((i, k) => [i, k]).sort((a, b) => {
      const x = col[a[0]], y = col[b[0]];
      if (x === "" || y === "") return (x === "") - (y === "") || a[1] - b[1];
      const nx = num(x), ny = num(y);
      const c = nx !== null && ny !== null ? cmpv(nx, ny) : cmpv(x, y);
      return (desc ? -c : c) || a[1] - b[1];
    }).map((x) => x[0]);
  }
  const page = +(p.get("page") || 1), size = +(p.get("size") || 50);
  const rows = sel.slice((page - 1) * size, page * size).map((i) => {
    const r = { row: i };
    for (const c of t.columns) if (t.cells[c][i] !== "") r[c] = t.cells[c][i];
    return r;
  });
  return { table: { ...t, rows: t.exported }, total: sel.length, page, size, rows, columns: t.columns, facets: t.facets };
}

async function staticApi(path) {
  const u = new URL(path, "http://export.invalid");
  const parts = u.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const p = u.searchParams;
  switch (parts[1]) {
    case "sources": return { ...STATIC.sources, progress: staticProgress() };
    case "trajectories": return staticList(p);
    case "trajectory": {
      const k = fileOf[parts[2]];
      if (k === undefined) throw new Error(`trajectory ${parts[2]} is not in this export`);
      const d = await loadData("t/" + k);
      const sel = await staticSelect(p);
      const at = sel.findIndex((r) => r.traj_id === parts[2]);
      return { ...d, prev: at > 0 ? sel[at - 1].traj_id : "", next: at >= 0 && at + 1 < sel.length ? sel[at + 1].traj_id : "" };
    }
    case "compare": {
      const only = p.get("runs") ? p.get("runs").split(",") : null;
      const rows = STATIC.rows.filter((r) => r.scenario_id === parts[2] && (!only || only.includes(String(r.run_dir))));
      if (!rows.length) throw new Error(`no trajectory of scenario "${parts[2]}" in this export`);
      const groups = staticGroups(rows, (r) => `${r.checkpoint}\u0000${r.framework}\u0000${r.run_dir}`).map((g) => ({
        checkpoint: g.checkpoint, framework: g.framework, run_dir: g.run_dir, n: g.rows.length, rollouts: g.rows,
        success: g.rows.filter((r) => r.success).length, drift: g.rows.filter((r) => r.drift).length, clean: g.rows.filter((r) => r.success && !r.drift).length }));
      return { scenario_id: parts[2], groups, reports: STATIC.sources.reports, runs: STATIC.runs };
    }
    case "tables": {
      if (parts.length === 4) return staticTableRows(+parts[2], p);
      const t = staticTable(+parts[2]), i = +parts[4];
      if (!(i >= 0 && i < t.exported)) throw new Error(`${t.name}: row ${parts[4]} is not in this export (it holds rows 0–${t.exported - 1})`);
      const e = (await loadData(`tables/${parts[2]}/${Math.floor(i / 200)}`))[i % 200];
      return { table: { ...t, rows: t.exported }, row: i, data: e.data, trajectories: e.trajectories, diff: e.diff };
    }
  }
  throw new Error("not in a static export: " + path);
}

// ---- theme and keys ----

function setTheme(dark) {
  document.documentElement.classList.toggle("dark", dark);
  try { localStorage.setItem("antidrift-theme", dark ? "dark" : "light"); } catch { /* private mode */ }
}
(() => {
  let saved = null;
  try { saved = localStorage.getItem("antidrift-theme"); } catch { /* private mode */ }
  setTheme(saved ? saved === "dark" : window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
})();
document.getElementById("theme").addEventListener("click", () => setTheme(!document.documentElement.classList.contains("dark")));
document.getElementById("help").addEventListener("click", () => document.getElementById("keys").classList.toggle("hidden"));

document.addEventListener("keydown", (e) => {
  if (e.target.matches("input, select, textarea") || e.ctrlKey || e.metaKey || e.altKey) return;
  const k = e.key;
  if (k === "t") setTheme(!document.documentElement.classList.contains("dark"));
  else if (k === "?") document.getElementById("keys").classList.toggle("hidden");
  else if (k === "Escape") document.getElementById("keys").classList.add("hidden");
  else if (k === "/") { const s = document.getElementById("search") || document.getElementById("table-search"); if (s) { e.preventDefault(); s.focus(); } else go("/runs"); }
  else if (current && k === "j") current.next();
  else if (current && k === "k") current.prev();
  else if (current && k === "s") current.toggle();
  else if (current && k === "u") current.up();
});

window.addEventListener("hashchange", render);
render();
