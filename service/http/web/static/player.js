/* Player page: public profile, rating per ladder with its history chart, recent matches. */
"use strict";

(() => {
  const { el, clear, getJSON, fmt, when, chart, statusBadge, matchLink, playerLink, showError } = LL;
  const pid = document.body.dataset.player;

  async function load() {
    const ratingsBox = document.getElementById("ratings");
    const matchesBox = document.getElementById("matches");
    let data;
    try {
      ({ data } = await getJSON(`/v1/players/${encodeURIComponent(pid)}`, { allow404: true }));
    } catch (e) { showError(ratingsBox, e); return; }
    if (!data) {
      clear(ratingsBox, el("p", { class: "muted" }, "There is no such player."));
      clear(matchesBox);
      return;
    }
    document.getElementById("player-name").textContent = data.name;
    document.title = `${data.name} · Love Letter Arena`;
    document.getElementById("player-info").textContent = `id ${data.id} · registered ${when(data.created_at)}`;
    if (data.kind) document.getElementById("player-name").after(" ", el("span", { class: `badge ${data.kind}` }, data.kind));
    document.getElementById("player-info").append(" · ",
      el("a", { href: `/play?opponent=${encodeURIComponent(data.name)}` }, "challenge to a match"));
    presenceLine(data);
    // Benched for repeated aborts (absent from rated matches): shown with its reason and end.
    const benchBox = document.getElementById("bench");
    if (data.bench) clear(benchBox, el("p", { class: "bench" }, el("strong", {}, "Benched"),
      ` until ${when(data.bench.until)}: ${data.bench.reason}`));
    else clear(benchBox);
    const ladders = Object.entries(data.ratings || {});
    if (!ladders.length) clear(ratingsBox, el("p", { class: "muted" }, "Not rated on any ladder yet."));
    else clear(ratingsBox, ladders.map(([name, r]) => el("div", { class: "ladder-card", dataset: { ladder: name } },
      el("h3", {}, el("a", { href: `/ladders/${encodeURIComponent(name)}` }, name)),
      el("div", {}, `rating ${fmt(r.rating)} (μ ${fmt(r.mu)}, σ ${fmt(r.sigma)}) · ${r.games} games · ${r.wins} wins`),
      chart(r.history))));
    const ms = data.recent_matches || [];
    if (!ms.length) clear(matchesBox, el("p", { class: "muted" }, "No match yet."));
    else clear(matchesBox, el("table", { class: "board" },
      el("thead", {}, el("tr", {}, ["Match", "Status", "Ruleset", "Ladder", "Players", "Result"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ms.map((m) => {
        const me = m.players.find((p) => p.player_id === pid);
        const won = m.winners && me && m.winners.includes(me.seat);
        return el("tr", {},
          el("td", {}, matchLink(m.match_id)),
          el("td", {}, statusBadge(m.status, m.aborted)),
          el("td", {}, m.ruleset),
          el("td", {}, m.ladder || "–"),
          el("td", {}, m.players.map((p, i) => [i ? ", " : "", playerLink(p.player_id, p.name)])),
          el("td", {}, m.aborted ? "aborted (unrated)" : m.status === "finished" ? (won ? "won" : "lost") : "–"));
      }))));
    document.body.dataset.loaded = "1";
  }

  /** Online / away, and each ladder it is entered in or rated on: online there, away, or
   *  benched with the reason. */
  function presenceLine(data) {
    const box = document.getElementById("presence");
    const p = data.presence;
    if (!p) return clear(box);
    const ago = p.last_seen ? ` · last seen ${when(p.last_seen)}` : " · never polled";
    const rows = Object.entries(data.ladders || {}).map(([name, l]) => {
      const st = l.benched ? "benched" : l.present ? "online" : "away";
      return el("li", { dataset: { ladder: name, state: st } },
        el("a", { href: `/ladders/${encodeURIComponent(name)}` }, name), ": ",
        el("span", { class: `badge presence ${st}` }, st),
        l.benched && l.benched_reason ? [" ", el("span", { class: "small reason" }, l.benched_reason)] : "",
        l.entered ? "" : el("span", { class: "muted small" }, " (not entered)"));
    });
    clear(box, el("p", { id: "presence-state", dataset: { state: p.state } },
      el("span", { class: `badge presence ${p.state}` }, p.state), el("span", { class: "muted small" }, ago)),
      rows.length ? el("ul", { class: "presence-ladders" }, rows) : null);
  }

  load();
})();
