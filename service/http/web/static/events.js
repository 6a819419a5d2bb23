/* Events as plain English: one sentence per event of the public API's event log.
 *
 * LL.events.sentences(who) -> {describe(e)}: `who(seat)` names a seat (the match page passes the
 * seat's player name; the play page adds "(you)"). Shared by the match page (live and replay)
 * and the play page, so a spectator and a player read the same words.
 */
"use strict";

LL.events = (() => {
  const { title } = LL;

  function sentences(who) {
    const a = (name) => `the ${title(name)}`;
    const list = (cards) => (cards && cards.length ? cards.map(title).join(", ") : "nothing");
    const whoList = (seats) => (seats || []).map(who).join(" and ") || "nobody";
    const REASONS = { guard: "guessed by a guard", baron: "lost a baron comparison", princess: "discarded the Princess",
                      forfeit: "forfeited", last_standing: "last player standing", showdown: "showdown",
                      tokens: "enough tokens", timeout: "timed out too often", resigned: "resigned" };

    /** One event as an English sentence (null: not worth a line). */
    function describe(e) {
      const t = e.timeout ? " (timed out: the server played for them)" : "";
      switch (e.type) {
        case "deck": return `The deck is shuffled (top first): ${list(e.deck)}.`;
        case "round_start":
          return `Round ${e.round} begins; ${who(e.first)} starts.` +
            (e.face_up && e.face_up.length ? ` Face up: ${list(e.face_up)}.` : "") + ` ${e.deck_count} cards in the deck.`;
        case "dealt": return `${who(e.seat)} is dealt ${a(e.card)}.`;
        case "turn": return `Turn ${e.turn}: ${who(e.seat)} to play (${e.deck_count} left in the deck).`;
        case "drew": return `${who(e.seat)} draws ${a(e.card)}.`;
        case "play": return describePlay(e) + t;
        case "priest_saw": return `${who(e.seat)} looks at ${who(e.target)}'s hand: ${a(e.card)}.`;
        case "baron_compared":
          return `${who(e.seat)} (${title(e.card)}) and ${who(e.target)} (${title(e.target_card)}) compare hands.`;
        case "king_swapped":
          return `${who(e.seat)} gives ${a(e.gave)} to ${who(e.target)} and receives ${a(e.received)}.`;
        case "prince_drew": return `${who(e.seat)} draws ${a(e.card)} to replace the discarded card.`;
        case "chancellor_drew": return `${who(e.seat)} draws ${list(e.cards)} with the Chancellor.`;
        case "chancellor_return":
          return `${who(e.seat)} puts ${e.count} card${e.count === 1 ? "" : "s"} back at the bottom of the deck${t}.`;
        case "chancellor_returned":
          return `${who(e.seat)} keeps ${a(e.keep)} and puts ${list(e.bottom)} at the bottom.`;
        case "eliminated":
          return `${who(e.seat)} is out of the round (${REASONS[e.reason] || e.reason})` +
            (e.revealed && e.revealed.length ? `, revealing ${list(e.revealed)}.` : ".");
        case "forfeit": return `${who(e.seat)} forfeits the match (${REASONS[e.reason] || e.reason}).`;
        case "round_end": {
          let s = `Round ${e.round} ends (${REASONS[e.reason] || e.reason}): ${whoList(e.winners)} win${(e.winners || []).length === 1 ? "s" : ""} a token.`;
          if (e.spy_bonus !== null && e.spy_bonus !== undefined) s += ` ${who(e.spy_bonus)} gets the Spy's token.`;
          if (e.hands) {
            const shown = e.hands.map((h, i) => (h.length ? `${who(i)}: ${list(h)}` : null)).filter(Boolean);
            if (shown.length) s += ` Hands: ${shown.join("; ")}.`;
          }
          if (e.tokens) s += ` Tokens: ${e.tokens.map((n, i) => `${who(i)} ${n}`).join(", ")}.`;
          return s;
        }
        case "match_end": return `${whoList(e.winners)} win${(e.winners || []).length === 1 ? "s" : ""} the match (${REASONS[e.reason] || e.reason}).`;
        default: return `${e.type}`;
      }
    }

    function describePlay(e) {
      const me = who(e.seat), c = e.card;
      const on = e.target !== undefined && e.target !== null;
      switch (c) {
        case "guard":
          if (!on) return `${me} plays the Guard; nobody can be targeted.`;
          return `${me} plays the Guard on ${who(e.target)}, naming the ${title(e.guess)}: ${e.hit ? "a hit!" : "a miss."}`;
        case "priest":
          return on ? `${me} plays the Priest and looks at ${who(e.target)}'s hand.` : `${me} plays the Priest; nobody can be targeted.`;
        case "baron":
          if (!on) return `${me} plays the Baron; nobody can be targeted.`;
          return `${me} plays the Baron against ${who(e.target)}: ` +
            (e.loser === null || e.loser === undefined ? "a tie." : `${who(e.loser)} has the lower card.`);
        case "handmaid": return `${me} plays the Handmaid and is protected until their next turn.`;
        case "prince": {
          const target = e.target === e.seat ? "themself" : who(e.target);
          return `${me} plays the Prince on ${target}; ${who(e.target)} discards ${a(e.discarded)}` +
            (e.drew_from === "set_aside" ? " and takes the set-aside card." : e.drew_from ? " and draws a new card." : ".");
        }
        case "chancellor": return `${me} plays the Chancellor` + (e.drew ? ` and draws ${e.drew} card${e.drew === 1 ? "" : "s"}.` : "; the deck is empty.");
        case "king":
          return on ? `${me} plays the King and trades hands with ${who(e.target)}.` : `${me} plays the King; nobody can be targeted.`;
        case "countess": return `${me} plays the Countess.`;
        case "princess": return `${me} plays the Princess.`;
        case "spy": return `${me} plays the Spy.`;
        default: return `${me} plays ${a(c)}` + (on ? ` on ${who(e.target)}.` : ".");
      }
    }

    return { describe, describePlay, whoList };
  }

  // The rule of docs/rules.md (served at /rules) each event applies: its anchor ids.
  const CARD_RULES = { guard: "R12", priest: "R13", baron: "R14", handmaid: "R15", prince: "R16",
                       chancellor: "R17", king: "R18", countess: "R19", princess: "R20", spy: "R20" };
  const EVENT_RULES = { deck: "R5", dealt: "R7", turn: "R10", drew: "R10", priest_saw: "R13",
                        baron_compared: "R14", prince_drew: "R16", chancellor_drew: "R17",
                        chancellor_return: "R17", chancellor_returned: "R17", king_swapped: "R18",
                        eliminated: "R21", forfeit: "R27" };
  const TARGETED = new Set(["guard", "priest", "baron", "king"]);

  /** The rule ids an event applies, most specific first: ["R12"], ["R22", "R24"]... */
  function rules(e) {
    switch (e.type) {
      case "round_start": return e.face_up && e.face_up.length ? ["R5", "R6"] : ["R5"];
      case "play":
        if (TARGETED.has(e.card) && (e.target === undefined || e.target === null)) return ["R20a"];
        return CARD_RULES[e.card] ? [CARD_RULES[e.card]] : [];
      case "round_end": {
        const out = ["R22"];
        if (e.reason === "showdown" && (e.winners || []).length > 1) out.push("R23");
        if (e.spy_bonus !== null && e.spy_bonus !== undefined) out.push("R24");
        return out;
      }
      case "match_end": return e.reason === "forfeit" ? ["R27"] : ["R26"];
      default: return EVENT_RULES[e.type] ? [EVENT_RULES[e.type]] : [];
    }
  }

  /** Links to the rules an event applies, for the end of its log line. */
  function ruleLinks(e) {
    return rules(e).map((id) => LL.el("a", { class: "rule", href: `/rules#${id}`, title: `rule ${id}` }, id));
  }

  return { sentences, rules, ruleLinks };
})();
