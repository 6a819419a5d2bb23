#!/usr/bin/env node
// A Love Letter Arena bot in JavaScript: Node 18+ and its built-in fetch, no packages.
// It plays one match to its end, or every match a ladder gives it.
//
//   node bot.mjs new [RULESET] [SEATS]   create a match (classic, 2 by default), join it, play it
//   node bot.mjs join MATCH_ID           take the next free seat of a match, play it
//   node bot.mjs play MATCH_ID           play a match this player already sits in
//   node bot.mjs ladder NAME [GAMES]     enter the ladder NAME and play the rated matches it
//                                        starts (until GAMES have finished, or Ctrl-C/SIGTERM:
//                                        then it leaves the ladder and exits)
//
// Environment: LLSDK_URL (the server, default http://127.0.0.1:8000); LLSDK_TOKEN (a player's
// token; without it the bot registers a new player named BOT_NAME, default js-bot-<random>);
// BOT_TOKENS_TO_WIN (a match it creates ends at this many tokens instead of the ruleset's).
// It prints the match id first, then one line per move and per round, and the result last.
// The protocol is described in docs/protocol.md; the rules in docs/rules.md.

import { randomUUID } from "node:crypto";

const BASE = (process.env.LLSDK_URL || "http://127.0.0.1:8000").replace(/\/+$/, "");
const WAIT = Number(process.env.BOT_WAIT || 30); // seconds each long-poll may be held
let token = process.env.LLSDK_TOKEN || "";

class ApiError extends Error {
  constructor(status, body) {
    super(`${status} ${body.code}: ${body.message}`);
    this.status = status;
    this.code = body.code;
    this.oldestCursor = body.oldest_cursor; // with 410 cursor_expired: where to go on from
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A signal that aborts after `ms`, or when `signal` (the bot stopping) does (Node 18 has no
// AbortSignal.any).
function withTimeout(signal, ms) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  timer.unref();
  signal?.addEventListener("abort", () => ctl.abort(), { once: true });
  return ctl.signal;
}

// One request path for every call: JSON in and out, the token, retries on network errors and
// on 429/503 (honouring Retry-After). Errors become ApiError with the server's stable code.
async function api(method, path, { body, headers = {}, signal } = {}) {
  for (let attempt = 1; ; attempt++) {
    let res;
    try {
      res = await fetch(BASE + path, {
        method,
        headers: {
          Accept: "application/json",
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: withTimeout(signal, (WAIT + 15) * 1000),
      });
    } catch (err) {
      if (signal?.aborted || attempt >= 10) throw err;
      await sleep(1000);
      continue;
    }
    const data = res.status === 204 ? null : await res.json();
    if (res.ok) return data;
    if ((res.status === 429 || res.status === 503) && attempt < 10) {
      await sleep(1000 * Math.max(1, Number(res.headers.get("Retry-After")) || 1));
      continue;
    }
    throw new ApiError(res.status, data);
  }
}

// Take the next seat; a join that raced another one (409 version_conflict) is tried again.
async function join(match) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await api("POST", `/v1/matches/${match}/join`);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === "version_conflict") || attempt >= 20) throw err;
    }
  }
}

// A random legal action, never giving up the Princess when anything else is legal.
function choose(view) {
  const all = view.legal_actions;
  const safe = all.filter((a) => a.card !== "princess");
  const pool = safe.length ? safe : all;
  return pool[Math.floor(Math.random() * pool.length)];
}

// Post a move: one Idempotency-Key per move (a retry after a lost answer is never applied
// twice); expected_version refuses it if the match moved since we read it (409: read again).
async function act(match, view, action) {
  console.log(`seat ${view.seat} plays ${JSON.stringify(action)}`);
  try {
    return await api("POST", `/v1/matches/${match}/actions`, {
      body: { ...action, expected_version: view.version },
      headers: { "Idempotency-Key": randomUUID() },
    });
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) return null;
    throw err;
  }
}

// Play every active match of ours from the match list: after our notice cursor expired (410
// cursor_expired: notices were dropped while we were away), the list says where each match is.
async function resync(stop) {
  const page = await api("GET", "/v1/me/matches?status=active&limit=100");
  for (const m of page.matches) {
    if (stop.signal.aborted) return;
    let view = await api("GET", `/v1/matches/${m.match_id}/view`);
    while (view && view.status === "active" && view.legal_actions.length && !stop.signal.aborted) {
      view = await act(m.match_id, view, choose(view));
    }
  }
}

