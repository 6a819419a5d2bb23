/* Play lobby: sign up (the token is shown once and kept in localStorage), who is online,
 * challenges sent and received, your matches.
 *
 * Reads: GET /v1/players/online, GET /v1/me/challenges, GET /v1/me/matches; follows
 * /v1/me/events?challenges=true (long-poll: while this page is open the person is listed online
 * as taking challenges) for `challenge`, `challenge_update` and `match_started` notices.
 * Writes: POST /v1/players {kind: "human"}, POST /v1/challenges, POST /v1/challenges/{id}/accept,
 * /decline, /cancel. When a challenge this page sent or accepted turns into a match, the page
 * goes to the table (/play/{match_id}).
 */
"use strict";

(() => {
  const { el, clear, getJSON, playerLink, sleep } = LL;
  const S = LL.session;
  const $ = (id) => document.getElementById(id);

  // Challenges this page sent or accepted: when one becomes a match, go to the table.
  const following = new Set(JSON.parse(sessionStorage.getItem("llarena.following") || "[]"));
  function follow(id) {
    following.add(id);
    sessionStorage.setItem("llarena.following", JSON.stringify([...following]));
  }
  /** To the table of the challenge's match (once: the challenge is no longer followed). */
  function goTo(challengeId, matchId) {
    following.delete(challengeId);
    sessionStorage.setItem("llarena.following", JSON.stringify([...following]));
    location.assign(`/play/${encodeURIComponent(matchId)}`);
  }

  function showError(node, err) {
    node.hidden = !err;
    node.textContent = err ? (err.code && err.code !== "http_error" ? `${err.message} (${err.code})` : String(err.message || err)) : "";
  }

  // ------------------------------------------------------------------ you

  function renderYou() {
    const me = S.get();
    $("signed-out").hidden = !!me;
    $("signed-in").hidden = !me;
    $("challenge-send").disabled = !me;
    document.body.dataset.signedIn = me ? "1" : "0";
    if (me) {
      $("me-name").textContent = me.name;
      $("me-link").href = `/players/${encodeURIComponent(me.id)}`;
    }
  }

  $("signup").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = $("signup-name").value.trim();
    showError($("you-error"), null);
    try {
      let res;
      try {
        res = await S.call("POST", "/v1/players", { body: { name, kind: "human" }, token: null });
      } catch (e) {
        // a server without player kinds refuses the field: sign up without it
        if (!(e.status === 422 && e.body && JSON.stringify(e.body.errors || {}).includes("kind"))) throw e;
        res = await S.call("POST", "/v1/players", { body: { name }, token: null });
      }
      S.save(res.data);
      renderYou();
      $("token-value").textContent = res.data.token;
      $("token-once").hidden = false;
      $("token-done").focus();
      refreshAll();
      notices();
    } catch (e) { showError($("you-error"), e); }
  });

  $("token-copy").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText($("token-value").textContent);
      $("token-copy").textContent = "Copied";
    } catch (e) { $("token-copy").textContent = "Select it and copy"; }
  });
  $("token-done").addEventListener("click", () => {
    $("token-once").hidden = true;
    $("token-value").textContent = "";
    $("opponents").focus();
  });

  $("use-token").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = $("token-input").value.trim();
    showError($("you-error"), null);
    try {
      const { data } = await S.call("GET", "/v1/me", { token });
      S.save({ ...data, token });
      $("token-input").value = "";
      renderYou();
      refreshAll();
      notices();
    } catch (e) { showError($("you-error"), e.status === 401 ? new Error("That token is not known here.") : e); }
  });

  // A leaked token: the server issues a new one and refuses the old one from its next request
  // on. Sent once (tries: 1): a repeat would carry the token just revoked.
  $("token-rotate").addEventListener("click", async () => {
    if (!confirm("Get a new token? The current one stops working at once, for bots using it too.")) return;
    showError($("you-error"), null);
    try {
      const { data } = await S.call("POST", "/v1/me/token", { tries: 1 });
      S.save(data);
      renderYou();
      $("token-value").textContent = data.token;
      $("token-once").hidden = false;
      $("token-done").focus();
    } catch (e) { showError($("you-error"), e); }
  });

  $("forget").addEventListener("click", () => {
    if (!confirm("Forget your token on this browser? Without a copy of it you cannot play as this player again.")) return;
    S.forget();
    renderYou();
    clear($("challenges"), el("p", { class: "muted" }, "Sign up to send and receive challenges."));
    clear($("mine"), el("p", { class: "muted" }, "None yet."));
    $("signup-name").focus();
  });

  // ------------------------------------------------------------------ online players

  let onlineRows = [];

  function addOpponent(name) {
    const box = $("opponents");
    const names = box.value.split(",").map((s) => s.trim()).filter(Boolean);
    if (!names.includes(name)) names.push(name);
    box.value = names.join(", ");
    box.focus();
  }

  async function online() {
    const box = $("online");
    let data = null;
    try {
      ({ data } = await getJSON("/v1/players/online", { tries: 2, allow404: true }));
    } catch (e) { data = null; }
    if (!data) return clear(box, el("p", { class: "muted" }, "This server does not list online players."));
    const me = S.get();
    onlineRows = data.players || data.online || [];
    $("online-count").textContent = `(${onlineRows.length})`;
    if (!onlineRows.length) return clear(box, el("p", { class: "muted" }, "Nobody is online right now."));
    clear(box, el("table", { class: "board", id: "online-table" },
      el("thead", {}, el("tr", {}, ["Player", "Kind", "Ladders", "Takes challenges", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, onlineRows.map((p) => el("tr", { dataset: { player: p.id, name: p.name } },
        el("td", {}, playerLink(p.id, p.name)),
        el("td", {}, el("span", { class: `badge ${p.kind || "bot"}` }, p.kind || "bot")),
        el("td", {}, (p.ladders || []).join(", ") || "–"),
        el("td", {}, p.accepts_challenges ? "yes" : "no"),
        el("td", {}, me && p.id === me.id ? el("span", { class: "muted small" }, "you")
          : el("button", { type: "button", class: "pick", "aria-label": `Add ${p.name} to the challenge`,
                           disabled: !p.accepts_challenges && p.kind !== "human" ? true : null,
                           onclick: () => addOpponent(p.name) }, "Challenge")))))));
  }

  // ------------------------------------------------------------------ challenges

  $("challenge").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    showError($("challenge-error"), null);
    const opponents = $("opponents").value.split(",").map((s) => s.trim()).filter(Boolean);
    if (!opponents.length) return showError($("challenge-error"), new Error("Name at least one opponent (or pick one below)."));
    const body = { opponents, ruleset: $("ruleset").value, turn_timeout_s: parseInt($("turn-timeout").value, 10) };
    const seed = $("seed").value.trim();
    if (seed) body.seed = seed;
    if ($("tokens").value) body.tokens_to_win = parseInt($("tokens").value, 10);
    const deck = $("deck").value.split(/[\s,]+/).map((s) => s.trim().toLowerCase()).filter(Boolean);
    if (deck.length) body.deck = deck;
    if ($("me-first").checked) {
      // seats by player id: the person first, then the opponents as named
      const ids = opponents.map((n) => (onlineRows.find((p) => p.name === n || p.id === n) || {}).id);
      if (ids.some((x) => !x)) return showError($("challenge-error"), new Error("To choose the seats, pick the opponents from the online list."));
      body.seat_order = [S.get().id, ...ids];
      body.first_seat = 0;
    }
    try {
      const { data } = await S.call("POST", "/v1/challenges", { body, tries: 1 });
      follow(data.challenge_id);
      $("opponents").value = "";
      await challenges();
      const row = document.querySelector(`[data-challenge="${CSS.escape(data.challenge_id)}"] button`);
      if (row) row.focus();
    } catch (e) { showError($("challenge-error"), e); }
  });

  function optionsText(o) {
    if (!o) return "";
    const bits = [o.ruleset, `${o.seats || "?"} seats`];
    if (o.turn_timeout_s) bits.push(`${o.turn_timeout_s}s per turn`);
    if (o.seed) bits.push(`seed ${o.seed}`);
    if (o.deck) bits.push("fixed deck");
    return bits.join(" · ");
  }

  function expiresText(c) {
    if (c.status !== "open" || !c.expires_at) return "";
    // expires_at: epoch seconds (or an RFC 3339 string)
    const at = typeof c.expires_at === "number" ? c.expires_at * 1000 : Date.parse(c.expires_at);
    const s = Math.max(0, Math.round((at - Date.now()) / 1000));
    return ` · expires in ${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  }

  async function answer(c, verb) {
    try {
      const { data } = await S.call("POST", `/v1/challenges/${encodeURIComponent(c.challenge_id)}/${verb}`, { tries: 2 });
      if (verb === "accept") follow(c.challenge_id);
      if (data && data.match_id && following.has(c.challenge_id)) return goTo(c.challenge_id, data.match_id);
    } catch (e) { showError($("challenge-error"), e); }
    challenges();
  }

  function challengeRow(c, incoming) {
    const who = incoming ? `from ${c.challenger.name}`
      : `to ${c.opponents.map((o) => `${o.name}${o.answer && o.answer !== "pending" ? ` (${o.answer})` : ""}`).join(", ")}`;
    const buttons = [];
    if (c.status === "open" && incoming) {
      const me = S.get();
      const mine = c.opponents.find((o) => me && (o.id === me.id));
      if (!mine || !mine.answer || mine.answer === "pending") {
        buttons.push(el("button", { type: "button", class: "primary", onclick: () => answer(c, "accept") }, "Accept"),
                     el("button", { type: "button", onclick: () => answer(c, "decline") }, "Decline"));
      }
    }
    if (c.status === "open" && !incoming) buttons.push(el("button", { type: "button", onclick: () => answer(c, "cancel") }, "Cancel"));
    if (c.match_id) buttons.push(el("a", { class: "button primary", href: `/play/${encodeURIComponent(c.match_id)}` }, "Go to the table"));
    return el("li", { class: `challenge ${c.status}`, dataset: { challenge: c.challenge_id, status: c.status } },
      el("span", { class: `badge ${c.status}` }, c.status), " ",
      el("strong", {}, who), " ",
      el("span", { class: "muted small" }, optionsText(c.options) + expiresText(c)), " ",
      el("span", { class: "actions" }, buttons));
  }

  async function challenges() {
    if (!S.get()) return;
    const box = $("challenges");
    let data;
    try {
      ({ data } = await S.call("GET", "/v1/me/challenges", { tries: 2 }));
    } catch (e) {
      if (e.status === 401) { S.forget(); renderYou(); return; }
      return clear(box, el("p", { class: "muted" }, e.status === 404 ? "This server does not take challenges yet." : `Could not load: ${e.message}`));
    }
    const incoming = data.incoming || [], outgoing = data.outgoing || [];
    for (const c of [...incoming, ...outgoing]) {
      if (c.status === "accepted" && c.match_id && following.has(c.challenge_id)) return goTo(c.challenge_id, c.match_id);
    }
    const recent = (cs) => cs.filter((c) => c.status === "open" || c.status === "accepted").slice(0, 10);
    const inc = recent(incoming), out = recent(outgoing);
    clear(box,
      el("h3", {}, "Received"), inc.length ? el("ul", { class: "challenge-list", id: "incoming" }, inc.map((c) => challengeRow(c, true)))
        : el("p", { class: "muted", id: "incoming" }, "No open challenge for you."),
      el("h3", {}, "Sent"), out.length ? el("ul", { class: "challenge-list", id: "outgoing" }, out.map((c) => challengeRow(c, false)))
        : el("p", { class: "muted", id: "outgoing" }, "You have no open challenge."));
  }

  // ------------------------------------------------------------------ your matches

  async function mine() {
    if (!S.get()) return;
    const box = $("mine");
    try {
      const { data } = await S.call("GET", "/v1/me/matches?limit=10", { tries: 2 });
      if (!data.matches.length) return clear(box, el("p", { class: "muted" }, "None yet."));
      clear(box, el("ul", { class: "match-list" }, data.matches.map((m) => el("li", { dataset: { match: m.match_id } },
        el("span", { class: `badge ${m.status}` }, m.status), " ",
        m.status === "finished" ? el("a", { href: `/matches/${encodeURIComponent(m.match_id)}` }, `replay ${m.match_id}`)
          : el("a", { href: `/play/${encodeURIComponent(m.match_id)}` }, `table ${m.match_id}`),
        ` · ${m.ruleset} · `, m.players.map((p) => p.name).join(" vs "),
        m.your_turn ? el("span", { class: "badge waiting" }, "your turn") : ""))));
    } catch (e) { if (e.status !== 401) clear(box, el("p", { class: "muted" }, `Could not load: ${e.message}`)); }
  }

  function refreshAll() { online(); challenges(); mine(); }

  // ------------------------------------------------------------------ notices

  let polling = false;
  async function notices() {
    if (polling) return;
    polling = true;
    let cursor = null;
    try {
      while (S.get()) {
        let data;
        try {
          const q = cursor === null ? "challenges=true&wait=0" : `challenges=true&wait=25&after=${encodeURIComponent(cursor)}`;
          ({ data } = await S.call("GET", `/v1/me/events?${q}`, { tries: 2 }));
        } catch (e) {
          if (e.status === 401) { S.forget(); renderYou(); break; }
          await sleep(3000);
          continue;
        }
        const first = cursor === null;
        cursor = data.cursor;
        if (first) continue;
        const types = new Set(data.events.map((n) => n.type));
        for (const n of data.events) {
          if (n.match_id && n.challenge_id && following.has(n.challenge_id)) return goTo(n.challenge_id, n.match_id);
        }
        if (types.has("challenge") || types.has("challenge_update")) await challenges();
        if (types.has("match_started") || types.has("match_finished") || types.has("your_turn")) mine();
      }
    } finally { polling = false; }
  }

  renderYou();
  const asked = new URLSearchParams(location.search).get("opponent"); // from a player page
  if (asked) $("opponents").value = asked;
  refreshAll();
  notices();
  // Presence and expiry clocks change without notices: refresh the lists now and then.
  setInterval(() => { online(); challenges(); }, 15000);
})();
