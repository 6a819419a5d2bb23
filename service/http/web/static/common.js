/* Love Letter Arena pages: helpers shared by every page. Plain browser JavaScript, no libraries.
   Every piece of data comes from the public JSON API; text is always set with textContent. */
"use strict";

const LL = (() => {
  const SVG_NS = "http://www.w3.org/2000/svg";

  function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

  /** GET a JSON document of the public API; retries on 429 (honouring Retry-After), 5xx and
   *  network errors a few times. Resolves to {status, data, etag}. */
  async function getJSON(path, { tries = 4, allow404 = false } = {}) {
    let last = null;
    for (let i = 0; i < tries; i++) {
      let resp;
      try {
        resp = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
      } catch (e) {
        last = e;
        await sleep(300 * (i + 1));
        continue;
      }
      if (resp.status === 429 || resp.status >= 500) {
        const wait = parseFloat(resp.headers.get("Retry-After") || "1");
        last = new Error(`${path}: HTTP ${resp.status}`);
        await sleep(Math.min(10, Math.max(0.2, wait)) * 1000);
        continue;
      }
      if (resp.status === 404 && allow404) return { status: 404, data: null, etag: null };
      if (!resp.ok) throw new Error(`${path}: HTTP ${resp.status}`);
      return { status: resp.status, data: await resp.json(), etag: resp.headers.get("ETag") };
    }
    throw last || new Error(`${path}: failed`);
  }

  /** el("a", {href: "/x", class: "y"}, "text", child, ...) */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) if (c) node.append(c);
    return node;
  }

  function clear(node, ...children) {
    node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
      .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
  }

  function fmt(x, digits = 2) {
    return x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(digits);
  }

  function pct(x) { return x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`; }

  function when(ts) {
    if (!ts) return "";
    const d = typeof ts === "number" ? new Date(ts * 1000) : new Date(ts);
    return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  function title(name) { return name ? name[0].toUpperCase() + name.slice(1) : ""; }

  /** A named card: a chip with its value and colour (cards.js) in the ruleset LL.ruleset. */
  function card(name, cls) {
    const node = el("span", { class: "card" + (cls ? " " + cls : ""), dataset: { card: name } });
    if (LL.cards) {
      node.classList.add("chipped");
      node.append(LL.cards.chip(name, { ruleset: LL.ruleset || "2019" }));
    } else node.textContent = title(name);
    return node;
  }

  function cardBack() { return el("span", { class: "card back", title: "a hidden card" }, "?"); }

  /** A match's status; an aborted match (rated for nobody) says so, with the reason on hover. */
  function statusBadge(status, aborted) {
    if (aborted) return el("span", { class: "badge aborted", title: aborted.message }, "aborted");
    return el("span", { class: `badge ${status}` }, status);
  }

  /** "fixed by creator" when the match's creator chose its seed, deck or first seat (such a
   *  creator may know every hand; rated matches never take them), else nothing. */
  function fixedBadge(options) {
    if (!options || !options.fixed_by_creator) return "";
    const what = (options.fixed_options || []).join(", ") || "the deal";
    return el("span", { class: "badge fixed", title: `the creator chose ${what}: they may know every hand` },
      "fixed by creator");
  }

  function matchLink(id) { return el("a", { href: `/matches/${encodeURIComponent(id)}` }, id); }

  function playerLink(id, name) {
    return el("a", { href: `/players/${encodeURIComponent(id)}` }, name || id);
  }

  /** Rating history (newest first, as the API returns it) -> oldest-first numbers. */
  function series(history, key = "rating") {
    return (history || []).slice().reverse().map((h) => Number(h[key]));
  }

  /** A small inline SVG line chart of `values` (oldest first). */
  function sparkline(values, w = 120, h = 28, label = "rating history") {
    const node = svg("svg", { class: "spark", width: w, height: h, viewBox: `0 0 ${w} ${h}`,
                              role: "img", "aria-label": label });
    if (!values.length) return node;
    const pad = 3;
    const lo = Math.min(...values), hi = Math.max(...values);
    const span = hi - lo || 1;
    const x = (i) => values.length === 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (values.length - 1);
    const y = (v) => h - pad - ((v - lo) * (h - 2 * pad)) / span;
    const pts = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    node.append(svg("polyline", { points: pts }));
    const last = values.length - 1;
    node.append(svg("circle", { cx: x(last).toFixed(1), cy: y(values[last]).toFixed(1), r: 2.2 }));
    const t = svg("title");
    t.textContent = `${label}: ${values.map((v) => v.toFixed(2)).join(" → ")}`;
    node.append(t);
    return node;
  }

  /** A bigger chart with axis labels: the rating (mu - 3 sigma) after each rated game, a dot
   *  per game (hover: the match, the place and mu/sigma). */
  function chart(history, w = 560, h = 160) {
    const hist = (history || []).slice().reverse();
    const node = svg("svg", { class: "chart", width: w, height: h, viewBox: `0 0 ${w} ${h}`,
                              role: "img", "aria-label": "rating history" });
    if (!hist.length) return node;
    const left = 44, right = 10, top = 10, bottom = 22;
    const vals = hist.map((p) => Number(p.rating));
    let lo = Math.min(...vals), hi = Math.max(...vals);
    const padv = Math.max(0.5, (hi - lo) * 0.1);
    lo -= padv; hi += padv;
    const n = hist.length;
    const x = (i) => n === 1 ? (left + w - right) / 2 : left + (i * (w - left - right)) / (n - 1);
    const y = (v) => top + ((hi - v) * (h - top - bottom)) / (hi - lo);
    node.append(svg("line", { class: "axis", x1: left, y1: h - bottom, x2: w - right, y2: h - bottom }));
    node.append(svg("line", { class: "axis", x1: left, y1: top, x2: left, y2: h - bottom }));
    for (const v of [hi, (hi + lo) / 2, lo]) {
      const t = svg("text", { x: left - 4, y: y(v) + 3, "text-anchor": "end" });
      t.textContent = v.toFixed(1);
      node.append(t);
    }
    const gl = svg("text", { x: w - right, y: h - 6, "text-anchor": "end" });
    gl.textContent = `rating (mu - 3 sigma) after each of ${n} rated game${n === 1 ? "" : "s"}`;
    node.append(gl);
    node.append(svg("polyline", { points: vals.map((v, i) => `${x(i)},${y(v)}`).join(" ") }));
    hist.forEach((p, i) => {
      const dot = svg("circle", { cx: x(i), cy: y(vals[i]), r: 3 });
      const t = svg("title");
      t.textContent = `${p.match_id}: place ${p.place} of ${p.players}, rating ${vals[i].toFixed(2)} ` +
        `(mu ${Number(p.mu).toFixed(2)}, sigma ${Number(p.sigma).toFixed(2)})`;
      dot.append(t);
      node.append(dot);
    });
    return node;
  }

  /** Run `fn` over `items` with at most `limit` promises at once. */
  async function eachLimited(items, limit, fn) {
    let next = 0;
    const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        try { await fn(items[i], i); } catch (e) { console.warn(e); }
      }
    });
    await Promise.all(workers);
  }

  function showError(container, err) {
    clear(container, el("p", { class: "muted" }, `Could not load: ${err.message || err}`));
  }

  return { sleep, getJSON, el, svg, clear, fmt, pct, when, title, card, cardBack, statusBadge, fixedBadge,
           matchLink, playerLink, series, sparkline, chart, eachLimited, showError };
})();
