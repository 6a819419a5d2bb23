/* Ladder page: the leaderboard (sortable) with each bot's rating history as a sparkline and its
 * presence: online, away, or benched with the reason. */
"use strict";

(() => {
  const { el, clear, getJSON, fmt, pct, playerLink, sparkline, series, eachLimited } = LL;
  const ladder = document.body.dataset.ladder;
  const table = document.getElementById("leaderboard");
  const tbody = table.querySelector("tbody");
  const histories = new Map(); // player_id -> {games, values}
  let rows = [];
  let sort = { key: "rank", dir: 1 };

  /** Presence: benched (not scheduled, with the reason), online (polled within the ladder's
   *  presence window, a waiting long-poll included: it is scheduled) or away. */
  function state(r) {
    if (r.benched) return "benched";
    return r.present ? "online" : "away";
  }

  function stateCell(r) {
    const bits = [el("span", { class: `badge presence ${r.state}`, title: r.benched_reason || null }, r.state)];
    if (r.benched && r.benched_reason) bits.push(" ", el("span", { class: "small reason" }, r.benched_reason));
    if (r.provisional) bits.push(" ", el("span", { class: "badge provisional", title: "fewer games than the ladder needs for a settled rating" }, "provisional"));
    return el("td", { class: "state", dataset: { state: r.state } }, bits);
  }

  function sparkCell(r) {
    const h = histories.get(r.player_id);
    const td = el("td", { class: "history", dataset: { player: r.player_id } });
    if (h) td.append(sparkline(h.values, 120, 28, `${r.name} rating history`));
    else if (r.games) td.append(el("span", { class: "muted small" }, "…"));
    return td;
  }

  function render() {
    const sorted = rows.slice().sort((a, b) => {
      const va = a[sort.key], vb = b[sort.key];
      if (va === vb) return a.rank - b.rank;
      if (va === null || va === undefined) return 1;
      if (vb === null || vb === undefined) return -1;
      return (typeof va === "string" ? va.localeCompare(vb) : va - vb) * sort.dir;
    });
    if (!sorted.length) {
      clear(tbody, el("tr", {}, el("td", { colspan: 11, class: "muted" }, "No bot on this ladder yet.")));
    } else {
      clear(tbody, sorted.map((r) => el("tr", { dataset: { player: r.player_id } },
        el("td", { class: "num" }, r.rank),
        el("td", { class: "bot" }, playerLink(r.player_id, r.name),
           r.kind === "human" ? [" ", el("span", { class: "badge human", title: "a person, not a program" }, "human")] : ""),
        el("td", { class: "num rating" }, fmt(r.rating)),
        el("td", { class: "num" }, fmt(r.mu)),
        el("td", { class: "num" }, fmt(r.sigma)),
        el("td", { class: "num" }, r.games),
        el("td", { class: "num" }, r.wins),
        el("td", { class: "num" }, pct(r.win_rate)),
        el("td", { class: "num" }, r.timeouts ?? 0),
        stateCell(r),
        sparkCell(r))));
    }
    for (const th of table.querySelectorAll("th[data-key]")) {
      th.classList.toggle("sorted-asc", th.dataset.key === sort.key && sort.dir === 1);
      th.classList.toggle("sorted-desc", th.dataset.key === sort.key && sort.dir === -1);
    }
  }

  for (const th of table.querySelectorAll("th[data-key]")) {
    th.addEventListener("click", () => {
      const key = th.dataset.key;
      // numbers sort best-first (descending) on the first click, names A-Z; rank 1 first
      const first = th.dataset.type === "num" && key !== "rank" ? -1 : 1;
      sort = sort.key === key ? { key, dir: -sort.dir } : { key, dir: first };
      render();
    });
  }

  async function loadHistories() {
    const todo = rows.filter((r) => r.games && (histories.get(r.player_id) || {}).games !== r.games);
    await eachLimited(todo, 3, async (r) => {
      const { data } = await getJSON(`/v1/players/${encodeURIComponent(r.player_id)}`);
      const rating = (data.ratings || {})[ladder];
      histories.set(r.player_id, { games: r.games, values: series(rating ? rating.history : []) });
      const cell = tbody.querySelector(`td.history[data-player="${CSS.escape(r.player_id)}"]`);
      if (cell) cell.replaceWith(sparkCell(r));
    });
  }

  async function load() {
    try {
      const { data } = await getJSON(`/v1/ladders/${encodeURIComponent(ladder)}`, { allow404: true });
      if (!data) {
        clear(tbody, el("tr", {}, el("td", { colspan: 11, class: "muted" }, `There is no ladder named ${ladder}.`)));
        return;
      }
      document.getElementById("ladder-info").textContent =
        `${data.description || ""} — ${data.ruleset}, ${data.seats} seats, ${data.turn_timeout_s}s per turn; ` +
        `ranked by conservative rating (mu − 3 sigma); provisional below ${data.provisional_games} games.`;
      rows = data.leaderboard.map((r) => ({ ...r, state: state(r) }));
      render();
      await loadHistories();
      document.body.dataset.loaded = "1";
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
    } catch (e) {
      clear(tbody, el("tr", {}, el("td", { colspan: 11, class: "muted" }, `Could not load: ${e.message}`)));
    }
  }

  // The leaderboard refreshes itself (every 10 s; ?refresh=S to change, 0 stops).
  const every = parseFloat(new URLSearchParams(location.search).get("refresh") ?? "10");
  load();
  if (every > 0) setInterval(() => { if (!document.hidden) load(); }, Math.max(1, every) * 1000);
})();
