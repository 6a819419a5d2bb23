"""The ``Bot`` base class and the runner that plays every match a bot is in.

    from llsdk import Action, Bot, Client, View

    class FirstLegal(Bot):
        def choose(self, view: View) -> Action:
            return view.legal_actions[0]

    FirstLegal().run(Client("http://127.0.0.1:8000", token="llt_..."))

How the runner works (one loop, one thread): it follows ``GET /v1/me/events?views=true`` (one
long-poll covers every match the bot is in; the newest notice of each match carries the bot's
view of it) and, for each match a notice names, plays on that view while it is the bot's turn:
about 2 requests per move (the notice, the action). Several matches are played at once by interleaving them: a
decision takes milliseconds, so one loop keeps up with many matches, costs one waiting
connection instead of one per match, spends the fewest requests against the per-token rate limit,
and needs no locking around the bot or the HTTP session.

- Resume: on start it lists ``/v1/me/matches?status=active`` and plays them (after a restart or a
  crash the bot picks its matches up where they are). With ``cursor_file`` the notice cursor is
  persisted, so notices that arrived while it was down (a match that ended) are handled too.
- Outages: network errors and 5xx (after the client's own retries) make it wait with a growing
  backoff (at most ``MAX_OUTAGE_WAIT_S``, 2 s, or what ``Retry-After`` says), then
  resynchronise from the match list. The server's turn clocks stand still while it is down, and
  a turn that an outage interrupted starts again in full once it is back, so a bot that comes
  back within a couple of seconds loses nothing.
- Moves: each action carries ``expected_version`` (a move chosen on an old view is refused, not
  applied to a newer turn) and an Idempotency-Key (a retried move is applied once).
- A bot that raises or picks an action not in ``legal_actions`` is logged and the first legal
  action is played instead, so a bug does not cost the match by timeouts.
- Challenges: it polls with ``challenges=true`` (so ``GET /v1/players/online`` lists the bot as
  accepting them) and answers each challenge it is sent with :meth:`Bot.accept_challenge`
  (default: yes, to any unrated challenge in a ruleset of ``Bot.rulesets``); the match that
  starts is then played like any other. It plays at most ``max_challenge_matches`` (default 2)
  challenge matches at once: a challenge beyond that is declined with a reason the challenger
  sees. Challenges that came while it was down are answered at start.
  ``run(..., challenges=False)`` leaves them unanswered.
- A notice cursor older than what the server keeps (``410 cursor_expired``, after a long
  outage or a flood of notices) is not an error: it resynchronises from the match list and
  goes on from the ``oldest_cursor`` the server gives.
- Stops gracefully: the first Ctrl-C (from the command line, SIGTERM too), or ``drain_event``,
  leaves the ladders the runner entered (it is never seated again), stops answering challenges,
  and finishes the matches in progress, saying how many, for at most ``drain_s`` seconds
  (``DRAIN_S``, 60 s: a match between bots takes seconds, and a turn at most its turn time).
  A second Ctrl-C or SIGTERM, ``stop_event``, the drain limit, or ``max_matches`` finished
  matches stop at once: the long-poll in flight is cut, within about a second in all, and no
  match is resigned, so a bot restarted with the same token picks its running matches up again
  (within the turn time, it loses nothing).
- Says what happens on the ``llsdk.bot`` logger: at INFO one line per match started, per round
  result and per match finished; at DEBUG also every move it makes (``llsdk play`` shows INFO,
  ``-v`` DEBUG, ``-q`` neither).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import signal
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from .client import DEFAULT_URL, Client
from .errors import (
    APIError,
    ChallengeClosed,
    ChallengeExpired,
    ChallengeNotFound,
    CursorExpired,
    IllegalAction,
    InvalidRequest,
    LLSDKError,
    MatchNotActive,
    NotFound,
    NotYourTurn,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    VersionConflict,
)
from .models import Action, Challenge, Event, Notice, RoundResult, View

log = logging.getLogger("llsdk.bot")

#: the longest wait between two tries while the server is unreachable: the server's turn clock
#: stands still during an outage and restarts an interrupted turn in full when it is back, so a
#: bot must notice quickly that it is back
MAX_OUTAGE_WAIT_S = 2.0
#: how long leaving the ladders may take when the runner stops
LEAVE_BUDGET_S = 1.0
#: how often the stop watcher looks at ``stop_event``
STOP_POLL_S = 0.05
#: how long a graceful stop may spend finishing the matches in progress (seconds)
DRAIN_S = 60.0


class Bot:
    """Subclass and implement :meth:`choose`. One instance may play several matches at once, so
    keep per-match state keyed by ``view.match_id`` (or derive everything from the view, which
    holds the whole current round). Use ``self.rng`` for randomness: the offline arena seeds
    it, which makes arena runs reproducible."""

    #: shown in arena tables (default: the class name, or the file name from the CLI)
    name: str | None = None
    #: the rulesets this bot accepts challenges in (None: every ruleset)
    rulesets: Collection[str] | None = None

    @property
    def rng(self) -> random.Random:
        r: random.Random | None = self.__dict__.get("_rng")
        if r is None:
            r = self.__dict__["_rng"] = random.Random()
        return r

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self.__dict__["_rng"] = value

    def choose(self, view: View) -> Action:
        """Your move: return one of ``view.legal_actions`` (or an equal ``Action``)."""
        raise NotImplementedError

    def on_match_start(self, view: View) -> None:
        """Called once per match, with the bot's first view of it."""

    def on_match_end(self, view: View) -> None:
        """Called once per match, with the final view (``view.result``, ``view.won``)."""

    def accept_challenge(self, challenge: Challenge) -> bool:
        """Whether to accept ``challenge`` (its ``challenger``, ``opponents``, ``options``).
        Default: every unrated challenge in a ruleset of :attr:`rulesets`."""
        return not challenge.rated and (self.rulesets is None
                                        or challenge.ruleset in self.rulesets)

    def run(self, client: Client, ladders: Iterable[str] = (), *, max_matches: int | None = None,
            stop_event: threading.Event | None = None, cursor_file: str | None = None,
            poll_wait: float = 25.0, challenges: bool = True,
            max_challenge_matches: int = 2,
            drain_event: threading.Event | None = None, drain_s: float = DRAIN_S) -> RunStats:
        """Play every match this bot's token is in until stopped (see the module docstring).
        ``ladders`` are entered first (a server without ladders yet is tolerated); with
        ``challenges`` (the default) challenges are answered by :meth:`accept_challenge`, at
        most ``max_challenge_matches`` challenge matches at once (the rest are declined).
        ``drain_event`` (or the first Ctrl-C) stops gracefully, finishing the matches in
        progress for at most ``drain_s`` seconds; ``stop_event`` stops at once."""
        return Runner(self, client, ladders=ladders, max_matches=max_matches,
                      stop_event=stop_event, cursor_file=cursor_file, poll_wait=poll_wait,
                      challenges=challenges, max_challenge_matches=max_challenge_matches,
                      drain_event=drain_event, drain_s=drain_s).run()

    @classmethod
    def main(cls, argv: Sequence[str] | None = None) -> int:
        """Run this bot from the command line: ``--url``, ``--token`` (or ``LLSDK_URL`` /
        ``LLSDK_TOKEN``), ``--ladder NAME`` (repeatable), ``--max-matches N``,
        ``--cursor-file PATH``. For ``if __name__ == "__main__": raise SystemExit(MyBot.main())``."""
        ap = argparse.ArgumentParser(description=f"Play {cls.__name__} on a Love Letter Arena")
        add_play_arguments(ap)
        args = ap.parse_args(argv)
        return play_from_args(cls(), args)


