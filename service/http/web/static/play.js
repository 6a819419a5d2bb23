/* Your table: a match played by the person at the keyboard.
 *
 * The page long-polls the player's own view (GET /v1/matches/{id}/view?wait=25&after=V, with the
 * token kept in localStorage) and draws it: the hand as card faces, the other seats with their
 * hands face down (only their size is in the view), the piles, the countdown to the deadline,
 * what only this player knows (the view's `known`), the event log in English and the round and
 * match results. A move is built only from the view's `legal_actions`: a card, then a target and
 * a guess when that card's actions have them; in the Chancellor's step, the card to keep and the
 * order of the others. It is posted with expected_version and an Idempotency-Key (a retry never
 * plays twice; a stale click gets version_conflict and the page re-reads the view).
 *
 * Keyboard: every choice is a <button> (Tab, Enter, Space); the digits pick a card of the hand
 * and then a target, guess or order by the number each button shows; Escape steps back. Nothing
 * here needs a mouse.
 *
 * The card tracker counts, per card, the copies in the deck, those the table has seen this round
 * (discards and face-up cards: public information only) and those that may remain; the Guard's
 * names whose copies are all accounted for are greyed out.
 */
"use strict";

(() => {
  const { el, clear, sleep, title } = LL;
  const S = LL.session;
  const C = LL.cards;
  const mid = document.body.dataset.match;
  const $ = (id) => document.getElementById(id);

  let view = null;          // the latest view
  let names = [];
  let mySeat = null;
  const events = new Map(); // seq -> event (every event this seat may see, all rounds)
  let lastSeq = -1;
  let choice = null;        // {card} | {card, target} while choosing; {keep} in the chancellor step
  let posting = false;
  let deadline = null;      // performance.now() at the deadline
  let turnLength = null;
  let lastShownRound = 0;
  let animateSeqs = new Set();

  const who = (seat) => (seat === null || seat === undefined ? "nobody"
    : seat === mySeat ? `${names[seat] || "you"} (you)` : names[seat] || `seat ${seat}`);
  const words = LL.events.sentences(who);
  const ruleset = () => (view ? view.ruleset : "2019");
  const face = (name, cls, w) => {
    const f = C.face(name, { ruleset: ruleset() });
    if (cls) f.classList.add(...cls.split(" "));
    if (w) f.style.width = `${w}px`;
    return f;
  };
  const mini = (name) => C.chip(name, { ruleset: ruleset() });

  // ------------------------------------------------------------------ network

  function gate(...content) {
    $("board").hidden = true;
    const g = $("gate");
    g.hidden = false;
    clear(g, content);
  }

  async function first() {
    if (!S.get()) {
      return gate(el("h2", {}, "Sign in to play"),
        el("p", {}, "This is a player's table. ", el("a", { href: "/play" }, "Sign up or use your token"),
           " on the Play page, or ", el("a", { href: `/matches/${encodeURIComponent(mid)}` }, "watch this match"), " as a spectator."));
    }
    try {
      const { data } = await S.call("GET", `/v1/matches/${encodeURIComponent(mid)}/view`);
      await apply(data);
    } catch (e) {
      if (e.status === 403) {
        return gate(el("h2", {}, "You don't sit at this table"),
          el("p", {}, el("a", { href: `/matches/${encodeURIComponent(mid)}` }, "Watch the match"), " instead, or go back to ", el("a", { href: "/play" }, "the lobby"), "."));
      }
      if (e.status === 404) return gate(el("h2", {}, "There is no such match"), el("p", {}, el("a", { href: "/play" }, "Back to the lobby")));
      if (e.status === 401) {
        S.forget();
        return gate(el("h2", {}, "Your token is no longer known here"), el("p", {}, el("a", { href: "/play" }, "Sign up again")));
      }
      throw e;
    }
    follow();
  }

  /** The events this seat may see after the last one held, up to `upTo` (the newest event of
   *  the view about to be shown: the log never runs ahead of the table it sits beside). */
  async function history(upTo, animate) {
    const { data } = await S.call("GET", `/v1/matches/${encodeURIComponent(mid)}/events?after=${lastSeq}`);
    for (const e of data.events) if (upTo === undefined || e.seq <= upTo) remember(e, animate);
  }

  /* Every view reaches the page through apply(): the first read, the long-poll's answers, the
   * answers to this player's moves and to a resignation. A view carries the events of its
   * current round only, so one whose first event lies past the last event held (a round ended
   * and another began in between, however the view arrived) first fetches the events missed,
   * and the log stays complete and in order. Views are applied one at a time, oldest version
   * first: an answer older than the view shown (a long-poll overtaken by a move's answer) is
   * dropped rather than winding the table back. */
  let applying = Promise.resolve();
  function apply(v) {
    const done = applying.then(() => applyNow(v));
    applying = done.catch(() => {});
    return done;
  }

  async function applyNow(v) {
    if (!v) return;
    if (view && (v.version < view.version || (v.version === view.version && v.status === view.status))) {
      render(); // nothing new (a move's answer the long-poll brought first): redraw the controls
      return;
    }
    const evs = v.events || [];
    if (evs.length && evs[0].seq > lastSeq + 1) await history(evs[evs.length - 1].seq, view !== null);
    show(v);
  }

  function remember(e, animate) {
    if (e.to && mySeat !== null && !e.to.includes(mySeat)) return; // another seat's secret (full record after the end)
    if (events.has(e.seq)) return;
    events.set(e.seq, e);
    if (animate) animateSeqs.add(e.seq);
    lastSeq = Math.max(lastSeq, e.seq);
  }

  async function follow() {
    for (;;) {
      if (!view || view.status === "finished") return;
      try {
        const { data } = await S.call("GET", `/v1/matches/${encodeURIComponent(mid)}/view?wait=25&after=${view.version}`);
        if (data && data.version !== view.version) await apply(data);
      } catch (e) {
        console.warn(e);
        await sleep(2000);
      }
    }
  }

  async function post(action) {
    if (posting) return;
    posting = true;
    render();
    const key = S.newKey();
    try {
      const { data } = await S.call("POST", `/v1/matches/${encodeURIComponent(mid)}/actions`,
        { body: { ...action, expected_version: view.version }, headers: { "Idempotency-Key": key } });
      choice = null;
      posting = false;
      // the move is in; if the events it skipped can't be read now, the long-poll (still
      // behind this version) brings the view again and apply() retries the gap
      await apply(data).catch((e) => { console.warn(e); render(); });
    } catch (e) {
      posting = false;
      choice = null;
      flash(e.code === "version_conflict" ? "The table moved on before your move arrived; here it is now." : `Move refused: ${e.message}`);
      try {
        const { data } = await S.call("GET", `/v1/matches/${encodeURIComponent(mid)}/view`);
        await apply(data);
      } catch (e2) { render(); }
    }
  }

  let flashTimer = null;
  function flash(msg) {
    const p = $("prompt");
    p.textContent = msg;
    p.classList.add("warn");
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { p.classList.remove("warn"); render(); }, 4000);
  }

  // ------------------------------------------------------------------ state of a view

  function show(v) {
    const before = view;
    view = v;
    mySeat = v.seat;
    names = v.players.map((p) => p.name);
    for (const e of v.events || []) remember(e, before !== null);
    if (!before || before.turn === null || v.turn === null || before.turn.seat !== v.turn.seat || before.turn.phase !== v.turn.phase) {
      choice = null;
    }
    if (v.turn && v.turn.seconds_left !== null && v.turn.seconds_left !== undefined) {
      deadline = performance.now() + v.turn.seconds_left * 1000;
      turnLength = (v.options && v.options.turn_timeout_s) || v.turn.seconds_left;
    } else {
      deadline = null;
    }
    $("gate").hidden = true;
    $("board").hidden = false;
    render();
    const myTurn = v.turn && v.turn.seat === mySeat && v.legal_actions && v.legal_actions.length;
    if (myTurn && (!before || before.version !== v.version) && !document.activeElement.closest(".choices, .hand-cards")) {
      const b = document.querySelector("#hand button:not([disabled])");
      if (b) b.focus();
    }
  }

  function myTurn() { return !!(view && view.status === "active" && view.turn && view.turn.seat === mySeat && view.legal_actions && view.legal_actions.length); }
  function phase() { return view && view.turn ? view.turn.phase : null; }

  // ------------------------------------------------------------------ drawing

  function render() {
    if (!view) return;
    document.body.dataset.version = view.version;
    document.body.dataset.status = view.status;
    document.body.dataset.round = view.round;
    document.body.dataset.myTurn = myTurn() ? "1" : "0";
    document.body.dataset.phase = phase() || "";
    $("resign").hidden = view.status !== "active";
    header();
    opponents();
    centre();
    mine();
    prompt();
    known();
    tracker();
    log();
    results();
    tick();
  }

  function header() {
    const st = $("status");
    st.textContent = view.status;
    st.className = `badge ${view.status}`;
    const o = view.options || {};
    clear($("match-info"), `${view.ruleset} · ${view.players.length} players · first to ${view.tokens_to_win ?? "?"} tokens` +
      (o.turn_timeout_s ? ` · ${o.turn_timeout_s}s per turn` : "") + ` · round ${view.round}`);
    if (o.fixed_by_creator) $("match-info").append(" · ", LL.fixedBadge(o));
  }

  function tokens(n, goal) {
    return el("span", { class: "tokens", dataset: { tokens: n }, title: `${n} token${n === 1 ? "" : "s"} of ${goal}` },
      "♥".repeat(n), el("span", { class: "tokens-left" }, "♡".repeat(Math.max(0, (goal || 0) - n))));
  }

  function flags(p) {
    const out = [];
    if (view.turn && view.turn.seat === p.seat) out.push(el("span", { class: "badge waiting" }, view.turn.phase === "chancellor" ? "choosing" : "to play"));
    if (p.protected) out.push(el("span", { class: "badge provisional", title: "protected by the Handmaid until their next turn" }, "protected"));
    if (p.forfeited) out.push(el("span", { class: "badge benched" }, "forfeited"));
    else if (p.eliminated) out.push(el("span", { class: "badge" }, "out"));
    return out;
  }

  function discardRow(p) {
    const lastPlay = [...events.values()].reverse().find((e) => e.type === "play" && e.round === view.round);
    return p.discards.length ? p.discards.map((c, i) => {
      const f = mini(c);
      if (i === p.discards.length - 1 && lastPlay && lastPlay.seat === p.seat && animateSeqs.has(lastPlay.seq)) f.classList.add("fresh");
      return f;
    }) : el("span", { class: "muted small" }, "none");
  }

  function opponents() {
    const others = view.players.filter((p) => p.seat !== mySeat);
    clear($("opponents"), others.map((p) => {
      const targetable = choice && choice.targets && choice.targets.includes(p.seat);
      return el("div", { class: `opp seat${view.turn && view.turn.seat === p.seat ? " turn" : ""}${p.eliminated ? " eliminated" : ""}${targetable ? " targetable" : ""}`, dataset: { seat: p.seat } },
        el("div", { class: "who" }, el("span", { class: "name" }, names[p.seat]), el("span", { class: "flags" }, flags(p))),
        el("div", { class: "row" }, tokens(p.tokens, view.tokens_to_win)),
        el("div", { class: "row opp-hand", dataset: { count: p.hand_count }, "aria-label": `${p.hand_count} card${p.hand_count === 1 ? "" : "s"} in hand, face down` },
          Array.from({ length: p.hand_count }, () => C.back({ width: 34 }))),
        el("div", { class: "row discards" }, el("span", { class: "label" }, "discards"), discardRow(p)));
    }));
  }

  function centre() {
    const bits = [
      el("div", { class: "pile" }, C.back({ width: 46 }), el("span", {}, el("strong", {}, String(view.deck_count)), " in the deck")),
      el("div", { class: "pile" }, el("span", { class: "muted small" }, `${view.set_aside_count ?? 1} set aside face down`)),
    ];
    if (view.face_up && view.face_up.length) bits.push(el("div", { class: "pile" }, el("span", { class: "label" }, "face up"), view.face_up.map(mini)));
    clear($("centre"), bits);
  }

  function mine() {
    const me = view.players[mySeat];
    $("me-name").textContent = `${names[mySeat]} (you)`;
    clear($("me-flags"), flags(me));
    clear($("me-tokens"), tokens(me.tokens, view.tokens_to_win));
    clear($("me-discards"), discardRow(me));
    $("me").classList.toggle("turn", myTurn());
    const legal = myTurn() ? view.legal_actions : [];
    const hand = view.hand || [];
    const chancellor = phase() === "chancellor" && myTurn();
    const playable = new Set(legal.filter((a) => a.type === "play").map((a) => a.card));
    const keepable = new Set(legal.filter((a) => a.type === "chancellor_return").map((a) => a.keep));
    const chosenIdx = choice ? choice.index : -1;
    if (!hand.length) {
      clear($("hand"), el("p", { class: "muted empty-hand" }, view.status === "finished" ? "" : me.eliminated ? "You are out of this round." : "No cards."));
      return choices();
    }
    clear($("hand"), hand.map((c, i) => {
      const ok = !posting && (chancellor ? keepable.has(c) : playable.has(c));
      const chosen = i === chosenIdx;
      const label = chancellor ? `Keep the ${title(c)}` : `Play the ${title(c)}`;
      return el("button", {
        type: "button", class: `handcard${chosen ? " chosen" : ""}`, dataset: { card: c, index: i },
        disabled: ok ? null : true, "aria-pressed": chosen ? "true" : "false",
        "aria-label": `${label} (${C.value(c, ruleset())}): ${C.EFFECT[c]}${ok ? "" : myTurn() ? " (not allowed now)" : ""}`,
        onclick: () => pickCard(c, i),
      }, face(c), el("span", { class: "key" }, String(i + 1)));
    }));
    choices();
  }

  // ------------------------------------------------------------------ choosing a move

  const forCard = (c) => view.legal_actions.filter((a) => a.type === "play" && a.card === c);

  function pickCard(c, index) {
    if (!myTurn() || posting) return;
    if (phase() === "chancellor") {
      const options = view.legal_actions.filter((a) => a.type === "chancellor_return" && a.keep === c);
      const orders = uniq(options.map((a) => JSON.stringify(a.bottom)));
      if (orders.length === 1) return post(options[0]);
      choice = { keep: c, index, options };
      return render(), focusChoices();
    }
    const acts = forCard(c);
    if (!acts.length) return;
    const targets = uniq(acts.map((a) => (a.target === undefined ? null : a.target)));
    choice = { card: c, index, acts, targets: targets.filter((t) => t !== null) };
    if (targets.length === 1) {
      choice.target = targets[0];
      const guesses = uniq(acts.map((a) => a.guess).filter(Boolean));
      if (!guesses.length && c !== "princess") return post(acts[0]);
    }
    render();
    focusChoices();
  }

  function pickTarget(t) {
    choice.target = t;
    const acts = choice.acts.filter((a) => (a.target === undefined ? null : a.target) === t);
    const guesses = uniq(acts.map((a) => a.guess).filter(Boolean));
    if (!guesses.length) return post(acts[0]);
    render();
    focusChoices();
  }

  function pickGuess(g) {
    const act = choice.acts.find((a) => (a.target === undefined ? null : a.target) === choice.target && a.guess === g);
    if (act) post(act);
  }

  function back() {
    if (!choice) return;
    if (choice.card && choice.target !== undefined && choice.targets.length > 1) delete choice.target;
    else choice = null;
    render();
    if (choice) focusChoices();
    else { const b = document.querySelector("#hand button:not([disabled])"); if (b) b.focus(); }
  }

  function uniq(xs) { return [...new Set(xs)]; }

  function focusChoices() {
    const b = document.querySelector("#choices button.option");
    if (b) b.focus();
  }

  function choices() {
    const box = $("choices");
    if (!choice || !myTurn() || posting) return clear(box);
    const cancel = el("button", { type: "button", class: "quiet", onclick: back }, "Back (Esc)");
    if (choice.keep) {
      const orders = choice.options;
      return clear(box,
        el("p", { class: "ask" }, `You keep the ${title(choice.keep)}. Which order at the bottom of the deck?`),
        el("div", { class: "options" }, orders.map((a) => el("button", {
          type: "button", class: "option order", dataset: { bottom: a.bottom.join(",") }, onclick: () => post(a),
          "aria-label": a.bottom.length > 1 ? `${title(a.bottom[0])} above, ${title(a.bottom[a.bottom.length - 1])} at the very bottom` : `${title(a.bottom[0])} to the bottom`,
        }, a.bottom.map((c, i) => el("span", { class: "order-card" }, mini(c), el("span", { class: "small" }, i === a.bottom.length - 1 ? "very bottom" : "above"))),
        el("span", { class: "key" }, String(orders.indexOf(a) + 1))))),
        cancel);
    }
    const c = choice.card;
    if (choice.target === undefined) {
      return clear(box,
        el("p", { class: "ask" }, c === "prince" ? "Play the Prince on whom? (they discard their hand and draw)" : `Play the ${title(c)} on whom?`),
        el("div", { class: "options" }, uniq(choice.acts.map((a) => (a.target === undefined ? null : a.target))).map((t, i) =>
          el("button", { type: "button", class: "option target", dataset: { target: t === null ? "" : t }, onclick: () => pickTarget(t) },
            t === null ? "nobody (no one can be chosen)" : t === mySeat ? "yourself" : names[t], el("span", { class: "key" }, String(i + 1))))),
        cancel);
    }
    const acts = choice.acts.filter((a) => (a.target === undefined ? null : a.target) === choice.target);
    const guesses = uniq(acts.map((a) => a.guess).filter(Boolean));
    if (guesses.length) {
      // A name whose every copy is accounted for (seen by the table, or the card this player
      // keeps) can't be in the target's hand: greyed out, unless every name is (then the Guard
      // must still be played, and any name will do).
      const left = remaining();
      const kept = (view.hand || []).slice();
      kept.splice(kept.indexOf(c), 1);
      const impossible = (g) => (left.get(g) ?? 1) - kept.filter((k) => k === g).length <= 0;
      const allOut = guesses.every(impossible);
      return clear(box,
        el("p", { class: "ask" }, `Guard on ${names[choice.target]}: name a card.`),
        el("div", { class: "options guesses" }, guesses.map((g, i) => {
          const out = !allOut && impossible(g);
          return el("button", {
            type: "button", class: `option guess${out ? " impossible" : ""}`, dataset: { guess: g, key: i + 1 },
            disabled: out ? true : null, onclick: () => pickGuess(g),
            title: out ? `every ${title(g)} is accounted for: seen on the table or in your hand` : null,
            "aria-label": `Name the ${title(g)} (${C.value(g, ruleset())})${out ? ": impossible, every copy is accounted for" : ""}`,
          }, mini(g), el("span", { class: "key" }, String(i + 1)));
        })),
        cancel);
    }
    // a card with no choice left but worth a second thought (the Princess)
    return clear(box,
      el("p", { class: "ask warn" }, c === "princess" ? "Playing the Princess puts you out of the round. Play her anyway?" : `Play the ${title(c)}?`),
      el("div", { class: "options" }, el("button", { type: "button", class: "option danger", onclick: () => post(acts[0]) }, `Play the ${title(c)}`, el("span", { class: "key" }, "1"))),
      cancel);
  }

  function prompt() {
    const p = $("prompt");
    if (p.classList.contains("warn")) return;
    let text;
    if (view.status === "waiting") text = `Waiting for players: ${view.players.length} of ${view.players_count || view.players.length} seats taken.`;
    else if (view.status === "finished") text = "The match is over.";
    else if (posting) text = "Sending your move…";
    else if (myTurn()) {
      if (phase() === "chancellor") text = choice ? "Choose the order." : "Chancellor: choose the card to keep.";
      else if (!choice) text = "Your turn: choose a card to play.";
      else text = `Your turn: the ${title(choice.card)}.`;
    } else if (view.turn) text = `${names[view.turn.seat]} is ${view.turn.phase === "chancellor" ? "choosing what to keep" : "thinking"}…`;
    else text = "…";
    p.textContent = text;
  }

  // ------------------------------------------------------------------ knowledge, log, results

  function fact(k) {
    const n = (s) => names[s] || `seat ${s}`;
    switch (k.type) {
      case "priest": return [`You saw ${n(k.seat)}'s hand:`, mini(k.card)];
      case "baron": return [`Baron: you showed`, mini(k.mine), `and ${n(k.seat)} showed`, mini(k.card)];
      case "king": return [`King: you gave ${n(k.seat)}`, mini(k.gave), "and got", mini(k.received)];
      case "chancellor_drew": return ["Chancellor: you drew", k.cards.map(mini)];
      case "chancellor_returned": return ["You kept", mini(k.keep), "and put at the bottom", k.bottom.map(mini)];
      case "prince": return [`${k.seat === mySeat ? "Your Prince" : `${n(k.seat)}'s Prince`} made you draw`, mini(k.card)];
      default: return [k.type];
    }
  }

  function known() {
    const ks = view.known || [];
    clear($("known"), ks.length ? ks.map((k) => el("li", { class: "fact", dataset: { type: k.type, seq: k.seq } }, fact(k)))
      : el("li", { class: "muted small" }, "Nothing yet this round. What your cards show you of other hands appears here, for your eyes only."));
  }

  /** card -> how many copies may remain, from what the whole table has seen this round. */
  function remaining() {
    return new Map(C.track(ruleset(), view.players.map((p) => p.discards), view.face_up).map((t) => [t.card, t.left]));
  }

  function tracker() {
    clear($("tracker"), C.tracker(ruleset(), view.players.map((p) => p.discards), view.face_up));
  }

  /** The log: one line per event, in seq order whatever order they arrived in (a line that
   *  comes late is put in its place, never at the end). It keeps the newest line in sight
   *  while the reader is at the bottom, and leaves a reader who scrolled up where they are. */
  function log() {
    const ol = $("log");
    const atEnd = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
    const lines = [...ol.children];
    const have = new Set(lines.map((li) => Number(li.dataset.seq)));
    const sorted = [...events.values()].sort((a, b) => a.seq - b.seq);
    let fresh = 0;
    let at = 0; // index in `lines` of the first line past the event being placed
    for (const e of sorted) {
      while (at < lines.length && Number(lines[at].dataset.seq) < e.seq) at++;
      if (have.has(e.seq) || e.type === "deck" || e.type === "turn") continue;
      const text = words.describe(e);
      if (!text) continue;
      const cls = [e.type === "round_start" ? "round" : "", e.type === "round_end" || e.type === "match_end" ? "end" : "",
                   e.private ? "private" : "", animateSeqs.has(e.seq) ? "fresh" : ""].join(" ").trim();
      const li = el("li", { class: cls || null, dataset: { seq: e.seq, type: e.type } },
                    el("span", { class: "seq", title: `event ${e.seq} (its seq in the API and the replay)` }, `#${e.seq}`),
                    e.private ? el("span", { class: "only-you", title: "only you see this" }, "only you") : "", text, " ",
                    ...LL.events.ruleLinks(e));
      // several moves in one view (bots answer at once): the lines come in one after another
      if (animateSeqs.has(e.seq)) li.style.animationDelay = `${Math.min(fresh++, 8) * 0.35}s`;
      if (at < lines.length) ol.insertBefore(li, lines[at]);
      else ol.append(li);
    }
    if (atEnd || view.status === "finished") {
      ol.scrollTop = ol.scrollHeight;
      requestAnimationFrame(() => { ol.scrollTop = ol.scrollHeight; }); // after the layout settles
    }
    animateSeqs = new Set();
  }

  function results() {
    const box = $("result");
    if (view.status === "finished" && view.result) {
      const r = view.result;
      const won = r.winners.includes(mySeat);
      if (box.hidden || !box.classList.contains("final")) setTimeout(() => box.scrollIntoView({ block: "nearest", behavior: "smooth" }), 50);
      box.hidden = false;
      box.className = `result-panel final ${won ? "won" : "lost"}`;
      clear(box,
        el("h2", { id: "match-result" }, won ? (r.winners.length > 1 ? "You share the win!" : "You won the match!") : `${words.whoList(r.winners)} won the match.`),
        el("p", {}, `Tokens: ${view.players.map((p) => `${names[p.seat]} ${r.tokens[p.seat]}`).join(" · ")} · ${r.rounds} round${r.rounds === 1 ? "" : "s"}.`),
        roundSummary(view.last_round),
        el("p", { class: "inline" },
          el("a", { class: "button primary", href: "/play" }, "Play again"),
          el("a", { class: "button", href: `/matches/${encodeURIComponent(mid)}` }, "Watch the replay")));
      return;
    }
    const lr = view.last_round;
    if (lr && view.round > lr.round && lr.round >= lastShownRound) {
      lastShownRound = lr.round;
      box.hidden = false;
      box.className = "result-panel";
      clear(box, el("h2", { id: "round-result" }, `Round ${lr.round}: ${words.whoList(lr.winners)} win${lr.winners.length === 1 ? "s" : ""} a token`), roundSummary(lr),
        el("button", { type: "button", class: "quiet", onclick: () => { box.hidden = true; } }, "Hide"));
    }
  }

  function roundSummary(lr) {
    if (!lr) return null;
    const REASON = { last_standing: "last one standing", showdown: "highest card when the deck ran out" };
    return el("div", { class: "round-summary" },
      el("p", { class: "muted small" }, `Round ${lr.round} ended: ${REASON[lr.reason] || lr.reason}` +
        (lr.spy_bonus !== null && lr.spy_bonus !== undefined ? `; ${names[lr.spy_bonus]} gets the Spy's token` : "") + "."),
      el("div", { class: "revealed" }, lr.hands.map((h, s) => el("span", { class: `reveal${lr.winners.includes(s) ? " winner" : ""}` },
        el("span", { class: "small" }, `${names[s]}${s === mySeat ? " (you)" : ""}`), h.length ? h.map(mini) : el("span", { class: "muted small" }, "out")))));
  }

  // ------------------------------------------------------------------ the clock

  function tick() {
    const box = $("clock");
    if (!view || view.status !== "active" || deadline === null) { box.hidden = true; return; }
    const left = Math.max(0, (deadline - performance.now()) / 1000);
    box.hidden = false;
    $("clock-text").textContent = `${Math.floor(left / 60)}:${String(Math.floor(left % 60)).padStart(2, "0")}`;
    $("clock-fill").style.width = `${Math.min(100, (100 * left) / (turnLength || 1))}%`;
    box.classList.toggle("urgent", myTurn() && left < 10);
    box.classList.toggle("mine", myTurn());
  }
  setInterval(tick, 250);

  // ------------------------------------------------------------------ keys and buttons

  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest("input, select, textarea")) return;
    if (ev.key === "Escape") { back(); return; }
    // digits: the card of the hand with that number, or, once a card is chosen, the choice
    // (target, guess, order, confirmation) with that number; each button shows its digit
    if (/^[1-9]$/.test(ev.key) && myTurn() && !posting && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      const n = Number(ev.key) - 1;
      const b = choice ? document.querySelectorAll("#choices button.option")[n]
        : document.querySelector(`#hand button[data-index="${n}"]`);
      if (b && !b.disabled) { ev.preventDefault(); b.click(); }
    }
  });

  $("resign").addEventListener("click", async () => {
    if (!view || view.status !== "active") return;
    if (!confirm("Resign this match? You leave this round and every later one.")) return;
    try {
      const { data } = await S.call("POST", `/v1/matches/${encodeURIComponent(mid)}/resign`);
      await apply(data);
    } catch (e) { flash(`Could not resign: ${e.message}`); }
  });

  C.load().finally(first);
})();
