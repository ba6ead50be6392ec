"use strict";
// erpsim view: draws the charts and runs the event-log browser. No network: every figure
// and every page of the log is in this file (or, under --serve, fetched from the server).
(function () {
  window.erpsimErrors = [];

  function b64bytes(text) {
    const bin = atob(text.trim());
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  async function gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer();
  }

  function drawCharts() {
    const jobs = [];
    document.querySelectorAll("div.chart[data-fig]").forEach(function (div) {
      const spec = document.getElementById("fig-" + div.dataset.fig);
      if (!spec) return;
      const fig = JSON.parse(spec.textContent);
      jobs.push(Plotly.newPlot(div, fig.data, fig.layout,
                               {displaylogo: false, responsive: true}).then(function () {
        div.dataset.rendered = "1";
      }));
    });
    return Promise.all(jobs);
  }

  // ---- the event log ----------------------------------------------------------------
  const PAGE = 100;
  const log = {};

  async function chunkRows(n) {
    if (log.cache.has(n)) return log.cache.get(n);
    let text;
    if (log.chunkUrl) {
      const r = await fetch(log.chunkUrl + n);
      if (!r.ok) throw new Error("chunk " + n + ": HTTP " + r.status);
      text = await r.text();
    } else {
      text = document.getElementById("chunk-" + n).textContent;
    }
    const rows = JSON.parse(new TextDecoder().decode(await gunzip(b64bytes(text))));
    log.cache.set(n, rows);
    return rows;
  }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function fillSelect(id, values, counts) {
    const s = document.getElementById(id);
    if (!s) return;
    values.forEach(function (v, i) {
      const o = el("option", {value: String(i)}, counts ? v + " (" + counts[i] + ")" : v);
      s.appendChild(o);
    });
  }

  function readFilters() {
    const f = {};
    ["type", "actor", "realm"].forEach(function (c) {
      const v = document.getElementById("f-" + c).value;
      f[c] = v === "" ? -1 : Number(v);
    });
    f.from = document.getElementById("f-from").value;
    f.to = document.getElementById("f-to").value;
    f.stream = document.getElementById("f-stream").value.trim().toLowerCase();
    return f;
  }

  function applyFilters() {
    const f = readFilters();
    const n = log.count, col = log.col;
    const t = col.type, a = col.actor, r = col.realm, d = col.date, s = col.stream;
    const from = f.from === "" ? 0 : Number(f.from);
    const to = f.to === "" ? 1e9 : Number(f.to);
    let streamMask = null;
    if (f.stream) {
      const names = log.dict.stream;
      streamMask = new Uint8Array(names.length);
      for (let i = 0; i < names.length; i++) {
        if (names[i].toLowerCase().indexOf(f.stream) >= 0) streamMask[i] = 1;
      }
    }
    const out = new Int32Array(n);
    let m = 0;
    for (let i = 0; i < n; i++) {
      if (f.type >= 0 && t[i] !== f.type) continue;
      if (f.actor >= 0 && a[i] !== f.actor) continue;
      if (f.realm >= 0 && r[i] !== f.realm) continue;
      if (d[i] < from || d[i] > to) continue;
      if (streamMask !== null && !streamMask[s[i]]) continue;
      out[m++] = i;
    }
    log.matches = out.subarray(0, m);
    log.page = 0;
    return showPage();
  }

  async function showPage() {
    const body = document.getElementById("log-rows");
    const total = log.matches.length;
    const start = log.page * PAGE, end = Math.min(total, start + PAGE);
    const need = new Set();
    for (let k = start; k < end; k++) need.add(Math.floor(log.matches[k] / log.chunkSize));
    const loaded = {};
    for (const c of need) loaded[c] = await chunkRows(c);
    const frag = document.createDocumentFragment();
    for (let k = start; k < end; k++) {
      const i = log.matches[k];
      const row = loaded[Math.floor(i / log.chunkSize)][i % log.chunkSize];
      const tr = el("tr", {"class": "ev", "data-position": String(row[0])});
      [row[0], row[4], row[3], row[2], row[6], row[1]].forEach(function (v) {
        tr.appendChild(el("td", {title: String(v)}, String(v)));
      });
      tr.addEventListener("click", function () { toggleDetail(tr, row); });
      frag.appendChild(tr);
    }
    body.replaceChildren(frag);
    document.getElementById("log-status").textContent = total === 0
      ? "no event matches (of " + log.count.toLocaleString() + ")"
      : "events " + (start + 1).toLocaleString() + "-" + end.toLocaleString() + " of " +
        total.toLocaleString() + " matching (" + log.count.toLocaleString() + " in the log)";
    document.getElementById("log-prev").disabled = log.page === 0;
    document.getElementById("log-next").disabled = end >= total;
    document.getElementById("log").dataset.matching = String(total);
  }

  function toggleDetail(tr, row) {
    const next = tr.nextSibling;
    if (next && next.classList && next.classList.contains("detail")) { next.remove(); return; }
    let payload = row[11];
    try { payload = JSON.stringify(JSON.parse(row[11]), null, 2); } catch (e) { /* as stored */ }
    const td = el("td", {colspan: "6"});
    td.appendChild(el("div", {"class": "muted"},
      "command " + (row[8] || "-") + " · role " + row[7] + " · sim time " + row[5] +
      " · causation " + (row[9] || "-") + " · correlation " + (row[10] || "-")));
    td.appendChild(el("pre", {}, payload));
    const d = el("tr", {"class": "detail"});
    d.appendChild(td);
    tr.after(d);
  }

  function setFromHash() {
    const h = location.hash;
    const q = h.indexOf("?");
    if (!h.startsWith("#log") || q < 0) return false;
    const params = new URLSearchParams(h.slice(q + 1));
    ["type", "actor", "realm"].forEach(function (c) {
      const s = document.getElementById("f-" + c);
      s.value = "";
      if (params.has(c)) {
        const i = log.dict[c].indexOf(params.get(c));
        if (i >= 0) s.value = String(i);
      }
    });
    ["from", "to"].forEach(function (c) {
      const s = document.getElementById("f-" + c);
      s.value = "";
      if (params.has(c)) {
        const i = log.dict.date.indexOf(params.get(c));
        if (i >= 0) s.value = String(i);
      }
    });
    document.getElementById("f-stream").value = params.get("stream") || "";
    return true;
  }

  async function initLog() {
    const m = document.getElementById("log-manifest");
    if (!m) return null;
    const man = JSON.parse(m.textContent);
    log.count = man.count; log.chunkSize = man.chunk_size; log.dict = man.dictionaries;
    log.chunkUrl = m.dataset.chunkUrl || null; log.cache = new Map();
    const codes = new Int32Array(await gunzip(b64bytes(man.index)));
    log.col = {};
    man.columns.forEach(function (c, k) {
      log.col[c] = codes.subarray(k * man.count, (k + 1) * man.count);
    });
    const counts = {};
    ["type", "actor", "realm"].forEach(function (c) {
      const arr = new Int32Array(log.dict[c].length);
      const col = log.col[c];
      for (let i = 0; i < col.length; i++) arr[col[i]]++;
      counts[c] = arr;
    });
    fillSelect("f-type", log.dict.type, counts.type);
    fillSelect("f-actor", log.dict.actor, counts.actor);
    fillSelect("f-realm", log.dict.realm, counts.realm);
    fillSelect("f-from", log.dict.date);
    fillSelect("f-to", log.dict.date);
    document.querySelectorAll("#log-filters select").forEach(function (s) {
      s.addEventListener("change", applyFilters);
    });
    let timer = null;
    document.getElementById("f-stream").addEventListener("input", function () {
      clearTimeout(timer); timer = setTimeout(applyFilters, 150);
    });
    document.getElementById("f-clear").addEventListener("click", function () {
      document.querySelectorAll("#log-filters select").forEach(function (s) { s.value = ""; });
      document.getElementById("f-stream").value = "";
      applyFilters();
    });
    document.getElementById("log-prev").addEventListener("click", function () {
      if (log.page > 0) { log.page--; showPage(); }
    });
    document.getElementById("log-next").addEventListener("click", function () {
      if ((log.page + 1) * PAGE < log.matches.length) { log.page++; showPage(); }
    });
    window.addEventListener("hashchange", function () {
      if (setFromHash()) applyFilters();
    });
    setFromHash();
    await applyFilters();
  }

  // plotly.js (4-5 MB) is evaluated after the first render, from a blob script: the page's
  // tables and the first page of the log show at once, then the charts are drawn.
  function loadPlotly() {
    if (typeof Plotly !== "undefined") return Promise.resolve();
    const src = document.getElementById("plotly-src");
    const url = src ? null : document.body.dataset.plotlySrc;
    if (!src && !url) return Promise.resolve();
    return new Promise(function (resolve, reject) {
      const s = document.createElement("script");
      s.src = url || URL.createObjectURL(new Blob([src.textContent], {type: "text/javascript"}));
      s.onload = resolve;
      s.onerror = function () { reject(new Error("plotly.js did not load")); };
      document.head.appendChild(s);
    });
  }

  window.addEventListener("error", function (e) { window.erpsimErrors.push(String(e.message)); });
  document.addEventListener("DOMContentLoaded", function () {
    initLog().then(function () {
      window.erpsimFirstRenderMs = performance.now();  // since navigation start
      document.body.dataset.firstRender = "1";
      return new Promise(function (r) { requestAnimationFrame(function () { setTimeout(r, 0); }); });
    }).then(loadPlotly).then(function () {
      return document.querySelector("div.chart[data-fig]") ? drawCharts() : null;
    }).then(function () {
      window.erpsimRenderMs = performance.now();  // since navigation start
      document.body.dataset.rendered = "1";
    }).catch(function (e) {
      window.erpsimErrors.push(String(e));
      console.error("erpsim view: " + e);
      document.body.dataset.rendered = "error";
    });
  });
})();
