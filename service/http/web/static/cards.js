/* Card faces: the ten cards as SVG, drawn in the browser (no image files, no external assets).
 *
 * LL.cards.face(name, {ruleset, size}) -> an <svg> with the card's value, name, an emblem and a
 * one-line effect; LL.cards.back() -> the face-down card. Values depend on the ruleset (the
 * classic King is worth 6, the 2019 King 7), so a face is always drawn for one ruleset. The
 * table of values is the rules' table (R1-R3); LL.cards.load() replaces it with the server's
 * GET /v1/rulesets (the engine's own tables), so the pages follow the engine. LL.cards.tracker()
 * is the card tracker both tables show: per card, its copies, how many the table has seen this
 * round and how many may remain.
 */
"use strict";

LL.cards = (() => {
  const { svg } = LL;

  // Values by ruleset, in card order (spy ... princess); null: the ruleset has no such card.
  const ORDER = ["spy", "guard", "priest", "baron", "handmaid", "prince", "chancellor", "king", "countess", "princess"];
  const VALUES = {
    classic: [null, 1, 2, 3, 4, 5, null, 6, 7, 8],
    2019: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    "2019-classic": [null, 1, 2, 3, 4, 5, null, 7, 8, 9],
  };

  // Copies of each card in a round's deck, by ruleset, in card order (R1-R3); load() replaces
  // them with the server's.
  const COPIES = {
    classic: [0, 5, 2, 2, 2, 2, 0, 1, 1, 1],
    2019: [2, 6, 2, 2, 2, 2, 2, 1, 1, 1],
    "2019-classic": [0, 5, 2, 2, 2, 2, 0, 1, 1, 1],
  };

  const EFFECT = {
    spy: "At round end, if only you played or discarded a Spy, gain a token.",
    guard: "Name a card other than Guard: if another player holds it, they are out.",
    priest: "Look at another player's hand.",
    baron: "Compare hands with another player: the lower card is out.",
    handmaid: "Other players' cards cannot target you until your next turn.",
    prince: "A player (you too) discards their hand and draws a new card.",
    chancellor: "Draw 2 cards, keep 1, put the rest at the bottom of the deck.",
    king: "Trade hands with another player.",
    countess: "Must be played if you also hold the King or a Prince.",
    princess: "If you play or discard her, you are out of the round.",
  };

  // Each card's colour (frame, banner) and a light tint (background).
  const COLOUR = {
    spy: ["#37474f", "#eceff1"], guard: ["#5d6d7e", "#eef1f4"], priest: ["#2e7d6b", "#e6f4ef"],
    baron: ["#6d4c41", "#f3ece8"], handmaid: ["#3f6fb0", "#e8f0fa"], prince: ["#7b3fa0", "#f2eaf7"],
    chancellor: ["#8a6d1d", "#f8f1dc"], king: ["#b8860b", "#fbf3da"], countess: ["#a4243b", "#f9e7ea"],
    princess: ["#c2417d", "#fbe8f1"],
  };

  // Emblems in a 60x60 box: plain shapes, so they read at 40 px and at 200 px.
  const EMBLEM = {
    spy: '<path d="M6 26c8-8 16-8 24-2 8-6 16-6 24 2-2 10-10 14-18 10l-6-4-6 4C16 40 8 36 6 26z"/>' +
         '<ellipse cx="19" cy="28" rx="5" ry="3" fill="#fff"/><ellipse cx="41" cy="28" rx="5" ry="3" fill="#fff"/>',
    guard: '<path d="M30 4 36 16h-4v40h-4V16h-4z"/><path d="M12 26h36v4H12z" opacity=".6"/>' +
           '<path d="M30 30c6 0 10 4 10 10s-4 10-10 14c-6-4-10-8-10-14s4-10 10-10z" opacity=".85"/>',
    priest: '<path d="M4 30c8-12 17-18 26-18s18 6 26 18c-8 12-17 18-26 18S12 42 4 30z" fill="none" stroke-width="4"/>' +
            '<circle cx="30" cy="30" r="9"/><circle cx="27" cy="27" r="3" fill="#fff"/>',
    baron: '<path d="M28 6h4v44h-4z"/><path d="M10 14h40v3H10z"/><path d="M18 52h24v4H18z"/>' +
           '<path d="M4 34 12 17l8 17z" fill="none" stroke-width="3"/><path d="M3 34h18a9 6 0 0 1-18 0z"/>' +
           '<path d="M40 34l8-17 8 17z" fill="none" stroke-width="3"/><path d="M39 34h18a9 6 0 0 1-18 0z"/>',
    handmaid: '<path d="M30 4 52 12v18c0 14-10 22-22 26C18 52 8 44 8 30V12z"/>' +
              '<path d="M30 14 44 19v11c0 9-6 14-14 17-8-3-14-8-14-17V19z" fill="#fff" opacity=".9"/>' +
              '<path d="M30 22l3 6h6l-5 4 2 7-6-4-6 4 2-7-5-4h6z"/>',
    prince: '<path d="M10 44 8 18l12 12 10-16 10 16 12-12-2 26z"/><path d="M10 48h40v6H10z"/>' +
            '<circle cx="30" cy="36" r="4" fill="#fff"/>',
    chancellor: '<path d="M14 8h30a6 6 0 0 1 0 12H14z" opacity=".7"/><path d="M14 14h28v36H14z"/>' +
                '<path d="M14 44h34a6 6 0 0 1 0 12H14a6 6 0 0 1 0-12z" opacity=".7"/>' +
                '<path d="M19 22h18v2H19zM19 28h18v2H19zM19 34h12v2H19z" fill="#fff"/>',
    king: '<path d="M6 46 4 12l13 14 13-20 13 20 13-14-2 34z"/><path d="M6 50h48v6H6z"/>' +
          '<circle cx="17" cy="38" r="3" fill="#fff"/><circle cx="30" cy="36" r="4" fill="#fff"/>' +
          '<circle cx="43" cy="38" r="3" fill="#fff"/>',
    countess: '<circle cx="30" cy="24" r="8"/><circle cx="30" cy="12" r="7" opacity=".75"/>' +
              '<circle cx="41" cy="21" r="7" opacity=".75"/><circle cx="37" cy="34" r="7" opacity=".75"/>' +
              '<circle cx="23" cy="34" r="7" opacity=".75"/><circle cx="19" cy="21" r="7" opacity=".75"/>' +
              '<path d="M29 40h2v18h-2z"/><path d="M31 50c6-6 12-6 14-4-4 4-8 5-14 4z" opacity=".7"/>',
    princess: '<path d="M30 54C10 40 4 30 4 20 4 11 11 5 19 5c5 0 9 3 11 7 2-4 6-7 11-7 8 0 15 6 15 15 0 10-6 20-26 34z"/>' +
              '<path d="M14 22 46 22 46 40 14 40z" fill="#fff" opacity=".92"/><path d="M14 22 30 33 46 22" fill="none" stroke-width="2"/>',
  };

  function values(ruleset) { return VALUES[ruleset] || VALUES["2019"]; }

  /** The card's value in `ruleset` (null if the ruleset has no such card). */
  function value(name, ruleset) {
    const i = ORDER.indexOf(name);
    return i < 0 ? null : values(ruleset)[i];
  }

  /** The cards of `ruleset`, in card order. */
  function inRuleset(ruleset) { return ORDER.filter((n, i) => values(ruleset)[i] !== null); }

  function title(name) { return name ? name[0].toUpperCase() + name.slice(1) : ""; }

  /** Break `text` into lines of at most `width` characters (at spaces). */
  function wrap(text, width) {
    const lines = [];
    let line = "";
    for (const word of text.split(" ")) {
      if (line && (line + " " + word).length > width) { lines.push(line); line = word; }
      else line = line ? line + " " + word : word;
    }
    if (line) lines.push(line);
    return lines;
  }

  function text(x, y, s, attrs) {
    const t = svg("text", { x, y, ...attrs });
    t.textContent = s;
    return t;
  }

  /** The face of `name` as an SVG element, 100x140 units (scaled by CSS or `width`). */
  function face(name, { ruleset = "2019", width = null, label = null } = {}) {
    const [ink, tint] = COLOUR[name] || ["#555", "#eee"];
    const v = value(name, ruleset);
    const node = svg("svg", {
      class: "cardface", viewBox: "0 0 100 140", role: "img", "data-card": name,
      "aria-label": label || `${title(name)}${v === null ? "" : ` (${v})`}: ${EFFECT[name] || ""}`,
    });
    if (width) node.style.width = `${width}px`;
    const t = svg("title");
    t.textContent = `${title(name)}${v === null ? "" : `, value ${v}`}: ${EFFECT[name] || ""}`;
    node.append(t);
    node.append(svg("rect", { x: 1.5, y: 1.5, width: 97, height: 137, rx: 8, fill: "#fffdf8", stroke: ink, "stroke-width": 3 }));
    node.append(svg("rect", { x: 6, y: 6, width: 88, height: 128, rx: 5, fill: tint }));
    // value medallion and name banner
    node.append(svg("circle", { cx: 19, cy: 19, r: 11, fill: ink }));
    node.append(text(19, 24.5, v === null ? "–" : String(v), { "text-anchor": "middle", fill: "#fff", "font-size": 15, "font-weight": 700, "font-family": "Georgia, serif" }));
    node.append(svg("rect", { x: 32, y: 11, width: 60, height: 16, rx: 3, fill: ink }));
    const nm = title(name);
    node.append(text(62, 23, nm, { "text-anchor": "middle", fill: "#fff", "font-size": nm.length > 8 ? 9.2 : 11, "font-weight": 700, "font-family": "Georgia, serif", "letter-spacing": ".3" }));
    // emblem
    const g = svg("g", { transform: "translate(22 34) scale(0.93)", fill: ink, stroke: ink });
    g.innerHTML = EMBLEM[name] || "";
    for (const shape of g.querySelectorAll("*")) if (!shape.getAttribute("stroke-width")) shape.setAttribute("stroke-width", "0");
    node.append(g);
    // effect, wrapped
    node.append(svg("line", { x1: 14, y1: 95, x2: 86, y2: 95, stroke: ink, "stroke-width": 0.8, opacity: 0.5 }));
    wrap(EFFECT[name] || "", 24).slice(0, 4).forEach((line, i) =>
      node.append(text(50, 105 + i * 8.6, line, { "text-anchor": "middle", fill: "#2b2118", "font-size": 7, "font-family": "system-ui, sans-serif" })));
    return node;
  }

  /** A small chip for lists (discards, what you know, results): the card's colour, value and
   *  name, readable at 24 px high where a whole face would not be. */
  function chip(name, { ruleset = "2019" } = {}) {
    const [ink] = COLOUR[name] || ["#555"];
    const v = value(name, ruleset);
    const nm = title(name);
    const w = 32 + nm.length * 7.6;
    const node = svg("svg", { class: "cardchip", viewBox: `0 0 ${w} 24`, width: w, height: 24, role: "img", "data-card": name,
                              "aria-label": `${nm}${v === null ? "" : ` (${v})`}` });
    const t = svg("title");
    t.textContent = `${nm}${v === null ? "" : `, value ${v}`}`; // no effect text: it names other cards
    node.append(t);
    node.append(svg("rect", { x: 0.75, y: 0.75, width: w - 1.5, height: 22.5, rx: 5, fill: "#fffdf8", stroke: ink, "stroke-width": 1.5 }));
    node.append(svg("circle", { cx: 12, cy: 12, r: 8.5, fill: ink }));
    node.append(text(12, 16, v === null ? "–" : String(v), { "text-anchor": "middle", fill: "#fff", "font-size": 11, "font-weight": 700, "font-family": "Georgia, serif" }));
    node.append(text(24, 16.5, nm, { fill: ink, "font-size": 11.5, "font-weight": 700, "font-family": "system-ui, sans-serif" }));
    return node;
  }

  /** The back of a card (no name, no data-card: nothing about which card it is). */
  function back({ width = null } = {}) {
    const node = svg("svg", { class: "cardface back", viewBox: "0 0 100 140", role: "img", "aria-label": "a face-down card" });
    if (width) node.style.width = `${width}px`;
    node.innerHTML =
      '<defs><pattern id="llb" width="10" height="10" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' +
      '<rect width="10" height="10" fill="#a4243b"/><rect width="5" height="10" fill="#b8465a"/></pattern></defs>' +
      '<rect x="1.5" y="1.5" width="97" height="137" rx="8" fill="#fffdf8" stroke="#7b1b2c" stroke-width="3"/>' +
      '<rect x="7" y="7" width="86" height="126" rx="5" fill="url(#llb)"/>' +
      '<circle cx="50" cy="70" r="19" fill="#fffdf8"/>' +
      '<path d="M37 62h26v17H37z" fill="#a4243b"/><path d="M37 62l13 9 13-9" fill="none" stroke="#fffdf8" stroke-width="2"/>';
    return node;
  }

  /** How many copies of `name` a round's deck holds in `ruleset`. */
  function copies(name, ruleset) {
    const i = ORDER.indexOf(name);
    return i < 0 ? 0 : (COPIES[ruleset] || COPIES["2019"])[i];
  }

  /** The card tracker's counts from what the whole table has seen this round: every seat's
   *  discards (played, discarded by a Prince, revealed on leaving the round) and the face-up
   *  cards. Only public information: the same counts on a player's table and a spectator's.
   *  -> [{card, copies, seen, left}] in card order; `left` may remain in a hand, the deck or
   *  the set-aside card. */
  function track(ruleset, discards, faceUp) {
    const seen = new Map();
    for (const c of [...discards.flat(), ...(faceUp || [])]) seen.set(c, (seen.get(c) || 0) + 1);
    return inRuleset(ruleset).map((card) => {
      const n = copies(card, ruleset);
      const s = seen.get(card) || 0;
      return { card, copies: n, seen: s, left: Math.max(0, n - s) };
    });
  }

  /** The tracker as a table: card, copies, seen, may remain (a row whose copies are all seen
   *  is marked `gone`). */
  function tracker(ruleset, discards, faceUp) {
    const { el } = LL;
    return el("table", { class: "tracker", "aria-label": "card tracker: copies of each card, seen this round, may remain" },
      el("thead", {}, el("tr", {}, el("th", {}, "card"), el("th", { class: "num" }, "copies"),
        el("th", { class: "num" }, "seen"), el("th", { class: "num", title: "in a hand, the deck or set aside" }, "may remain"))),
      el("tbody", {}, track(ruleset, discards, faceUp).map((t) =>
        el("tr", { class: t.left === 0 ? "gone" : null, dataset: { card: t.card, copies: t.copies, seen: t.seen, left: t.left } },
          el("td", {}, chip(t.card, { ruleset })), el("td", { class: "num" }, t.copies),
          el("td", { class: "num" }, t.seen), el("td", { class: "num left" }, t.left)))));
  }

  /** Use the server's card tables (GET /v1/rulesets) when it offers them. */
  async function load() {
    try {
      const { status, data } = await LL.getJSON("/v1/rulesets", { tries: 1, allow404: true });
      if (status !== 200 || !data) return;
      for (const r of data.rulesets || []) {
        if (!r.name || !Array.isArray(r.cards)) continue;
        const vals = ORDER.map(() => null);
        const copies = ORDER.map(() => 0);
        for (const c of r.cards) {
          const i = ORDER.indexOf(c.name);
          if (i >= 0 && typeof c.value === "number") vals[i] = c.value;
          if (i >= 0 && typeof c.copies === "number") copies[i] = c.copies;
        }
        VALUES[r.name] = vals;
        COPIES[r.name] = copies;
      }
    } catch (e) { /* the built-in table stands */ }
  }

  return { ORDER, EFFECT, value, inRuleset, copies, track, tracker, face, chip, back, title, load };
})();