@dataclass
class RunStats:
    """What a :meth:`Bot.run` did."""

    matches_finished: int = 0
    wins: int = 0
    moves: int = 0
    fallbacks: int = 0  # moves the bot got wrong, replaced by the first legal action
    outages: int = 0
    challenges_accepted: int = 0
    challenges_declined: int = 0
    resyncs: int = 0  # cursors the server no longer kept (410 cursor_expired)


class Runner:
    """The loop behind :meth:`Bot.run`."""

    def __init__(self, bot: Bot, client: Client, *, ladders: Iterable[str] = (),
                 max_matches: int | None = None, stop_event: threading.Event | None = None,
                 cursor_file: str | None = None, poll_wait: float = 25.0,
                 resync_every: float = 60.0, challenges: bool = True,
                 max_challenge_matches: int = 2,
                 drain_event: threading.Event | None = None, drain_s: float = DRAIN_S) -> None:
        self.bot = bot
        self.client = client
        self.ladders = list(ladders)
        self.max_matches = max_matches
        self.stop_event = stop_event or threading.Event()
        self.cursor_file = cursor_file
        self.poll_wait = poll_wait
        self.resync_every = resync_every
        self.stats = RunStats()
        self.challenges = challenges
        self._answered: set[str] = set()  # challenge ids
        self.max_challenge_matches = max_challenge_matches
        # challenges accepted whose match has not ended (id -> its match, None until it starts)
        self._challenge_games: dict[str, str | None] = {}
        self._versions: dict[str, int] = {}  # active matches: the last version we saw
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._rounds: dict[str, int] = {}  # the last round whose result was reported
        self._seen_seq: dict[str, int] = {}  # the last event reported (DEBUG)
        self._done = False  # max_matches reached (the caller's stop_event is left alone)
        self._entered: list[str] = []  # the ladders this runner entered (left when it stops)
        self._finished = threading.Event()
        self.drain_event = drain_event or threading.Event()
        self.drain_s = drain_s
        self._drain_until: float | None = None  # set when the graceful stop began
        self._live: set[str] = set()  # matches under way (started, not finished)
        self._cursor: str | None = None

    # ------------------------------------------------------------------ the loop

    @property
    def draining(self) -> bool:
        return self._drain_until is not None

    @property
    def stopping(self) -> bool:
        return self._done or self.stop_event.is_set() or (
            self._drain_until is not None and time.monotonic() >= self._drain_until)

    def run(self) -> RunStats:
        self._finished.clear()
        watcher = threading.Thread(target=self._watch_stop, name="llsdk-stop", daemon=True)
        watcher.start()
        try:
            while True:
                try:
                    self._loop()
                    break
                except KeyboardInterrupt:
                    if self.draining or self.drain_s <= 0:
                        log.info("interrupted again: stopping now (no match is resigned)")
                        break
                    self.drain_event.set()  # the loop starts the graceful stop
            if self._drain_until is not None and self._live and not self._done \
                    and not self.stop_event.is_set():
                log.warning("drain limit (%.0f s) reached: stopping with %d match(es) "
                            "unfinished; restart with the same token to play them on",
                            self.drain_s, len(self._live))
        finally:
            self._finished.set()
            self._leave_ladders()
        return self.stats

    def _watch_stop(self) -> None:
        """Cut the request in flight (the long-poll) as soon as ``stop_event`` is set, when a
        graceful stop is asked for (so that the loop starts it now) and at the drain limit."""
        drain_seen = False
        while not self._finished.is_set():
            if self.stop_event.wait(STOP_POLL_S):
                if not self._finished.is_set():
                    self.client.interrupt()
                return
            if not drain_seen and self.drain_event.is_set():
                drain_seen = True
                if self._drain_until is None:  # cut the long-poll only, not the drain's own
                    self.client.interrupt()
            if self._drain_until is not None and time.monotonic() >= self._drain_until:
                if not self._finished.is_set():  # (never cut a request made after the run)
                    self.client.interrupt()
                return

    def _begin_drain(self) -> None:
        """The graceful stop: leave the ladders, stop answering challenges, and finish the
        matches in progress (the loop ends when none is left, or at the drain limit)."""
        self._drain_until = time.monotonic() + max(0.0, self.drain_s)
        self.challenges = False
        self._leave_ladders()
        for attempt in range(2):  # (a second try: the stop watcher may have cut the first)
            try:
                self._resync()  # what is under way now, from the server
                break
            except (TransportError, ServerError, RateLimited) as e:
                if attempt:
                    log.warning("stopping: could not list the matches in progress (%s)", e)
        if self._live:
            log.info("stopping: finishing %d match(es) in progress (up to %.0f s; Ctrl-C "
                     "again to stop now)", len(self._live), self.drain_s)
        else:
            log.info("stopping: no match in progress")

    def _leave_ladders(self) -> None:
        """Leave the entered ladders, within ``LEAVE_BUDGET_S`` in all (a server that is down
        will drop an absent bot from its schedule by itself: it stops counting as present)."""
        if not self._entered:
            return
        timer = threading.Timer(LEAVE_BUDGET_S, self.client.interrupt)
        timer.daemon = True
        timer.start()
        try:
            for name in self._entered:
                try:
                    self.client.ladder.leave(name, timeout=LEAVE_BUDGET_S)
                    log.info("left ladder %s", name)
                except LLSDKError as e:
                    log.warning("could not leave ladder %s: %s", name, e)
        finally:
            timer.cancel()
        self._entered = []

    def _loop(self) -> None:
        synced = False
        backoff = 1.0
        last_sync = 0.0
        while not self.stopping:
            try:
                if self.drain_event.is_set() and not self.draining:
                    self._begin_drain()
                    synced, last_sync = True, time.monotonic()
                if self.draining and not self._live:
                    log.info("every match in progress finished: stopped")
                    break
                if not synced:
                    if not self.draining:
                        self._enter_ladders()
                    if self._cursor is None:
                        self._cursor = self._load_cursor() or self.client.me.head()
                    self._resync()
                    synced, last_sync = True, time.monotonic()
                wait = self.poll_wait
                if self._drain_until is not None:
                    wait = max(0.0, min(wait, self._drain_until - time.monotonic()))
                try:
                    notices = self.client.me.events(after=self._cursor, wait=wait,
                                                    challenges=self.challenges, views=True)
                except CursorExpired as e:
                    # notices were dropped after our cursor: the match list says where every
                    # match is; then on from the oldest notice kept
                    log.warning("notice cursor %s expired; resynchronising", self._cursor)
                    self.stats.resyncs += 1
                    self._resync()
                    self._cursor = e.oldest_cursor or self.client.me.head()
                    last_sync = time.monotonic()
                    self._save_cursor(self._cursor)
                    continue
                self._handle(notices.events)
                self._cursor = notices.cursor
                self._save_cursor(self._cursor)
                if time.monotonic() - last_sync > self.resync_every and not self.stopping:
                    self._resync()  # belt and braces: a notice lost to inbox trimming
                    last_sync = time.monotonic()
                backoff = 1.0
            except (TransportError, ServerError, RateLimited) as e:
                if self.stopping:
                    break
                if self.drain_event.is_set() and not self.draining:
                    continue  # the watcher cut the long-poll to start the graceful stop
                self.stats.outages += 1
                retry_after = getattr(e, "retry_after", None)
                wait = retry_after if retry_after else backoff
                log.warning("server unreachable (%s); retrying in %.1f s", e, wait)
                self.stop_event.wait(wait)  # (set: stop at once)
                backoff = min(backoff * 2, MAX_OUTAGE_WAIT_S)
                synced = False  # reread the match list once it is back

    def _enter_ladders(self) -> None:
        for name in self.ladders:
            try:
                self.client.ladder.enter(name)
                if name not in self._entered:
                    self._entered.append(name)
                log.info("entered ladder %s", name)
            except NotFound:
                log.warning("ladder %r not found on this server (not entered)", name)

    def _resync(self) -> None:
        """Play every active match from the server's list and finish the ones that ended, then
        answer the challenges still open for us (listing the matches first marks the bot
        present for its ladders as early as possible)."""
        active = list(self.client.me.all_matches(status="active"))
        ids = {m.match_id for m in active}
        for m in active:
            if self.stopping:
                return
            if m.match_id in self._ended:
                continue
            if m.your_turn or m.match_id not in self._started or \
                    m.version > self._versions.get(m.match_id, -1):
                self._safe_play(m.match_id)
        for mid in [mid for mid in self._versions if mid not in ids]:
            self._safe_play(mid)  # ended while we were not looking
        if self.challenges and not self.stopping:
            try:
                waiting = self.client.challenges.list().incoming
            except NotFound:  # a server from before challenges
                log.warning("this server has no challenges; not answering any")
                self.challenges, waiting = False, []
            for ch in waiting:
                # (answering again after a restart is harmless: the server keeps the first)
                self._answer(ch)

    def _busy_with_challenges(self) -> bool:
        """Whether ``max_challenge_matches`` challenges we accepted are still to play."""
        for cid, mid in list(self._challenge_games.items()):
            if mid is not None and mid in self._ended:
                del self._challenge_games[cid]
        return len(self._challenge_games) >= self.max_challenge_matches

    def _answer(self, challenge: Challenge) -> None:
        """Accept or decline as :meth:`Bot.accept_challenge` says (once per challenge), and
        decline beyond ``max_challenge_matches`` challenge matches at once."""
        if challenge.id in self._answered or not challenge.open:
            return
        self._answered.add(challenge.id)
        reason = None
        if self._busy_with_challenges():
            yes = False
            reason = (f"busy: playing {len(self._challenge_games)} challenge matches (at most "
                      f"{self.max_challenge_matches} at once); try again later")
        else:
            try:
                yes = bool(self.bot.accept_challenge(challenge))
            except Exception:
                log.exception("%s: accept_challenge() raised; declining", challenge.id)
                yes = False
        who = challenge.challenger.name
        try:
            if yes:
                ch = self.client.challenges.accept(challenge.id)
                self.stats.challenges_accepted += 1
                self._challenge_games[challenge.id] = ch.match_id
                log.info("accepted challenge %s from %s%s", challenge.id, who,
                         f": match {ch.match_id}" if ch.match_id else "")
                if ch.match_id:
                    self._safe_play(ch.match_id)
            else:
                self.client.challenges.decline(challenge.id, reason=reason)
                self.stats.challenges_declined += 1
                log.info("declined challenge %s from %s%s", challenge.id, who,
                         f" ({reason})" if reason else "")
        except (ChallengeClosed, ChallengeExpired, ChallengeNotFound) as e:
            log.info("challenge %s from %s: %s", challenge.id, who, e.code)

    def _handle(self, notices: list[Notice]) -> None:
        for n in notices:
            if n.type == "challenge" and n.challenge is not None and self.challenges \
                    and not self.stopping:
                self._answer(n.challenge)
            elif n.type == "challenge_update" and n.challenge is not None and \
                    n.challenge.id in self._challenge_games:
                if n.challenge.status in ("declined", "cancelled", "expired"):
                    del self._challenge_games[n.challenge.id]  # it will never be played
                elif n.challenge.match_id:
                    self._challenge_games[n.challenge.id] = n.challenge.match_id
        latest: dict[str, Notice] = {}
        finished: set[str] = set()
        views: dict[str, View] = {}  # (the server puts the view on a match's newest notice)
        for n in notices:
            if n.match_id is None:
                continue  # a challenge's notice (handled before) or one of a kind to come
            if n.type == "match_finished":
                finished.add(n.match_id)
            if n.view is not None and n.view.match_id == n.match_id:
                views[n.match_id] = n.view
            if n.match_id not in latest or n.version >= latest[n.match_id].version:
                latest[n.match_id] = n
        for mid, n in latest.items():
            if self.stopping:
                return
            if mid in self._ended:
                continue
            if mid in finished or n.version > self._versions.get(mid, -1):
                self._safe_play(mid, views.get(mid))

    # ------------------------------------------------------------------ one match

    def _safe_play(self, mid: str, view: View | None = None) -> None:
        """:meth:`_play`, where an unexpected API answer about one match is logged and the
        other matches go on (the match is looked at again at its next notice or resync).
        Outages and a bad token go up to the loop."""
        try:
            self._play(mid, view)
        except (ServerError, RateLimited, Unauthorized):
            raise
        except APIError as e:
            log.error("%s: %s", mid, e)

    def _play(self, mid: str, view: View | None = None) -> None:
        """Move while it is our turn, from ``view`` (a notice's) or the view read now; handle
        a start and an end."""
        if view is None:
            try:
                view = self.client.matches.view(mid)
            except NotFound:
                self._versions.pop(mid, None)
                self._live.discard(mid)
                return
        for _ in range(200):
            self._versions[mid] = max(view.version, self._versions.get(mid, -1))
            if view.status == "active":
                self._live.add(mid)
            if view.status != "waiting" and mid not in self._started:
                self._started.add(mid)
                log.info("%s", describe_start(view))
                self._hook(self.bot.on_match_start, view)
            if log.isEnabledFor(logging.DEBUG):
                self._report_moves(view)
            self._report_rounds(view)
            if view.finished:
                self._finish(view)
                return
            if not view.my_turn or self.stopping:
                return
            action = self._decide(view)
            try:
                view = self.client.matches.act(mid, action, expected_version=view.version)
                self.stats.moves += 1
            except (NotYourTurn, VersionConflict, MatchNotActive) as e:
                log.debug("%s: %s; reading the view again", mid, e.code)
                view = self.client.matches.view(mid)
            except (IllegalAction, InvalidRequest) as e:
                log.error("%s: the server refused %s (%s); playing %s instead", mid, action,
                          e.message, view.legal_actions[0])
                self.stats.fallbacks += 1
                view = self.client.matches.act(mid, view.legal_actions[0],
                                               expected_version=view.version)
                self.stats.moves += 1

    def _decide(self, view: View) -> Action:
        fallback = view.legal_actions[0]
        try:
            action = self.bot.choose(view)
        except Exception:
            log.exception("%s: choose() raised; playing %s", view.match_id, fallback)
            self.stats.fallbacks += 1
            return fallback
        if action not in view.legal_actions:
            log.error("%s: choose() returned %s, which is not legal now; playing %s",
                      view.match_id, action, fallback)
            self.stats.fallbacks += 1
            return fallback
        return action

    def _finish(self, view: View) -> None:
        mid = view.match_id
        self._versions.pop(mid, None)
        self._live.discard(mid)
        if mid in self._ended:
            return
        self._ended.add(mid)
        self.stats.matches_finished += 1
        if view.won:
            self.stats.wins += 1
        result = view.result
        log.info("%s finished: %s (winners %s, tokens %s, %d rounds; you are seat %s)", mid,
                 "won" if view.won else "lost", result.winners if result else None,
                 "-".join(map(str, result.tokens)) if result else "?",
                 result.rounds if result else view.round, view.seat)
        self._hook(self.bot.on_match_end, view)
        if self.max_matches is not None and self.stats.matches_finished >= self.max_matches:
            self._done = True

    def _report_moves(self, view: View) -> None:
        """At DEBUG, one line per move in the view's events not reported yet (every seat's),
        with the round results in between."""
        mid = view.match_id
        last = self._seen_seq.get(mid, -1)
        events = view.events
        if events and events[0].seq > last + 1:
            # A round ended between two of our views: its last moves are only in the log.
            try:
                events = self.client.matches.events(mid, after=last).events
            except APIError as err:
                log.debug("%s: no event log (%s)", mid, err)
        for ev in events:
            if ev.seq > last and ev.type in _MOVES:
                log.debug("%s round %d: %s", mid, ev.round, describe_event(ev, view))
            elif ev.seq > last and ev.type == "round_end" and \
                    ev.data.get("round", 0) > self._rounds.get(mid, 0):
                # in the order of the log (between the last move and the next round's first)
                log.info("%s", describe_round(mid, RoundResult.from_dict(ev.data), view))
                self._rounds[mid] = ev.data.get("round", 0)
            last = max(last, ev.seq)
        self._seen_seq[mid] = last

    def _report_rounds(self, view: View) -> None:
        """One line per round that ended since the last report. A view carries only the last
        round's result: when more than one ended unseen (the bot had no turn in between), the
        match's event log gives the others (one more request, rarely)."""
        last = view.last_round
        mid = view.match_id
        done = self._rounds.get(mid, 0)
        if last is None or last.round <= done:
            return
        results = [last]
        if last.round > done + 1:
            try:
                log_ = self.client.matches.events(mid)
                results = [RoundResult.from_dict(e.data) for e in log_.events
                           if e.type == "round_end" and done < e.data.get("round", 0)]
                results = [r for r in results if r.round < last.round] + [last]
            except APIError as e:
                log.debug("%s: no event log (%s); reporting the last round only", mid, e)
        for r in results:
            log.info("%s", describe_round(mid, r, view))
        self._rounds[mid] = last.round

    @staticmethod
    def _hook(fn: object, view: View) -> None:
        try:
            fn(view)  # type: ignore[operator]
        except Exception:
            log.exception("%s: %s raised", view.match_id, getattr(fn, "__name__", fn))

    # ------------------------------------------------------------------ the cursor

    def _load_cursor(self) -> str | None:
        if not self.cursor_file:
            return None
        try:
            with open(self.cursor_file, encoding="utf-8") as f:
                text = f.read().strip()
        except FileNotFoundError:
            return None
        return text or None

    def _save_cursor(self, cursor: str) -> None:
        if not self.cursor_file:
            return
        tmp = f"{self.cursor_file}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(cursor + "\n")
        os.replace(tmp, self.cursor_file)


