/* Match page.
 *
 * Live (waiting/active): polls the public summary GET /v1/matches/{id} (a spectator's view: no
 * hand, no private event) and, when its version moves, the public events after the last one seen
 * (GET /v1/matches/{id}/events?after=N). Hands are drawn face down: only their size is public.
 *
 * Replay (finished): the full record (every event, with its audience) is public once the match
 * is over. The page rebuilds the table after every step from the events (deck, dealt, drew,
 * play, king_swapped, prince_drew, chancellor_drew/returned, eliminated, round_end...), so every
 * hand is shown, and steps forward and back through the match, or plays itself at a chosen
 * speed (Play, or Space; ?autoplay=1&speed=MS in the address). A step is named by the seq of its
 * first event, the one numbering of the API's events, the log's lines (#12) and the address:
 * #seq=S opens the replay at the step holding event S, and the address follows the step shown,
 * so it can be copied at any time.
 *
 * The log follows the header: live, both are drawn from one summary (its round's events, plus
 * any missed since the last one shown); a replay opens at the start of the log (or at the end
 * when the match was watched live to its end). Beside the table, the card tracker counts what
 * the table has seen this round (public information, live and replayed alike).
 *
 * Moves animate: a card that has just been played slides onto its discard pile and new log lines
 * glow, live and in replays alike.
 */
"use strict";

