"use strict";
(() => {
const POLL_MS = 1000;           // one scrape of /metrics and /debug/actors per second
const WINDOW_MS = 60000;        // status mix, cache hit ratio and error ratio: last 60 s
const FETCH_TIMEOUT_MS = 5000;
const STATUSES = ["ok", "timeout", "error", "rejected", "skipped"];
const COLORS = {ok: "#2f9e5b", timeout: "#e3a008", error: "#d64545", rejected: "#8b5cf6", skipped: "#9aa3ad"};
const CACHE_EVENTS = ["hit", "miss", "coalesced", "stale"];
const GLOBALS = ["gather_inflight_requests", "gather_overloaded_total", "gather_late_replies_total",
                 "gather_actors_running", "gather_downstream_inflight"];
const SVGNS = "http://www.w3.org/2000/svg";

// ---------------------------------------------------------------- Prometheus text format 0.0.4

function parseValue(s) {
  if (s === "+Inf" || s === "Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  if (s === "NaN") return NaN;
  return s === undefined || s === "" ? NaN : Number(s);
}

// One sample line: name, optional {labels}, value, optional timestamp. Null when malformed.
function parseLine(line) {
  let i = 0;
  while (i < line.length && /[A-Za-z0-9_:]/.test(line[i])) i++;
  const name = line.slice(0, i);
  if (!name) return null;
  const labels = Object.create(null);
  while (line[i] === " " || line[i] === "\t") i++;
  if (line[i] === "{") {
    i++;
    for (;;) {
      while (line[i] === " " || line[i] === "\t" || line[i] === ",") i++;
      if (i >= line.length) return null;
      if (line[i] === "}") { i++; break; }
      let j = i;
      while (j < line.length && /[A-Za-z0-9_]/.test(line[j])) j++;
      if (j === i) return null;
      const key = line.slice(i, j);
      i = j;
      while (line[i] === " ") i++;
      if (line[i] !== "=") return null;
      i++;
      while (line[i] === " ") i++;
      if (line[i] !== '"') return null;
      i++;
      let value = "";
      while (i < line.length && line[i] !== '"') {
        if (line[i] === "\\" && i + 1 < line.length) {
          const c = line[i + 1];
          value += c === "n" ? "\n" : c === "\\" || c === '"' ? c : "\\" + c;
          i += 2;
        } else {
          value += line[i++];
        }
      }
      if (line[i] !== '"') return null;
      i++;
      labels[key] = value;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  const value = parseValue(rest[0]);
  if (Number.isNaN(value) && rest[0] !== "NaN") return null;
  return {name, labels, value};
}

function parseProm(text) {
  const samples = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "" || line.trimStart()[0] === "#") continue;
    const s = parseLine(line.trimStart());
    if (s) samples.push(s);
  }
  return samples;
}

// ------------------------------------------------------------------------------ the model

function newRoute(name) {
  return {name, requests: 0, codes: new Map(), errors: null, buckets: null, hist: null,
          sections: new Map()};
}
function newSection(name) {
  const status = {};
  for (const st of STATUSES) status[st] = 0;
  return {name, status, other: 0, total: 0, sources: {live: 0, cache: 0, fallback: 0},
          buckets: null, hist: null, degraded: null, retries: null, cache: null,
          hedges: null, rejectedBy: null, circuitOpen: null, circuitMoves: null};
}
function addBucket(obj, le, v) {
  const bound = parseValue(le);
  if (Number.isNaN(bound)) return;
  if (!obj.buckets) obj.buckets = new Map();
  obj.buckets.set(bound, (obj.buckets.get(bound) || 0) + v);
}
function finishHist(obj) {
  if (obj.buckets) {
    const le = [...obj.buckets.keys()].sort((a, b) => a - b);
    obj.hist = {le, cum: le.map(b => obj.buckets.get(b))};
  }
  obj.buckets = null;
}

// Series that list every route or section in configuration order come first, so the first
// scrape already orders the page like the configuration.
const RANK = {gather_request_duration_seconds_bucket: 0, gather_section_duration_seconds_bucket: 0};

function buildModel(samples, t) {
  const m = {t, routes: new Map(), g: {}, nodes: new Map(), dbg: null};
  const route = name => {
    const key = name === undefined ? "" : name;
    let r = m.routes.get(key);
    if (!r) { r = newRoute(key); m.routes.set(key, r); }
    return r;
  };
  const section = L => {
    const r = route(L.route);
    const key = L.section === undefined ? "" : L.section;
    let s = r.sections.get(key);
    if (!s) { s = newSection(key); r.sections.set(key, s); }
    return s;
  };
  const ordered = samples.slice().sort((a, b) => (RANK[a.name] ?? 1) - (RANK[b.name] ?? 1));
  for (const {name, labels: L, value: v} of ordered) {
    switch (name) {
      case "gather_requests_total": {
        const r = route(L.route), code = L.code === undefined ? "" : L.code;
        r.requests += v;
        r.codes.set(code, (r.codes.get(code) || 0) + v);
        break;
      }
      case "gather_request_errors_total": { const r = route(L.route); r.errors = (r.errors ?? 0) + v; break; }
      case "gather_request_duration_seconds_bucket": addBucket(route(L.route), L.le, v); break;
      case "gather_section_total": {
        const s = section(L);
        if (STATUSES.includes(L.status)) s.status[L.status] += v; else s.other += v;
        if (L.source === "live" || L.source === "cache" || L.source === "fallback") s.sources[L.source] += v;
        s.total += v;
        break;
      }
      case "gather_section_duration_seconds_bucket": addBucket(section(L), L.le, v); break;
      case "gather_degraded_total": { const s = section(L); s.degraded = (s.degraded ?? 0) + v; break; }
      case "gather_retries_total": { const s = section(L); s.retries = (s.retries ?? 0) + v; break; }
      case "gather_cache_events_total": {
        const s = section(L);
        if (!s.cache) s.cache = {hit: 0, miss: 0, coalesced: 0, stale: 0};
        if (CACHE_EVENTS.includes(L.event)) s.cache[L.event] += v;
        break;
      }
      case "gather_hedges_total": {
        const s = section(L);
        if (!s.hedges) s.hedges = {won: 0, lost: 0};
        if (L.result === "won" || L.result === "lost") s.hedges[L.result] += v;
        break;
      }
      case "gather_rejected_total": {
        const s = section(L);
        if (!s.rejectedBy) s.rejectedBy = {max_concurrent: 0, circuit_open: 0};
        if (L.reason === "max_concurrent" || L.reason === "circuit_open") s.rejectedBy[L.reason] += v;
        break;
      }
      case "gather_circuit_open": { const s = section(L); s.circuitOpen = (s.circuitOpen ?? 0) + v; break; }
      case "gather_circuit_transitions_total": {
        const s = section(L);
        if (L.to === "open") s.circuitMoves = (s.circuitMoves ?? 0) + v;
        break;
      }
      case "gather_node_up": m.nodes.set(L.node === undefined ? "" : L.node, v); break;
      default:
        if (GLOBALS.includes(name)) m.g[name.slice(7)] = (m.g[name.slice(7)] ?? 0) + v;
    }
  }
  for (const r of m.routes.values()) {
    finishHist(r);
    for (const s of r.sections.values()) finishHist(s);
  }
  return m;
}

// ---------------------------------------------------------------------------- arithmetic

// Like PromQL's histogram_quantile: linear interpolation inside the bucket that holds the rank;
// a rank in the +Inf bucket gives the highest finite bound (capped = true).
function histQuantile(h, q) {
  const none = {v: NaN, capped: false};
  if (!h || h.le.length < 2 || h.le[h.le.length - 1] !== Infinity) return none;
  const n = h.le.length, total = h.cum[n - 1];
  if (!(total > 0)) return none;
  const rank = q * total;
  let b = 0;
  while (b < n - 1 && h.cum[b] < rank) b++;
  if (b === n - 1) return {v: h.le[n - 2], capped: true};
  if (b === 0 && h.le[0] <= 0) return {v: h.le[0], capped: false};
  const lower = b === 0 ? 0 : h.le[b - 1];
  const below = b === 0 ? 0 : h.cum[b - 1];
  const inBucket = h.cum[b] - below;
  if (!(inBucket > 0)) return {v: h.le[b], capped: false};
  return {v: lower + (h.le[b] - lower) * (rank - below) / inBucket, capped: false};
}

function histDelta(cur, before) {
  if (!cur || !before || cur.le.length !== before.le.length) return null;
  const cum = [];
  for (let i = 0; i < cur.le.length; i++) {
    if (cur.le[i] !== before.le[i]) return null;
    const d = cur.cum[i] - before.cum[i];
    if (d < 0) return null; // the gateway restarted
    cum.push(d);
  }
  return {le: cur.le, cum};
}

// p50/p99 over the last scrape interval; the whole histogram when nothing was observed in it.
function latency(cur, before) {
  const d = histDelta(cur, before);
  const useDelta = !!d && d.cum[d.cum.length - 1] > 0;
  const h = useDelta ? d : cur;
  const p50 = histQuantile(h, 0.5), p99 = histQuantile(h, 0.99);
  return {p50: p50.v * 1000, p50capped: p50.capped, p99: p99.v * 1000, p99capped: p99.capped,
          window: useDelta ? "interval" : "all"};
}

function rate(cur, before, dt) {
  if (!(dt > 0) || !Number.isFinite(cur) || !Number.isFinite(before)) return null;
  const d = cur - before;
  return d >= 0 ? d / dt : null; // a reset: no rate for this interval
}

// Counts over the last WINDOW_MS (against the oldest scrape kept); the totals when the window
// saw nothing or the counters went back.
function windowed(cur, base, keys) {
  if (base) {
    const d = {};
    let total = 0, ok = true;
    for (const k of keys) {
      d[k] = (cur[k] || 0) - (base[k] || 0);
      if (d[k] < 0) ok = false;
      total += d[k];
    }
    if (ok && total > 0) return {counts: d, window: "60s"};
  }
  const all = {};
  for (const k of keys) all[k] = cur[k] || 0;
  return {counts: all, window: "all"};
}

function routeErrors(r) {
  if (r.errors !== null) return r.errors;
  let n = 0;
  for (const [code, v] of r.codes) if (Number(code) !== 200) n += v;
  return n;
}

function derive(m, prev, base) {
  const dt = prev ? (m.t - prev.t) / 1000 : null;
  for (const r of m.routes.values()) {
    const pr = prev && prev.routes.get(r.name);
    const br = base && base.routes.get(r.name);
    r.errTotal = routeErrors(r);
    r.rps = rate(r.requests, pr ? pr.requests : undefined, dt);
    r.lat = latency(r.hist, pr ? pr.hist : null);
    const w = windowed({req: r.requests, err: r.errTotal}, br ? {req: br.requests, err: br.errTotal} : null,
                       ["req", "err"]);
    r.errWindow = w;
    r.errRatio = w.counts.req > 0 ? w.counts.err / w.counts.req : null;
    for (const s of r.sections.values()) {
      const ps = pr && pr.sections.get(s.name);
      const bs = br && br.sections.get(s.name);
      s.cps = rate(s.total, ps ? ps.total : undefined, dt);
      s.lat = latency(s.hist, ps ? ps.hist : null);
      s.mix = windowed(s.status, bs ? bs.status : null, STATUSES);
      if (s.cache) {
        const look = c => ({hit: c.hit, lookups: c.hit + c.miss + c.coalesced});
        const w2 = windowed(look(s.cache), bs && bs.cache ? look(bs.cache) : null, ["hit", "lookups"]);
        s.hit = {hits: w2.counts.hit, lookups: w2.counts.lookups, window: w2.window,
                 ratio: w2.counts.lookups > 0 ? w2.counts.hit / w2.counts.lookups : null};
      } else {
        s.hit = null;
      }
    }
  }
  m.lateRate = rate(m.g.late_replies_total, prev ? prev.g.late_replies_total : undefined, dt);
  m.overloadedRate = rate(m.g.overloaded_total, prev ? prev.g.overloaded_total : undefined, dt);
  m.dt = dt;
}

// ------------------------------------------------------------------------------ formatting

const finite = v => typeof v === "number" && Number.isFinite(v);
const fmtInt = v => Number.isInteger(v) ? String(v) : v.toFixed(2);
const fmtRate = v => v === 0 ? "0" : v < 1 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : String(Math.round(v));
const fmtPct = v => (v * 100).toFixed(v >= 0.9995 || v === 0 ? 0 : 1) + "%";
function fmtMs(v) {
  if (v < 1) return v.toFixed(2) + " ms";
  if (v < 10) return v.toFixed(1) + " ms";
  if (v < 1000) return Math.round(v) + " ms";
  return (v / 1000).toFixed(2) + " s";
}

// ------------------------------------------------------------------------------ DOM helpers

// Children are nodes or strings; a string becomes a Text node (never parsed as HTML).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v; else e.setAttribute(k, String(v));
  }
  for (const k of kids) if (k !== undefined && k !== null && k !== false) e.append(k);
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

// A drawn number: data-metric, the labels given, data-value (unformatted), formatted text.
function num(metric, value, fmt, labels, cls, prefix) {
  const attrs = Object.assign({"class": "num" + (cls ? " " + cls : ""), "data-metric": metric}, labels || {});
  attrs["data-value"] = finite(value) ? String(value) : "";
  return el("span", attrs, finite(value) ? (prefix || "") + fmt(value) : "\u2014");
}

function sparkline(values, color, w = 110, h = 22) {
  const s = svg("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, "aria-hidden": "true"});
  const pts = values.map(v => (finite(v) ? v : null));
  const max = Math.max(0, ...pts.filter(v => v !== null));
  const step = (w - 2) / (Math.round(WINDOW_MS / POLL_MS) - 1);
  s.append(svg("line", {x1: 0, y1: h - 1, x2: w, y2: h - 1, stroke: "#e5e7eb", "stroke-width": 1}));
  let run = [];
  const flush = () => {
    if (run.length > 1)
      s.append(svg("polyline", {points: run.join(" "), fill: "none", stroke: color, "stroke-width": 1.5,
                                "stroke-linejoin": "round"}));
    else if (run.length === 1) {
      const [x, y] = run[0].split(",");
      s.append(svg("circle", {cx: x, cy: y, r: 1.5, fill: color}));
    }
    run = [];
  };
  pts.forEach((v, i) => {
    if (v === null) { flush(); return; }
    const x = w - 1 - (pts.length - 1 - i) * step;
    const y = max > 0 ? h - 2 - (v / max) * (h - 4) : h - 2;
    if (x >= 0) run.push(x.toFixed(1) + "," + y.toFixed(1));
  });
  flush();
  return s;
}

function mixBar(counts, dim, title, w = 124, h = 12) {
  const s = svg("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img"});
  const t = svg("title");
  t.textContent = title;
  s.append(t);
  s.append(svg("rect", {x: 0, y: 0, width: w, height: h, rx: 2, fill: "#eef0f2"}));
  let total = 0;
  for (const st of STATUSES) total += counts[st];
  let x = 0;
  if (total > 0)
    for (const st of STATUSES) {
      if (!counts[st]) continue;
      const width = (counts[st] / total) * w;
      s.append(svg("rect", {x: x.toFixed(2), y: 0, width: Math.max(width, 1).toFixed(2), height: h,
                            fill: COLORS[st], "data-status": st}));
      x += width;
    }
  if (dim) s.setAttribute("opacity", "0.45");
  return s;
}

// ------------------------------------------------------------------------------ state

let polls = 0, scrapes = 0;
let prev = null;
let history = [];                        // models of the last WINDOW_MS, oldest first
let lastDebug = null, lastScrapeAt = null;
const closed = new Set();                // routes the user folded
const order = {routes: [], sections: new Map()};

function remember(list, name) { if (!list.includes(name)) list.push(name); }

function numOrNull(x) { return finite(x) ? x : null; }

// ------------------------------------------------------------------------------ drawing

function tile(label, metric, value, fmt, opts = {}) {
  const attrs = opts.source ? {"data-source": opts.source} : {};
  return el("div", {"class": "tile"},
            el("div", {"class": "label"}, label),
            el("div", {"class": "big"}, num(metric, value, fmt, attrs, opts.cls)),
            opts.sub || null,
            opts.spark ? sparkline(opts.spark, opts.color || "#4b6bfb", 110, 18) : null);
}

function drawTiles(m, dbg) {
  const g = m ? m.g : {};
  const d = dbg || {};
  const hist = key => history.map(h => h.g[key]);
  const dbgHist = key => history.map(h => (h.dbg ? numOrNull(h.dbg[key]) : null));
  const nodes = nodeList(m, dbg);
  let up = 0, down = 0;
  for (const n of nodes.values()) (n.up ? up++ : down++);
  const perSec = (metric, v) => el("div", {"class": "small muted"}, num(metric, v, fmtRate), "/s");
  const tiles = [
    tile("requests in flight", "inflight_requests", g.inflight_requests, fmtInt, {spark: hist("inflight_requests")}),
    tile("coordinators in flight", "coordinators", numOrNull(d.coordinators), fmtInt,
         {source: "debug", spark: dbgHist("coordinators")}),
    tile("section workers", "workers", numOrNull(d.workers), fmtInt, {source: "debug", spark: dbgHist("workers")}),
    tile("actors running", "actors_running", g.actors_running ?? numOrNull(d.actors_running), fmtInt,
         {spark: hist("actors_running")}),
    tile("scheduler threads", "scheduler_threads", numOrNull(d.scheduler_threads), fmtInt, {source: "debug"}),
    tile("downstream in flight", "downstream_inflight", g.downstream_inflight ?? numOrNull(d.downstream_inflight),
         fmtInt, {spark: hist("downstream_inflight")}),
    tile("late replies", "late_replies_total", g.late_replies_total, fmtInt,
         {sub: perSec("late_replies_per_s", m ? m.lateRate : null)}),
    tile("overloaded (503)", "overloaded_total", g.overloaded_total, fmtInt,
         {cls: g.overloaded_total > 0 ? "bad" : "", sub: perSec("overloaded_per_s", m ? m.overloadedRate : null)}),
    tile("client gone", "client_gone", numOrNull(d.client_gone), fmtInt, {source: "debug"}),
    el("div", {"class": "tile"}, el("div", {"class": "label"}, "nodes up / down"),
       el("div", {"class": "big"}, num("nodes_up", nodes.size ? up : null, fmtInt, {}, "st-ok"),
          el("span", {"class": "muted"}, " / "),
          num("nodes_down", nodes.size ? down : null, fmtInt, {}, down ? "bad" : ""))),
  ];
  document.getElementById("tiles").replaceChildren(...tiles);
}

function nodeList(m, dbg) {
  const nodes = new Map();
  if (dbg && Array.isArray(dbg.nodes))
    for (const n of dbg.nodes)
      if (n && typeof n.node === "string")
        nodes.set(n.node, {up: n.up === true, inflight: numOrNull(n.inflight)});
  if (m)
    for (const [node, v] of m.nodes) {
      const e = nodes.get(node) || {inflight: null};
      e.up = v >= 1;
      nodes.set(node, e);
    }
  return nodes;
}

function drawNodes(m, dbg) {
  const nodes = nodeList(m, dbg);
  const box = document.getElementById("nodes");
  if (!nodes.size) { box.replaceChildren(el("div", {"class": "empty"}, "no cluster configured")); return; }
  const pills = [];
  for (const [node, n] of nodes)
    pills.push(el("span", {"class": "pill", title: n.up ? "connected" : "not connected"},
                  el("span", {"class": "dot", style: `background:${n.up ? COLORS.ok : COLORS.error}`}),
                  el("span", {"class": "mono"}, node),
                  num("node_up", n.up ? 1 : 0, v => (v ? "up" : "down"), {"data-node": node},
                      n.up ? "st-ok" : "bad"),
                  n.inflight !== null ? el("span", {"class": "small muted"},
                                           num("node_inflight", n.inflight, fmtInt, {"data-node": node}),
                                           " in flight") : null));
  box.replaceChildren(...pills);
}

function drawSlowest(dbg) {
  const box = document.getElementById("slowest");
  const list = dbg && Array.isArray(dbg.slowest) ? dbg.slowest.slice(0, 10) : null;
  if (!list) { box.replaceChildren(el("div", {"class": "empty"}, "\u2014")); return; }
  if (!list.length) { box.replaceChildren(el("div", {"class": "empty"}, "nothing in flight")); return; }
  const rows = list.map(x => {
    const id = typeof x.request_id === "string" ? x.request_id : "";
    const pending = Array.isArray(x.pending) ? x.pending.filter(p => typeof p === "string") : [];
    return el("tr", {},
              el("td", {"class": "l mono", title: id}, id),
              el("td", {"class": "l mono", title: String(x.route ?? "")}, String(x.route ?? "")),
              el("td", {}, num("slowest_age_ms", numOrNull(x.age_ms), fmtMs, {"data-request-id": id})),
              el("td", {"class": "l mono", title: pending.join(", ")},
                 num("slowest_pending", pending.length, fmtInt, {"data-request-id": id}, "muted"), " ",
                 pending.join(", ")));
  });
  box.replaceChildren(el("table", {style: "table-layout: fixed"},
    el("colgroup", {}, el("col", {style: "width: 28%"}), el("col", {style: "width: 24%"}),
       el("col", {style: "width: 12%"}), el("col", {})),
    el("thead", {}, el("tr", {}, el("th", {"class": "l"}, "request id"), el("th", {"class": "l"}, "route"),
                       el("th", {}, "age"), el("th", {"class": "l"}, "pending sections"))),
    el("tbody", {}, ...rows)));
}

// Each upstream's endpoints and their states (docs/upstreams.md), from /debug/upstreams.
const ENDPOINT_COLORS = {available: COLORS.ok, ejected: COLORS.error, unhealthy: COLORS.timeout, leaving: COLORS.skipped};

function drawUpstreams(ups) {
  const box = document.getElementById("upstreams");
  const all = ups && ups.upstreams && typeof ups.upstreams === "object" ? Object.entries(ups.upstreams) : null;
  if (!all) { box.replaceChildren(el("div", {"class": "empty"}, "\u2014")); return; }
  if (!all.length) { box.replaceChildren(el("div", {"class": "empty"}, "no upstreams configured")); return; }
  const rows = [];
  for (const [name, u] of all) {
    for (const e of Array.isArray(u.endpoints) ? u.endpoints : []) {
      const state = String(e.state ?? "");
      const calls = e.calls || {};
      const labels = {"data-upstream": name, "data-endpoint": String(e.address ?? "")};
      rows.push(el("tr", {},
        el("td", {"class": "l mono", title: name + (u.panic ? " (panic: no endpoint available)" : "")},
           name, u.panic ? " \u26a0" : ""),
        el("td", {"class": "l mono", title: String(e.address ?? "")}, String(e.address ?? "")),
        el("td", {"class": "l"}, el("span", {"class": "dot", style: `background:${ENDPOINT_COLORS[state] || COLORS.skipped}`}),
           el("span", {"class": "endpoint-state", "data-upstream": name, "data-endpoint": String(e.address ?? "")}, state)),
        el("td", {}, num("upstream_weight", numOrNull(e.weight), fmtInt, labels)),
        el("td", {}, num("upstream_in_flight", numOrNull(e.in_flight), fmtInt, labels)),
        el("td", {}, num("upstream_ok", numOrNull(calls.ok), fmtInt, labels)),
        el("td", {}, num("upstream_failure", numOrNull(calls.failure), fmtInt, labels, calls.failure ? "bad" : "")),
        el("td", {}, num("upstream_failures_in_row", numOrNull(e.failures_in_row), fmtInt, labels))));
    }
  }
  box.replaceChildren(el("table", {},
    el("thead", {}, el("tr", {}, el("th", {"class": "l"}, "upstream"), el("th", {"class": "l"}, "endpoint"),
                       el("th", {"class": "l"}, "state"), el("th", {}, "weight"), el("th", {}, "in flight"),
                       el("th", {}, "ok"), el("th", {}, "failures"), el("th", {}, "in a row"))),
    el("tbody", {}, ...rows)));
}

function latencyCell(metric, v, capped, labels, window) {
  return el("td", {title: window === "interval" ? "last scrape interval" : "since start (nothing in the last interval)"},
            num(metric, v, fmtMs, Object.assign({"data-window": window}, labels), window === "all" ? "muted" : "",
                capped ? "\u2265 " : ""));
}

// The section column keeps its width (names wrap inside it); the table scrolls sideways in its
// card when the window is narrower than all the columns, rather than squeezing the names.
const SECTION_COLS = [["section", 150], ["calls/s", 64], ["status mix, last 60 s", 206],
  ["ok", 66], ["timeout", 82], ["error", 68], ["rejected", 82], ["skipped", 80],
  ["p50", 72], ["p99", 72], ["cache hit", 116], ["retries", 62], ["degraded", 76],
  ["hedges won", 96], ["rejected: bulkhead / circuit", 118], ["circuit", 76]];
// The header's first row groups the columns (first column, span, label).
const SECTION_GROUPS = [[3, 5, "outcomes since start"], [8, 2, "latency, last interval"],
                        [11, 4, "since start"]];

function sectionTable(r) {
  const cols = el("colgroup", {}, ...SECTION_COLS.map(([, w]) => el("col", w ? {style: `width: ${w}px`} : {})));
  const groups = [];
  for (let i = 0, g = 0; i < SECTION_COLS.length; ) {
    const grp = SECTION_GROUPS[g];
    if (grp && grp[0] === i) {
      groups.push(el("th", {colspan: grp[1], "class": "group"}, grp[2]));
      i += grp[1];
      g++;
    } else {
      groups.push(el("th", {"class": "group"}));
      i++;
    }
  }
  const head = el("tr", {}, ...SECTION_COLS.map(([name], i) => {
    if (STATUSES.includes(name))
      return el("th", {title: name + ": total since start"},
                el("span", {"class": "dot", style: `background:${COLORS[name]}`}), " ", name);
    return el("th", {"class": i === 0 || i === 2 ? "l" : ""}, name);
  }));
  const secOrder = order.sections.get(r.name) || [];
  const rows = [];
  for (const name of secOrder) {
    const s = r.sections.get(name);
    if (!s) continue;
    const L = {"data-route": r.name, "data-section": s.name};
    const mix = s.mix.counts;
    let mixTotal = 0;
    for (const st of STATUSES) mixTotal += mix[st];
    const title = (s.mix.window === "60s" ? "last 60 s: " : "since start: ") +
                  STATUSES.map(st => `${st} ${mix[st]}`).join(", ");
    const cells = [
      el("td", {"class": "l name", title: s.name}, s.name),
      el("td", {}, num("section_calls_per_s", s.cps, fmtRate, L)),
      el("td", {"class": "l mix"}, mixBar(mix, s.mix.window === "all", title),
         el("span", {"class": "share small"},
            num("section_ok_share", mixTotal ? mix.ok / mixTotal : null, fmtPct,
                Object.assign({"data-window": s.mix.window}, L)), mixTotal ? " ok" : "")),
    ];
    for (const st of STATUSES)
      cells.push(el("td", {}, num("section_total", s.status[st], fmtInt, Object.assign({"data-status": st}, L),
                                  s.status[st] ? "st-" + st : "zero")));
    cells.push(latencyCell("section_p50_ms", s.lat.p50, s.lat.p50capped, L, s.lat.window));
    cells.push(latencyCell("section_p99_ms", s.lat.p99, s.lat.p99capped, L, s.lat.window));
    if (s.hit && s.hit.lookups > 0) {
      const W = Object.assign({"data-window": s.hit.window}, L);
      cells.push(el("td", {title: (s.hit.window === "60s" ? "last 60 s" : "since start") +
                               ": hits / (hits + misses + coalesced)" +
                               (s.cache ? `; stale ${s.cache.stale} since start` : "")},
                    num("cache_hit_ratio", s.hit.ratio, fmtPct, W),
                    el("span", {"class": "small muted"}, " ", num("cache_hits", s.hit.hits, fmtInt, W), "/",
                       num("cache_lookups", s.hit.lookups, fmtInt, W))));
    } else {
      cells.push(el("td", {"class": "muted", title: "no cache lookups"}, "\u2014"));
    }
    cells.push(el("td", {}, num("retries_total", s.retries, fmtInt, L, s.retries ? "" : "zero")));
    cells.push(el("td", {}, num("degraded_total", s.degraded, fmtInt, L, s.degraded ? "st-timeout" : "zero")));
    cells.push(resilienceCells(s, L));
    cells.push(el("td", {"class": "small"},
                  num("rejected_max_concurrent_total", s.rejectedBy && s.rejectedBy.max_concurrent, fmtInt, L,
                      s.rejectedBy && s.rejectedBy.max_concurrent ? "st-rejected" : "zero"),
                  " / ",
                  num("rejected_circuit_open_total", s.rejectedBy && s.rejectedBy.circuit_open, fmtInt, L,
                      s.rejectedBy && s.rejectedBy.circuit_open ? "st-rejected" : "zero")));
    cells.push(circuitCell(s, L));
    rows.push(el("tr", {"data-route": r.name, "data-section": s.name}, ...cells));
  }
  return el("table", {"class": "sections"}, cols, el("thead", {}, el("tr", {}, ...groups), head), el("tbody", {}, ...rows));
}

// Hedges won of the attempts that had hedge calls (docs/resilience.md: won + lost).
function resilienceCells(s, L) {
  const won = s.hedges ? s.hedges.won : null, all = s.hedges ? s.hedges.won + s.hedges.lost : null;
  return el("td", {"class": "small", title: "attempts with hedge calls that ended ok: won by a hedge / all"},
            num("hedges_won_total", won, fmtInt, L, won ? "" : "zero"), " / ",
            num("hedged_attempts_total", all, fmtInt, L, all ? "" : "zero"));
}

function circuitCell(s, L) {
  const open = s.circuitOpen === null ? null : s.circuitOpen > 0 ? 1 : 0;
  const label = open === null ? "\u2014" : open ? "open" : "closed";
  const td = el("td", {"class": open ? "st-error" : "muted",
                       title: "1 while open or half-open; times it opened since start: " + (s.circuitMoves ?? 0)});
  const attrs = Object.assign({"class": "num", "data-metric": "circuit_open", "data-value": open === null ? "" : String(open)}, L);
  td.append(el("span", attrs, label));
  if (s.circuitMoves)
    td.append(el("span", {"class": "small"}, " \u00d7", num("circuit_opened_total", s.circuitMoves, fmtInt, L)));
  return td;
}

function stat(label, ...value) {
  return el("div", {"class": "stat"}, el("span", {"class": "label"}, label), el("span", {"class": "v"}, ...value));
}

function routeCard(r) {
  const L = {"data-route": r.name};
  const rpsHist = history.map(h => { const x = h.routes.get(r.name); return x ? x.rps : null; });
  const p99Hist = history.map(h => { const x = h.routes.get(r.name); return x && x.lat.window === "interval" ? x.lat.p99 : null; });
  const codes = el("div", {"class": "stat codes"}, el("span", {"class": "label"}, "answers by status"),
                   el("span", {"class": "small"}, ...[...r.codes.keys()].sort().flatMap(code => [
                     el("span", {"class": Number(code) < 400 ? "muted" : "st-error"}, code + " \u00d7"),
                     num("requests_code_total", r.codes.get(code), fmtInt, Object.assign({"data-code": code}, L))])));
  if (!r.codes.size) codes.lastChild.append(el("span", {"class": "muted"}, "none yet"));
  const errWin = r.errWindow.window;
  const summary = el("summary", {},
    el("span", {"class": "route-name", title: r.name}, r.name === "" ? "(no route label)" : r.name),
    el("div", {"class": "stat-row"}, stat("requests/s", num("requests_per_s", r.rps, fmtRate, L)),
       sparkline(rpsHist, "#4b6bfb")),
    el("div", {"class": "stat-row"},
       stat("p50", num("p50_ms", r.lat.p50, fmtMs, Object.assign({"data-window": r.lat.window}, L), "",
                       r.lat.p50capped ? "\u2265 " : "")),
       stat("p99", num("p99_ms", r.lat.p99, fmtMs, Object.assign({"data-window": r.lat.window}, L), "",
                       r.lat.p99capped ? "\u2265 " : "")),
       sparkline(p99Hist, "#c2410c")),
    stat(errWin === "60s" ? "errors, last 60 s" : "errors, since start",
         num("error_ratio", r.errRatio, fmtPct, Object.assign({"data-window": errWin}, L),
             r.errRatio > 0 ? "bad" : "")),
    stat("requests", num("requests_total", r.requests, fmtInt, L)),
    stat("not 200", num("request_errors_total", r.errTotal, fmtInt, L, r.errTotal ? "st-error" : "")),
    codes);
  const d = el("details", {"class": "route", "data-route": r.name}, summary);
  if (!closed.has(r.name)) d.open = true;
  d.addEventListener("toggle", () => { if (d.open) closed.delete(r.name); else closed.add(r.name); });
  if (r.sections.size) d.append(el("div", {"class": "route-body"}, sectionTable(r)));
  return d;
}

function drawRoutes(m) {
  const box = document.getElementById("routes");
  if (!m) return;
  const cards = [];
  for (const name of order.routes) {
    const r = m.routes.get(name);
    if (r) cards.push(routeCard(r));
  }
  if (!cards.length) cards.push(el("div", {"class": "panel empty"}, "no route series in /metrics yet"));
  box.replaceChildren(...cards);
  // A name its cell cannot show whole is marked (its tooltip still carries it): the tests read it.
  for (const td of box.querySelectorAll("td.name"))
    td.classList.toggle("clipped", td.scrollWidth > td.clientWidth);
}

function drawStatus(problems) {
  const st = document.getElementById("status");
  st.replaceChildren(
    "poll ", num("polls", polls, fmtInt), " \u00b7 scrapes ", num("scrapes", scrapes, fmtInt),
    " \u00b7 ", lastScrapeAt ? "updated " + lastScrapeAt.toLocaleTimeString() : "no data yet",
    prev && finite(prev.dt) ? ` \u00b7 interval ${prev.dt.toFixed(2)} s` : "");
  document.getElementById("problems").replaceChildren(
    ...(problems.length ? [num("problems", problems.length, fmtInt, {}, "", "\u26a0 "), " ", problems.join("; ")]
                        : []));
}

// ------------------------------------------------------------------------------ polling

async function fetchText(url) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
  try {
    const res = await fetch(url, {cache: "no-store", signal: ctl.signal});
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return await res.text();
  } finally {
    clearTimeout(timer);
  }
}

async function poll() {
  const started = performance.now();
  const problems = [];
  // Relative URLs: the page works behind a proxy that adds a path prefix.
  const [metricsText, debugText, upstreamsText] = await Promise.allSettled(
    [fetchText("metrics"), fetchText("debug/actors"), fetchText("debug/upstreams")]);
  polls++;
  let model = null;
  if (metricsText.status === "fulfilled") {
    try {
      model = buildModel(parseProm(metricsText.value), performance.now());
    } catch (e) {
      problems.push("/metrics: " + e.message);
    }
  } else {
    problems.push("/metrics: " + (metricsText.reason && metricsText.reason.message || "unreachable"));
  }
  let dbg = null;
  if (debugText.status === "fulfilled") {
    try {
      dbg = JSON.parse(debugText.value);
      if (!dbg || typeof dbg !== "object") throw new Error("not a JSON object");
    } catch (e) {
      dbg = null;
      problems.push("/debug/actors: " + e.message);
    }
  } else {
    problems.push("/debug/actors: " + (debugText.reason && debugText.reason.message || "unreachable"));
  }
  if (dbg) lastDebug = dbg;
  let ups = null;
  if (upstreamsText.status === "fulfilled") {
    try { ups = JSON.parse(upstreamsText.value); } catch (e) { problems.push("/debug/upstreams: " + e.message); }
  } else if (upstreamsText.reason && upstreamsText.reason.message === "HTTP 404") {
    ups = {upstreams: {}}; // a gateway without the endpoint: none to show, nothing wrong
  } else {
    problems.push("/debug/upstreams: " + (upstreamsText.reason && upstreamsText.reason.message || "unreachable"));
  }
  if (model) {
    model.dbg = dbg;
    while (history.length && model.t - history[0].t > WINDOW_MS) history.shift();
    derive(model, prev, history.length ? history[0] : null);
    history.push(model);
    prev = model;
    scrapes++;
    lastScrapeAt = new Date();
    for (const r of model.routes.values()) {
      remember(order.routes, r.name);
      if (!order.sections.has(r.name)) order.sections.set(r.name, []);
      for (const s of r.sections.keys()) remember(order.sections.get(r.name), s);
    }
  }
  try {
    drawTiles(prev, dbg || lastDebug);
    drawNodes(prev, dbg || lastDebug);
    drawSlowest(dbg);
    drawUpstreams(ups);
    drawRoutes(prev);
  } catch (e) {
    problems.push("drawing: " + e.message);
  }
  drawStatus(problems);
  setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - started)));
}

// For scripts and tests in the page's context.
window.gatherDashboard = {parseProm, buildModel, histQuantile, latency, windowed};
poll();
})();