# --------------------------------------------------------------------------- what it says


def _who(view: View, seat: int) -> str:
    name = view.players[seat].name if 0 <= seat < len(view.players) else None
    you = " (you)" if seat == view.seat else ""
    return f"seat {seat}{f' {name}' if name else ''}{you}"


def describe_start(view: View) -> str:
    """``m_1 started: classic, 2 players, seat 0 alice (you) vs seat 1 bob, ladder duel``."""
    seats = " vs ".join(_who(view, p.seat) for p in view.players)
    where = f", ladder {view.ladder}" if view.ladder else ""
    return f"{view.match_id} started: {view.ruleset}, {len(view.players)} players, {seats}{where}"


def describe_round(mid: str, r: RoundResult, view: View) -> str:
    """``m_1 round 3: seat 1 bob won (showdown); tokens 2-1``."""
    won = ", ".join(_who(view, w) for w in r.winners) or "nobody"
    spy = "" if r.spy_bonus is None else f", spy bonus to {_who(view, r.spy_bonus)}"
    how = r.reason.replace("_", " ")
    return f"{mid} round {r.round}: {won} won ({how}{spy}); tokens {'-'.join(map(str, r.tokens))}"


_MOVES = frozenset({"play", "chancellor_return", "eliminated", "forfeit"})