(() => {
  const { el, clear, getJSON, card, cardBack, playerLink, sleep } = LL;
  const mid = document.body.dataset.match;
  const params = new URLSearchParams(location.search);
  const INTERVAL = Math.max(200, parseInt(params.get("interval") || "1000", 10) || 1000);

  let names = [];      // seat -> name
  let playerIds = [];  // seat -> player id
  let options = {};

  const $ = (id) => document.getElementById(id);
  const who = (seat) => (seat === null || seat === undefined ? "nobody" : names[seat] || `seat ${seat}`);
  const { describe, whoList } = LL.events.sentences(who);

  function logItem(e, extra) {
    const cls = [e.type === "round_start" ? "round" : "", e.private ? "private" : "", extra || ""].join(" ").trim();
    return el("li", { class: cls || null, dataset: { seq: e.seq, type: e.type } },
              el("span", { class: "seq", title: `event ${e.seq} (its seq in the API; #seq=${e.seq} links the replay here)` }, `#${e.seq}`),
              describe(e), " ", ...LL.events.ruleLinks(e));
  }

  // ------------------------------------------------------------------ drawing the table

  let shownDiscards = [];  // seat -> discards count at the last render (for the animation)
  function freshFrom(p) {
    const before = shownDiscards[p.seat];
    shownDiscards[p.seat] = p.discards.length;
    return before === undefined || p.discards.length < before ? p.discards.length : before;
  }

  function seatBox(p, { turn, hand, revealed }) {
    const fresh = freshFrom(p);
    const flags = [];
    if (p.eliminated && !p.forfeited) flags.push(el("span", { class: "badge" }, "out"));
    if (p.forfeited) flags.push(el("span", { class: "badge benched" }, "forfeited"));
    if (p.protected) flags.push(el("span", { class: "badge provisional" }, "protected"));
    if (turn) flags.push(el("span", { class: "badge waiting" }, "to play"));
    const handNode = el("span", { class: "hand", dataset: { count: hand ? hand.length : p.hand_count } },
      hand ? (hand.length ? hand.map((c) => card(c, "revealed")) : el("span", { class: "muted" }, "empty"))
           : (p.hand_count ? Array.from({ length: p.hand_count }, cardBack) : el("span", { class: "muted" }, "empty")));
    return el("div", { class: `seat${turn ? " turn" : ""}${p.eliminated ? " eliminated" : ""}`, dataset: { seat: p.seat } },
      el("div", { class: "who" },
        el("span", { class: "name" }, playerIds[p.seat] ? playerLink(playerIds[p.seat], who(p.seat)) : who(p.seat)),
        el("span", { class: "flags" }, flags)),
      el("div", { class: "row" }, el("span", { class: "label" }, "tokens"),
        el("span", { class: "tokens", dataset: { tokens: p.tokens } }, "●".repeat(p.tokens) || "–"),
        el("span", { class: "muted small" }, ` ${p.tokens}/${options.tokens_to_win || "?"}`)),
      el("div", { class: "row" }, el("span", { class: "label" }, revealed ? "hand" : "hand (hidden)"), handNode),
      el("div", { class: "row discards" }, el("span", { class: "label" }, "discards"),
        p.discards.length ? p.discards.map((c, i) => card(c, i >= fresh ? "fresh" : "")) : el("span", { class: "muted" }, "none")));
  }

  function header(v) {
    const st = $("status");
    st.textContent = v.aborted ? "aborted" : v.status;
    st.className = `badge ${v.aborted ? "aborted" : v.status}`;
    if (v.aborted) st.title = v.aborted.message;
    const bits = [`${v.ruleset}`, `${v.players_count || v.players.length} seats`, `first to ${v.tokens_to_win ?? "?"} tokens`];
    if (v.ladder) bits.push(`ladder ${v.ladder}${v.rated ? " (rated)" : ""}`);
    if (v.options && v.options.turn_timeout_s) bits.push(`${v.options.turn_timeout_s}s per turn`);
    const info = $("match-info");
    clear(info, bits.join(" · "));
    if (v.options && v.options.fixed_by_creator) info.append(" · ", LL.fixedBadge(v.options));
    // the person signed in on /play sits here: their table is one click away (it is only a
    // link: this page itself never sends the token)
    const me = LL.session && LL.session.get();
    if (me && v.status !== "finished" && v.players.some((p) => p.player_id === me.id)) {
      info.append(" · ", el("a", { class: "button primary", id: "to-table", href: `/play/${encodeURIComponent(mid)}` }, "You sit here: play at your table"));
    }
    if (v.ladder) info.append(" · ", el("a", { href: `/ladders/${encodeURIComponent(v.ladder)}` }, "leaderboard"));
  }

  function learnSeats(v) {
    names = v.players.map((p) => p.name);
    playerIds = v.players.map((p) => p.player_id);
    options = { ...(v.options || {}), tokens_to_win: v.tokens_to_win, ruleset: v.ruleset };
    LL.ruleset = v.ruleset;
  }

  // ------------------------------------------------------------------ live

  let lastVersion = null;
  let lastSeq = -1;

  function renderLive(v) {
    header(v);
    const turnSeat = v.turn ? v.turn.seat : null;
    const ri = $("round-info");
    if (v.status === "waiting") {
      clear(ri, `Waiting for players: ${v.players.length} of ${v.players_count} seats taken.`);
    } else {
      const left = v.turn && v.turn.seconds_left !== null && v.turn.seconds_left !== undefined
        ? ` · ${Math.round(v.turn.seconds_left)}s left` : "";
      clear(ri, `Round ${v.round} · ${turnSeat !== null ? `${who(turnSeat)} to play${v.turn.phase === "chancellor" ? " (returning cards to the deck)" : ""}` : "between turns"}${left} · version ${v.version}`);
    }
    clear($("players"), v.players.map((p) => seatBox(p, { turn: p.seat === turnSeat })));
    clear($("tracker"), LL.cards.tracker(v.ruleset, v.players.map((p) => p.discards), v.face_up));
    clear($("piles"),
      el("span", { class: "pile" }, el("span", { class: "label" }, "deck"), `${v.deck_count} cards`),
      el("span", { class: "pile" }, el("span", { class: "label" }, "set aside"), `${v.set_aside_count} face down`),
      el("span", { class: "pile" }, el("span", { class: "label" }, "face up"),
         v.face_up && v.face_up.length ? v.face_up.map((c) => card(c)) : "none"));
    document.body.dataset.version = v.version;
    document.body.dataset.status = v.status;
  }

  /** Whether the reader is at the end of the log (so new lines should stay in sight). */
  function atEnd(log) { return log.scrollHeight - log.scrollTop - log.clientHeight < 40; }

  /** Draw one summary and the log up to that summary's newest event, together, so the log
   *  never lags (nor runs ahead of) the header. The summary carries its round's public events;
   *  when it starts past the last event shown (a round ended in between) the events missed
   *  are fetched first. A reader at the end of the log keeps the newest line in sight; one who
   *  scrolled up stays where they are. */
  async function applyLive(v) {
    const evs = v.events || [];
    let fresh = [];
    if (v.status === "active" && evs.length) {
      const newest = evs[evs.length - 1].seq;
      if (evs[0].seq > lastSeq + 1) {
        const { data } = await getJSON(`/v1/matches/${encodeURIComponent(mid)}/events?after=${lastSeq}`);
        fresh = data.events.filter((e) => e.seq <= newest);
      } else {
        fresh = evs.filter((e) => e.seq > lastSeq);
      }
      const log = $("log");
      const stick = atEnd(log);
      let n = 0;
      for (const e of fresh) {
        if (e.seq <= lastSeq) continue;
        lastSeq = e.seq;
        if (e.type === "deck" || e.private) continue; // the record arrives with the replay
        const li = logItem(e, lastVersion === null ? "" : "fresh");
        li.style.animationDelay = `${Math.min(n++, 8) * 0.3}s`; // one after another
        log.append(li);
      }
      if (stick) log.scrollTop = log.scrollHeight;
    }
    renderLive(v);
  }

  async function live() {
    document.body.dataset.mode = "live";
    $("log-title").textContent = "Events (public)";
    for (;;) {
      let v;
      try {
        ({ data: v } = await getJSON(`/v1/matches/${encodeURIComponent(mid)}`, { allow404: true }));
      } catch (e) {
        await sleep(INTERVAL * 2);
        continue;
      }
      if (!v) {
        $("status").textContent = "not found";
        clear($("round-info"), "There is no such match.");
        return;
      }
      if (v.status === "finished") return replay(v);
      if (v.version !== lastVersion) {
        learnSeats(v);
        try {
          await applyLive(v);
          lastVersion = v.version;
        } catch (e) { console.warn(e); }
      } else if (v.turn) {
        renderLive(v); // the countdown
      }
      await sleep(INTERVAL);
    }
  }

  // ------------------------------------------------------------------ replay

  const BREAKS = new Set(["deck", "round_start", "turn", "play", "chancellor_return", "forfeit", "round_end", "match_end"]);

  function newState(n) {
    return {
      round: 0, turn: null, deckCount: 0, faceUp: [], aside: [], pendingDeck: null, winners: null,
      players: Array.from({ length: n }, (_, seat) => ({
        seat, hand: [], discards: [], tokens: 0, eliminated: false, protected: false, forfeited: false,
      })),
    };
  }

  function clone(s) { return JSON.parse(JSON.stringify(s)); }

  function take(hand, c) {
    const i = hand.indexOf(c);
    if (i >= 0) hand.splice(i, 1);
  }

  /** Apply one event of the full record to the rebuilt table. */
  function step(s, e) {
    const P = s.players;
    switch (e.type) {
      case "deck": s.pendingDeck = e.deck; break;
      case "round_start": {
        s.round = e.round;
        s.faceUp = e.face_up || [];
        s.deckCount = e.deck_count;
        s.turn = null;
        const deck = s.pendingDeck || [];
        s.aside = deck.length ? [deck[0]] : [];
        if (P.length === 2 && options.two_player_setup && options.two_player_setup !== "three-up") s.aside = deck.slice(0, 4);
        for (const p of P) {
          p.hand = []; p.discards = []; p.protected = false; p.eliminated = p.forfeited;
          p.tokens = e.tokens ? e.tokens[p.seat] : p.tokens;
        }
        break;
      }
      case "dealt": P[e.seat].hand = [e.card]; break;
      case "turn": s.turn = e.seat; P[e.seat].protected = false; s.deckCount = e.deck_count; break;
      case "drew": P[e.seat].hand.push(e.card); break;
      case "play": {
        const me = P[e.seat];
        take(me.hand, e.card);
        me.discards.push(e.card);
        if (e.card === "handmaid") me.protected = true;
        if (e.card === "prince" && e.discarded) {
          take(P[e.target].hand, e.discarded);
          P[e.target].discards.push(e.discarded);
          if (e.drew_from === "deck") s.deckCount -= 1;
          if (e.drew_from === "set_aside") s.aside.shift();
        }
        if (e.card === "chancellor" && e.drew) s.deckCount -= e.drew;
        break;
      }
      case "king_swapped": {
        const x = P[e.seat], y = P[e.target];
        [x.hand, y.hand] = [y.hand, x.hand];
        break;
      }
      case "prince_drew": P[e.seat].hand.push(e.card); break;
      case "chancellor_drew": P[e.seat].hand.push(...e.cards); break;
      case "chancellor_returned": P[e.seat].hand = [e.keep]; s.deckCount += e.bottom.length; break;
      case "eliminated": {
        const p = P[e.seat];
        for (const c of e.revealed || []) { take(p.hand, c); p.discards.push(c); }
        p.hand = [];
        p.eliminated = true;
        p.protected = false;
        break;
      }
      case "forfeit": P[e.seat].forfeited = true; break;
      case "round_end":
        s.turn = null;
        if (e.tokens) P.forEach((p) => { p.tokens = e.tokens[p.seat]; });
        if (e.hands) P.forEach((p) => { p.hand = e.hands[p.seat].slice(); });
        break;
      case "match_end":
        s.turn = null;
        s.winners = e.winners;
        if (e.tokens) P.forEach((p) => { p.tokens = e.tokens[p.seat]; });
        break;
      default: break;
    }
  }

  /** The record cut into steps (a step starts at each turn, play, round start/end...), with the
   *  table as it stands after each step. */
  function buildSteps(events, n) {
    const steps = [];
    const s = newState(n);
    let current = null;
    for (const e of events) {
      // a round's shuffled deck opens the step of that round's start
      const joinsDeck = e.type === "round_start" && current && current.events.every((x) => x.type === "deck");
      if (current === null || (BREAKS.has(e.type) && !joinsDeck)) {
        if (current) steps.push({ ...current, state: clone(s) });
        current = { events: [] };
      }
      step(s, e);
      current.events.push(e);
    }
    if (current) steps.push({ ...current, state: clone(s) });
    return steps;
  }

  let steps = [];
  let pos = 0;

  function renderStep() {
    const st = steps[pos];
    const s = st.state;
    clear($("round-info"),
      `Replay · event #${stepSeq(pos)} of #${lastSeqOfRecord()} · round ${s.round}` +
      (s.turn !== null ? ` · ${who(s.turn)} to play` : "") +
      (s.winners ? ` · ${whoList(s.winners)} won the match` : ""));
    clear($("players"), s.players.map((p) => seatBox({ ...p, hand_count: p.hand.length },
      { turn: p.seat === s.turn, hand: p.hand, revealed: true })));
    clear($("tracker"), LL.cards.tracker(options.ruleset, s.players.map((p) => p.discards), s.faceUp));
    clear($("piles"),
      el("span", { class: "pile" }, el("span", { class: "label" }, "deck"), `${s.deckCount} cards`),
      el("span", { class: "pile" }, el("span", { class: "label" }, "set aside"),
         s.aside.length ? s.aside.map((c) => card(c, "revealed")) : "none"),
      el("span", { class: "pile" }, el("span", { class: "label" }, "face up"),
         s.faceUp.length ? s.faceUp.map((c) => card(c)) : "none"));
    const log = $("log");
    const items = [];
    steps.slice(0, pos + 1).forEach((x, i) => {
      for (const e of x.events) {
        if (e.type === "deck" && i !== pos) continue;
        items.push(logItem(e, i === pos ? "current" : ""));
      }
    });
    clear(log, items);
    // The first step shows the start of the log, the last its end, any other its own lines in
    // the middle of the box (measured against the log box itself, whatever its offset parent).
    const cur = log.querySelector("li.current");
    if (pos === 0) log.scrollTop = 0;
    else if (pos === steps.length - 1 || !cur) log.scrollTop = log.scrollHeight;
    else log.scrollTop += cur.getBoundingClientRect().top - log.getBoundingClientRect().top - log.clientHeight / 2;
    $("step-label").textContent = `event #${stepSeq(pos)} / #${lastSeqOfRecord()}`;
    $("step-range").value = String(pos);
    $("first").disabled = $("back").disabled = pos === 0;
    $("last").disabled = $("forward").disabled = pos === steps.length - 1;
    document.body.dataset.step = String(pos);
    document.body.dataset.seq = String(stepSeq(pos));
  }

  /** A step is named by the seq of its first event: the number the log lines, the API's events
   *  and the replay's address (#seq=S) all use. */
  function stepSeq(i) { return steps[i].events[0].seq; }
  function lastSeqOfRecord() { const x = steps[steps.length - 1].events; return x[x.length - 1].seq; }

  function go(to, { keepPlaying = false, initial = false } = {}) {
    if (!keepPlaying) pause();
    const from = pos;
    pos = Math.max(0, Math.min(steps.length - 1, to));
    if (pos !== from + 1) shownDiscards = []; // a jump: no slide-in animation
    renderStep();
    const link = `#seq=${stepSeq(pos)}`;
    $("step-link").href = link;
    // the address follows the steps a viewer takes (not the first one shown: no navigation then)
    if (!initial && location.hash !== link) history.replaceState(null, "", link);
  }

  // ------------------------------------------------------------------ autoplay

  let timer = null;

  function playing() { return timer !== null; }

  function pause() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    $("play").textContent = "▶ Play";
    $("play").setAttribute("aria-pressed", "false");
    document.body.dataset.playing = "0";
  }

  function play() {
    if (pos >= steps.length - 1) go(0);
    $("play").textContent = "❚❚ Pause";
    $("play").setAttribute("aria-pressed", "true");
    document.body.dataset.playing = "1";
    const tickOnce = () => {
      if (pos >= steps.length - 1) return pause();
      go(pos + 1, { keepPlaying: true });
      timer = setTimeout(tickOnce, speed());
    };
    timer = setTimeout(tickOnce, speed());
  }

  function speed() { return Math.max(50, parseInt($("speed").value, 10) || 1500); }

  /** The step named by the address, or null: #seq=S, the step that holds event S (an event
   *  past the end: the last step); #v=N, the N-th step (links made before steps were named by
   *  their events). */
  function stepFromHash() {
    const m = /(?:^#|&)seq=(\d+)/.exec(location.hash);
    if (m) {
      const want = parseInt(m[1], 10);
      let i = 0;
      while (i + 1 < steps.length && stepSeq(i + 1) <= want) i++;
      return i;
    }
    const old = /(?:^#|&)v=(\d+)/.exec(location.hash);
    return old ? parseInt(old[1], 10) - 1 : null;
  }

  async function replay(v) {
    learnSeats(v);
    header(v);
    const { data } = await getJSON(`/v1/matches/${encodeURIComponent(mid)}/events`);
    steps = buildSteps(data.events, v.players.length);
    if (!steps.length) return renderLive(v);
    const res = v.result;
    if (v.aborted) $("match-info").append(" · ", el("strong", { class: "result aborted" }, `aborted, rated for nobody: ${v.aborted.message}`));
    if (res) $("match-info").append(" · ", el("strong", { class: "result" }, `${whoList(res.winners)} won · tokens ${res.tokens.join("–")} · ${res.rounds} round${res.rounds === 1 ? "" : "s"}`));
    $("log-title").textContent = "Events (the full record: every hand is revealed)";
    $("replay-controls").hidden = false;
    $("step-range").max = String(steps.length - 1);
    $("first").onclick = () => go(0);
    $("back").onclick = () => go(pos - 1);
    $("forward").onclick = () => go(pos + 1);
    $("last").onclick = () => go(steps.length - 1);
    $("step-range").oninput = (ev) => go(parseInt(ev.target.value, 10));
    $("play").onclick = () => (playing() ? pause() : play());
    const asked = params.get("speed");
    if (asked) {
      const opt = [...$("speed").options].find((o) => o.value === asked) || el("option", { value: asked }, `${asked} ms a step`);
      if (!opt.parentNode) $("speed").append(opt);
      $("speed").value = asked;
    }
    $("speed").onchange = () => { if (playing()) { pause(); play(); } };
    document.addEventListener("keydown", (ev) => {
      if (ev.target.closest("input, select, textarea")) return;
      if (ev.key === "ArrowRight") go(pos + 1);
      else if (ev.key === "ArrowLeft") go(pos - 1);
      else if (ev.key === " " && !ev.target.closest("button, a")) { ev.preventDefault(); playing() ? pause() : play(); }
    });
    window.addEventListener("hashchange", () => {
      const want = stepFromHash();
      if (want !== null && want !== pos) go(want);
    });
    document.body.dataset.version = v.version;
    document.body.dataset.status = v.status;
    document.body.dataset.steps = String(steps.length);
    document.body.dataset.mode = "replay";
    // A link to a step opens there; watched live to the end: stay at the end; opened finished:
    // start from the beginning (and play on with ?autoplay=1).
    const want = stepFromHash();
    go(want !== null ? want : lastVersion === null ? 0 : steps.length - 1, { initial: true });
    if (params.get("autoplay") === "1" && want === null) play();
  }

  live();
})();
