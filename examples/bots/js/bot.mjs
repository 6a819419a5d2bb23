#!/usr/bin/env node
// A Love Letter Arena bot in JavaScript: Node 18+ and its built-in fetch, no packages.
// It plays one match to its end, or every match a ladder gives it.
//
//   node bot.mjs new [RULESET] [SEATS]   create a match (classic, 2 by default), join it, play it
//   node bot.mjs join MATCH_ID           take the next free seat of a match, play it
//   node bot.mjs play MATCH_ID           play a match this player already sits in
//   node bot.mjs ladder NAME [GAMES]     enter the ladder NAME and play the rated matches it
//                                        starts, until GAMES have finished or it is stopped:
//                                        the first Ctrl-C/SIGTERM leaves the ladder and
//                                        finishes the matches in progress (at most BOT_DRAIN_S
//                                        seconds, 60), a second one exits at once
//
// Environment: LLSDK_URL (the server, default http://127.0.0.1:8000); LLSDK_TOKEN (a player's
// token); without it the bot uses the token saved in BOT_TOKEN_FILE (default js-bot.token in
// the current folder), and registers a player named BOT_NAME (default js-bot-<random>) the
// first time, saving its token there (it says so on stderr): a restart plays as the same
// player. BOT_TOKENS_TO_WIN: a match it creates ends at this many tokens.
// It prints the match id first, then one line per move and per round, and the result last.
// The protocol is described in docs/protocol.md; the rules in docs/rules.md.

import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const BASE = (process.env.LLSDK_URL || "http://127.0.0.1:8000").replace(/\/+$/, "");
const WAIT = Number(process.env.BOT_WAIT || 30); // seconds each long-poll may be held
const DRAIN_S = Number(process.env.BOT_DRAIN_S || 60); // a graceful stop's limit
const TOKEN_FILE = resolve(process.env.BOT_TOKEN_FILE || "js-bot.token");
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
// AbortSignal.any), and `done()`, which the caller runs when its request is over: it removes
// the listener from `signal`, which lives as long as the bot (leaving one per request behind
// would pile up thousands and trip Node's MaxListenersExceededWarning).
function withTimeout(signal, ms) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  timer.unref();
  const onAbort = () => ctl.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  const done = () => {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  };
  return { signal: ctl.signal, done };
}

// One request path for every call: JSON in and out, the token, retries on network errors and
// on 429/503 (honouring Retry-After). Errors become ApiError with the server's stable code.
async function api(method, path, { body, headers = {}, signal } = {}) {
  for (let attempt = 1; ; attempt++) {
    let res;
    let data;
    const timeout = withTimeout(signal, (WAIT + 15) * 1000);
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
        signal: timeout.signal,
      });
      data = res.status === 204 ? null : await res.json();
    } catch (err) {
      if (signal?.aborted || attempt >= 10) throw err;
      await sleep(1000);
      continue;
    } finally {
      timeout.done();
    }
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