def describe_event(e: Event, view: View) -> str:
    """``seat 0 alice (you) plays guard at seat 1 bob naming priest: miss``."""
    d = e.data
    who = _who(view, d.get("seat", -1))
    if e.type == "eliminated":
        return f"{who} is out ({d.get('reason')}), revealing {', '.join(d.get('revealed', []))}"
    if e.type == "forfeit":
        return f"{who} forfeits ({d.get('reason')})"
    if e.type == "chancellor_return":
        return f"{who} returns {d.get('count')} card(s) to the bottom of the deck"
    text = f"{who} plays {d.get('card')}"
    if d.get("target") is not None:
        text += f" at {_who(view, d['target'])}"
    if d.get("guess") is not None:
        text += f" naming {d['guess']}: {'hit' if d.get('hit') else 'miss'}"
    if d.get("discarded"):
        text += f", who discards {d['discarded']}"
    if d.get("timeout"):
        text += " (timeout: played by the server)"
    return text


class _Lines(logging.Formatter):
    """``12:00:01 m_1 round 3: ...``; warnings and errors also say so."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.WARNING:
            text = text.replace(" ", f" {record.levelname.lower()}: ", 1)
        return text


# --------------------------------------------------------------------------- command line


def add_play_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--url", default=os.environ.get("LLSDK_URL", DEFAULT_URL),
                    help="server URL (default: $LLSDK_URL or %(default)s)")
    ap.add_argument("--token", default=os.environ.get("LLSDK_TOKEN"),
                    help="the bot's token (default: $LLSDK_TOKEN)")
    ap.add_argument("--ladder", action="append", default=[], metavar="NAME",
                    help="enter this ladder (repeatable)")
    ap.add_argument("--max-matches", type=int, default=None, metavar="N",
                    help="stop after N finished matches")
    ap.add_argument("--cursor-file", default=None, metavar="PATH",
                    help="persist the notice cursor here (resume exactly after a restart)")
    ap.add_argument("--poll-wait", type=float, default=25.0, metavar="S",
                    help="long-poll wait in seconds (default %(default)s)")
    ap.add_argument("--drain", type=float, default=DRAIN_S, metavar="S",
                    help="on the first Ctrl-C or SIGTERM, finish the matches in progress for "
                         "at most S seconds (default %(default)s; 0: stop at once); a second "
                         "one stops at once")
    noise = ap.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true",
                       help="print warnings and errors only")
    noise.add_argument("-v", "--verbose", action="store_true",
                       help="also print every move the bot makes")


def play_from_args(bot: Bot, args: argparse.Namespace) -> int:
    # One line per match started, round result and match finished (-v: every move too; -q:
    # warnings only), on stderr. Only llsdk's own loggers: -v doesn't turn on urllib3's.
    handler = logging.StreamHandler()
    handler.setFormatter(_Lines("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    sdk_log = logging.getLogger("llsdk")
    if not sdk_log.handlers:
        sdk_log.addHandler(handler)
        sdk_log.propagate = False
    sdk_log.setLevel(logging.WARNING if args.quiet else
                     logging.DEBUG if getattr(args, "verbose", False) else logging.INFO)
    if not args.token:
        log.error("no token: pass --token or set LLSDK_TOKEN (register with `llsdk register`)")
        return 2
    client = Client(args.url, args.token)
    try:
        me = client.me.get()
    except APIError as e:
        log.error("%s: %s", args.url, e)
        return 1
    except TransportError as e:
        log.error("%s unreachable: %s", args.url, e)
        return 1
    log.info("playing as %s (%s) on %s", me.name, me.id, args.url)
    stop = threading.Event()
    drain = threading.Event()
    drain_s = float(getattr(args, "drain", DRAIN_S))

    def on_signal(signum: int, frame: object) -> None:
        # the first Ctrl-C or SIGTERM drains (the runner says so), a second one stops now
        if drain.is_set() or drain_s <= 0:
            stop.set()
        else:
            drain.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    stats = bot.run(client, ladders=args.ladder, max_matches=args.max_matches,
                    stop_event=stop, cursor_file=args.cursor_file, poll_wait=args.poll_wait,
                    drain_event=drain, drain_s=drain_s)
    log.info("stopped: %d matches finished, %d won, %d moves", stats.matches_finished,
             stats.wins, stats.moves)
    client.close()
    return 0


__all__ = ["DRAIN_S", "Bot", "RunStats", "Runner", "add_play_arguments", "play_from_args"]
