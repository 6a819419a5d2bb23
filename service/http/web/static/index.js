/* Index page: the configured ladders and lists of running and finished matches. It refreshes
 * itself every 10 s (?refresh=S to change; 0 stops), without a reload and while nobody is
 * reading a hovered or focused row. */
"use strict";

(() => {
  const { el, clear, getJSON, statusBadge, fixedBadge, matchLink, playerLink, showError } = LL;

  async function ladders() {
    const box = document.getElementById("ladders");
    try {
      const { data } = await getJSON("/v1/ladders");
      if (!data.ladders.length) return clear(box, el("p", { class: "muted" }, "No ladder is configured."));
      clear(box, data.ladders.map((l) => el("div", { class: "ladder-card" },
        el("h3", {}, el("a", { href: `/ladders/${encodeURIComponent(l.name)}` }, l.name)),
        el("div", {}, l.description || ""),
        el("div", { class: "muted small" },
           `${l.ruleset} · ${l.seats} seats · ${l.turn_timeout_s}s turns · ${l.entries} ${l.humans ? "player" : "bot"}${l.entries === 1 ? "" : "s"} entered` +
           (l.humans ? " · people welcome" : "")))));
    } catch (e) { showError(box, e); }
  }

  function matchTable(matches) {
    if (!matches.length) return el("p", { class: "muted" }, "None.");
    return el("table", { class: "board" },
      el("thead", {}, el("tr", {}, ["Match", "Status", "Ruleset", "Ladder", "Round", "Players"].map((h) => el("th", {}, h)))),
      el("tbody", {}, matches.map((m) => el("tr", {},
        el("td", {}, matchLink(m.match_id)),
        el("td", {}, statusBadge(m.status, m.aborted), " ", fixedBadge(m.options)),
        el("td", {}, m.ruleset),
        el("td", {}, m.ladder || "–"),
        el("td", { class: "num" }, m.round),
        el("td", {}, m.players.map((p, i) => [i ? ", " : "",
          (m.winners || []).includes(p.seat) ? el("span", { class: "winner", title: "winner" }, "★ ") : "", playerLink(p.player_id, p.name)]))))));
  }

  async function matches(status, id) {
    const box = document.getElementById(id);
    try {
      const { data } = await getJSON(`/v1/matches?status=${status}&limit=15`);
      clear(box, matchTable(data.matches));
    } catch (e) { showError(box, e); }
  }

  async function refresh() {
    await Promise.all([ladders(), matches("active", "active"), matches("finished", "finished")]);
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  }

  const every = parseFloat(new URLSearchParams(location.search).get("refresh") ?? "10");
  refresh();
  if (every > 0) {
    setInterval(() => {
      // don't move rows under the reader's pointer or keyboard focus
      if (document.hidden || document.querySelector("main :hover:is(tr, a), main :focus")) return;
      refresh();
    }, Math.max(1, every) * 1000);
  }
})();