// What a finished match's view says, in one line: "won" or "lost", winners, tokens.
function describeResult(view) {
  const { winners, tokens } = view.result;
  const won = winners.includes(view.seat) ? "won" : "lost";
  return `${won}: winners ${JSON.stringify(winners)}, tokens ${JSON.stringify(tokens)}`;
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
// matches; a bot must keep polling to stay present (scheduled).
// Stopping: the first Ctrl-C or SIGTERM leaves the ladder at once (we are never seated again)
// and finishes the matches in progress, for at most DRAIN_S seconds; a second one, or the
// limit, exits at once. Nothing is resigned: restarted with the same token, the bot finds its
// matches again in its inbox and plays on.
async function ladder(name, games) {
  await api("POST", `/v1/ladders/${name}/entries`);
  console.log(`entered ladder ${name}`);
  const stop = new AbortController(); // exit now
  let poll = new AbortController(); // the long-poll in flight
  let drainUntil = 0; // set by the first signal
  let entered = true;
  const live = new Set(); // matches in progress
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => {
      if (drainUntil) stop.abort();
      else drainUntil = Date.now() + DRAIN_S * 1000;
      poll.abort();
    });
  }
  const leave = async () => {
    if (!entered) return;
    entered = false;
    await api("DELETE", `/v1/ladders/${name}/entries`);
    console.log(`left ladder ${name}`);
  };
  let finished = 0;
  // Start after the newest notice (older ones are about matches already over), then play on
  // the matches already under way (after a restart: the drain limit, a crash).
  let cursor = await head();
  const running = await api("GET", "/v1/me/matches?status=active&limit=100");
  for (const m of running.matches) {
    live.add(m.match_id);
    let view = await api("GET", `/v1/matches/${m.match_id}/view`);
    while (view && view.status === "active" && view.legal_actions.length) {
      view = await act(m.match_id, view, choose(view));
    }
  }
  try {
    while (!stop.signal.aborted && (!games || finished < games)) {
      if (drainUntil && entered) {
        await leave();
        const active = await api("GET", "/v1/me/matches?status=active&limit=100");
        for (const m of active.matches) live.add(m.match_id);
        if (live.size) {
          console.log(`stopping: finishing ${live.size} match(es) in progress (up to ` +
                      `${DRAIN_S} s; Ctrl-C again to stop now)`);
        }
      }
      if (drainUntil && !live.size) break;
      if (drainUntil && Date.now() >= drainUntil) {
        console.log(`stopping: the drain limit (${DRAIN_S} s) passed with ${live.size} ` +
                    "match(es) unfinished; restart with the same token to play them on");
        break;
      }
      const wait = drainUntil ? Math.max(0, Math.min(WAIT, (drainUntil - Date.now()) / 1000))
                              : WAIT;
      const after = cursor ? `&after=${cursor}` : "";
      poll = new AbortController();
      let answer;
      try {
        answer = await api("GET", `/v1/me/events?wait=${wait.toFixed(1)}&views=true${after}`,
                           { signal: poll.signal });
      } catch (err) {
        if (poll.signal.aborted) continue; // a signal: drain or stop (the loop decides)
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
        // the newest notice of each match carries our view: act while it is our turn (after
        // a Chancellor, or at the start of the next round, we act again)
        let view = notice.view;
        if (view && view.status === "active") live.add(notice.match_id);
        while (view && view.status === "active" && view.legal_actions.length &&
               !stop.signal.aborted) {
          view = await act(notice.match_id, view, choose(view));
        }
        if (notice.type === "match_finished") {
          finished++;
          live.delete(notice.match_id);
          const final = view && view.status === "finished" ? view
            : await api("GET", `/v1/matches/${notice.match_id}/view`);
          console.log(`match ${notice.match_id} finished (${finished} so far): ` +
                      describeResult(final));
        }
      }
    }
  } finally {
    await leave();
  }
  return 0;
}

// The cursor of our newest notice (notices come in pages of up to 100).
async function head() {
  let cursor = "";
  for (;;) {
    const page = await api("GET", `/v1/me/events${cursor ? `?after=${cursor}` : ""}`);
    if (!page.events.length) return cursor || page.cursor;
    cursor = page.cursor;
  }
}

// The token: LLSDK_TOKEN, else the one saved in TOKEN_FILE, else a new player's, saved there
// (readable by this user only) so that every start plays as the same player.
async function ensureToken() {
  if (token) return;
  try {
    token = readFileSync(TOKEN_FILE, "utf8").trim();
  } catch (err) {
    if (err.code !== "ENOENT") throw err;
  }
  if (token) return;
  const name = process.env.BOT_NAME || `js-bot-${Math.floor(Math.random() * 1e9)}`;
  const player = await api("POST", "/v1/players", { body: { name } });
  token = player.token;
  writeFileSync(TOKEN_FILE, `${token}\n`, { mode: 0o600 });
  console.error(`registered ${player.name} (${player.id}); its token is saved in ${TOKEN_FILE} ` +
                "(delete that file to register a new player)");
}

async function main(argv) {
  const [cmd = "new", arg1, arg2] = argv;
  await ensureToken();
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
        const won = winners.includes(view.seat) ? " (we won)" : " (we lost)";
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