// The ladder: enter, then long-poll the inbox (`views=true`: each notice carries our view of
// its match, so a move costs two requests: the notice and the action). The server starts the
// matches; a bot must keep polling to stay present (scheduled). Stopping leaves the ladder.
async function ladder(name, games) {
  await api("POST", `/v1/ladders/${name}/entries`);
  console.log(`entered ladder ${name}`);
  const stop = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"]) process.once(sig, () => stop.abort());
  let cursor = "";
  let finished = 0;
  try {
    while (!stop.signal.aborted && (!games || finished < games)) {
      const after = cursor ? `&after=${cursor}` : "";
      let answer;
      try {
        answer = await api("GET", `/v1/me/events?wait=${WAIT}&views=true${after}`,
                           { signal: stop.signal });
      } catch (err) {
        if (stop.signal.aborted) break;
        if (err instanceof ApiError && err.code === "cursor_expired") {
          console.log(`notice cursor expired: resynchronising from the match list`);
          await resync(stop);
          cursor = err.oldestCursor || "";
          continue;
        }
        throw err;
      }
      cursor = answer.cursor;
      for (const notice of answer.events) {
        if (notice.type === "match_finished") {
          finished++;
          console.log(`match ${notice.match_id} finished (${finished} so far)`);
        }
        // the newest notice of each match carries our view: act while it is our turn (after
        // a Chancellor, or at the start of the next round, we act again)
        let view = notice.view;
        while (view && view.status === "active" && view.legal_actions.length &&
               !stop.signal.aborted) {
          view = await act(notice.match_id, view, choose(view));
        }
      }
    }
  } finally {
    await api("DELETE", `/v1/ladders/${name}/entries`);
    console.log(`left ladder ${name}`);
  }
  return 0;
}

async function main(argv) {
  const [cmd = "new", arg1, arg2] = argv;
  if (!token) {
    const name = process.env.BOT_NAME || `js-bot-${Math.floor(Math.random() * 1e9)}`;
    token = (await api("POST", "/v1/players", { body: { name } })).token;
  }
  if (cmd === "ladder" && arg1) return ladder(arg1, Number(arg2 || 0));
  let match;
  if (cmd === "new") {
    const body = { ruleset: arg1 || "classic", seats: Number(arg2 || 2) };
    if (process.env.BOT_TOKENS_TO_WIN) body.tokens_to_win = Number(process.env.BOT_TOKENS_TO_WIN);
    const created = await api("POST", "/v1/matches", { body });
    match = created.match_id;
    await join(match);
  } else if (cmd === "join" && arg1) {
    match = arg1;
    await join(match);
  } else if (cmd === "play" && arg1) {
    match = arg1;
  } else {
    console.error("usage: node bot.mjs new [RULESET] [SEATS] | join MATCH_ID | play MATCH_ID | " +
                  "ladder NAME [GAMES]");
    return 2;
  }
  console.log(`match ${match}`);

  let version = 0;
  let roundSeen = 0;
  for (;;) {
    // Long-poll: answered as soon as the match passes `version` (or after WAIT seconds).
    let view = await api("GET", `/v1/matches/${match}/view?wait=${WAIT}&after=${version}`);
    for (;;) {
      version = view.version;
      const last = view.last_round;
      if (last && last.round > roundSeen) {
        roundSeen = last.round;
        console.log(`round ${last.round}: winners ${JSON.stringify(last.winners)} ` +
                    `(${last.reason}), tokens ${JSON.stringify(last.tokens)}`);
      }
      if (view.status === "finished") {
        const { winners, tokens } = view.result;
        const won = winners.includes(view.seat) ? " (we won)" : "";
        console.log(`finished: winners ${JSON.stringify(winners)}, ` +
                    `tokens ${JSON.stringify(tokens)}${won}`);
        return 0;
      }
      if (!view.legal_actions.length) break;
      view = await act(match, view, choose(view));
      if (!view) break; // the match moved meanwhile: read it again
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bot.mjs: ${err.message}`);
    process.exit(1);
  },
);
