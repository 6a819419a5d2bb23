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

  function card(name, cls) {
    return el("span", { class: "card" + (cls ? " " + cls : ""), dataset: { card: name } }, title(name));
  }

  function cardBack() { return el("span", { class: "card back", title: "a hidden card" }, "?"); }

  function statusBadge(status) { return el("span", { class: `badge ${status}` }, status); }

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

  /** A bigger chart with axis labels: rating (mu - 3 sigma) and the mu ± 3 sigma band. */
  function chart(history, w = 560, h = 160) {
    const hist = (history || []).slice().reverse();
    const node = svg("svg", { class: "chart", width: w, height: h, viewBox: `0 0 ${w} ${h}`,
                              role: "img", "aria-label": "rating history" });
    if (!hist.length) return node;
    const left = 42, right = 8, top = 8, bottom = 20;
    const his = hist.map((p) => Number(p.mu) + 3 * Number(p.sigma));
    const los = hist.map((p) => Number(p.rating));
    const lo = Math.min(...los), hi = Math.max(...his);
    const span = hi - lo || 1;
    const n = hist.length;
    const x = (i) => n === 1 ? (left + w - right) / 2 : left + (i * (w - left - right)) / (n - 1);
    const y = (v) => top + ((hi - v) * (h - top - bottom)) / span;
    // the band between mu + 3 sigma (top) and mu - 3 sigma (the rating, bottom)
    const band = hist.map((p, i) => `${x(i)},${y(his[i])}`)
      .concat(hist.map((p, i) => `${x(n - 1 - i)},${y(los[n - 1 - i])}`));
    node.append(svg("polygon", { class: "band", points: band.join(" ") }));
    node.append(svg("line", { class: "axis", x1: left, y1: h - bottom, x2: w - right, y2: h - bottom }));
    node.append(svg("line", { class: "axis", x1: left, y1: top, x2: left, y2: h - bottom }));
    for (const v of [hi, (hi + lo) / 2, lo]) {
      const t = svg("text", { x: left - 4, y: y(v) + 3, "text-anchor": "end" });
      t.textContent = v.toFixed(1);
      node.append(t);
    }
    const gl = svg("text", { x: w - right, y: h - 5, "text-anchor": "end" });
    gl.textContent = `${n} rated game${n === 1 ? "" : "s"}`;
    node.append(gl);
    node.append(svg("polyline", { points: los.map((v, i) => `${x(i)},${y(v)}`).join(" ") }));
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

  return { sleep, getJSON, el, svg, clear, fmt, pct, when, title, card, cardBack, statusBadge,
           matchLink, playerLink, series, sparkline, chart, eachLimited, showError };
})();
