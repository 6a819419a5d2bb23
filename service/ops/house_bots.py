"""``python -m service.ops.house_bots``: the house bots, so a fresh arena always has opponents.

Runs the example bots of ``examples/bots/`` (written only against the ``llsdk`` SDK) on the
server at ``LLSDK_URL``, each in its own thread, entered in every configured ladder (or those of
``HOUSE_BOTS_LADDERS``, comma-separated). ``HOUSE_BOTS_FILES`` lists the bot files to run
(default ``random_bot,counting_bot,search_bot``: a newcomer meets a baseline, a card counter and
a bot that searches) and ``HOUSE_BOTS_COPIES`` how many players of each (default 2, so a
4-seat ladder can fill). ``HOUSE_BOTS_BUDGET_MS`` is the CPU time per move of every bot with a
``budget`` attribute (the search bot; default its own, 100 ms: at most a few moves per second
of one core per search bot, well inside any turn deadline). ``HOUSE_BOTS_POLL_WAIT`` is each bot's long-poll wait
in seconds (default 10; a stop waits at most that long for the polls in flight). Each bot is a
registered player named ``house-<bot>-<n>`` (a namespace nobody else may register; see
:func:`player_token`); its token is kept in Redis (``REDIS_URL``, hash ``ll:house_bots``) so a
restart plays on as the same player.
The first SIGTERM or Ctrl-C stops gracefully: every bot leaves its ladders and finishes the
matches it is playing, for at most ``HOUSE_BOTS_DRAIN_S`` seconds (default 15: a match between
house bots takes a few seconds; the compose file's ``stop_grace_period`` and ``make run``'s wait
for this process are longer); a second one stops every bot after the move in hand, resigning
nothing (a restart plays on).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger("service.ops.house_bots")

TOKENS_KEY = "ll:house_bots"
DEFAULT_FILES = "random_bot,counting_bot,search_bot"
REPO = Path(__file__).resolve().parents[2]
#: the default of ``HOUSE_BOTS_DRAIN_S``: how long a graceful stop finishes matches (seconds)
DRAIN_S = 15.0


def drain_seconds() -> float:
    """``HOUSE_BOTS_DRAIN_S``: how long the first SIGTERM lets the bots finish their matches."""
    try:
        return max(0.0, float(os.environ.get("HOUSE_BOTS_DRAIN_S") or DRAIN_S))
    except ValueError:
        raise SystemExit("HOUSE_BOTS_DRAIN_S must be a number of seconds") from None


def bots_dir() -> Path:
    return Path(os.environ.get("HOUSE_BOTS_DIR") or REPO / "examples" / "bots")


def load_bot_class(path: Path) -> Any:
    """The ``llsdk.Bot`` subclass defined in the file at ``path``."""
    from llsdk import Bot

    spec = importlib.util.spec_from_file_location(f"house_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    classes = [v for v in vars(mod).values()
               if isinstance(v, type) and issubclass(v, Bot) and v is not Bot
               and v.__module__ == mod.__name__]
    if not classes:
        raise SystemExit(f"{path}: no llsdk.Bot subclass")
    return classes[0]


def _token_store() -> Any:
    url = os.environ.get("REDIS_URL")
    if not url:
        return None
    from ..store import cluster

    return cluster.connect(url)


#: names tried for one house bot: its own, then ``<name>-2`` ... ``<name>-<NAME_TRIES>``
NAME_TRIES = 5


def player_token(client: Any, store: Any, name: str) -> str | None:
    """The token of house player ``name``, or None (logged) when no name could be had.

    With the stack's Redis (``REDIS_URL``): the token kept from an earlier run while it still
    works, else a player registered straight in the store, in the reserved ``house-`` namespace
    that the API refuses to everyone else. A name taken anyway (by a player made before the
    namespace was reserved) is never fatal: the next of ``<name>-2`` ... is tried. Without Redis
    (house bots pointed at someone else's server): an ordinary player registered over HTTP,
    outside the reserved namespace."""
    if store is None:
        reg_name = f"{name.removeprefix('house-')}-{os.urandom(3).hex()}"
        return str(client.players.register(reg_name).token)
    from ..store import players
    from ..store.errors import StoreError

    raw = store.hget(TOKENS_KEY, name)
    if raw:
        token = raw.decode() if isinstance(raw, bytes) else str(raw)
        if players.authenticate(store, token) is not None:
            return token
        log.warning("%s: the kept token no longer works; registering again", name)
    for i in range(1, NAME_TRIES + 1):
        candidate = name if i == 1 else f"{name}-{i}"
        try:
            player = players.register(store, candidate, house=True)
        except StoreError as e:
            if e.code != "name_taken":
                raise
            log.warning("%s: the name %s is taken; trying another", name, candidate)
            continue
        store.hset(TOKENS_KEY, name, player["token"])
        return str(player["token"])
    log.error("%s: no free name among %s..%s-%d; this bot sits out", name, name, name,
              NAME_TRIES)
    return None


def player_name(store: Any, token: str) -> str:
    """The name the house bot plays under: its own, or ``<name>-<n>`` when its own was taken
    (only the store knows which, for a kept token); "?" without the stack's Redis or when the
    store can't say (this only labels a log line)."""
    if store is None:
        return "?"
    from ..store import players

    try:
        pid = players.authenticate(store, token)
        return players.get(store, pid)["name"] if pid else "?"
    except Exception:  # noqa: BLE001 - a label is never worth stopping a bot for
        return "?"


def _is_transient(e: BaseException) -> bool:
    """Whether getting a player failed only because Redis or the API is unreachable for now
    (an outage, a failover, a restart): worth retrying, unlike a bug or a refused name."""
    from llsdk import ServiceUnavailable, TransportError
    from redis.exceptions import ClusterDownError, ConnectionError, TimeoutError, TryAgainError

    return isinstance(e, (ConnectionError, TimeoutError, ClusterDownError, TryAgainError,
                          TransportError, ServiceUnavailable))


#: seconds between tries while Redis or the API is unreachable: doubling from the first to the
#: last, so a bot is back within about 10 s of the end of an outage of any length
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 10.0


def player_token_retrying(client: Any, store: Any, name: str,
                          stop: threading.Event) -> str | None:
    """:func:`player_token`, tried again while Redis or the API is unreachable (the house bots
    may start in the middle of an outage; a bot that sat out until the next restart would leave
    a ladder without its opponents). None once ``stop`` is set or on a lasting failure."""
    delay = RETRY_FIRST_S
    while not stop.is_set():
        try:
            return player_token(client, store, name)
        except Exception as e:
            if not _is_transient(e):
                raise
            log.warning("%s: cannot get a player yet (%s: %s); trying again in %.1f s",
                        name, type(e).__name__, e, delay)
        stop.wait(delay)
        delay = min(delay * 2, RETRY_MAX_S)
    return None


def main() -> int:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "info").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Each bot's line per match and per round (llsdk.bot at INFO) is for a bot author watching
    # their own bot; for the house bots the web pages show the matches. Warnings still show.
    logging.getLogger("llsdk").setLevel(os.environ.get("HOUSE_BOTS_LOG_LEVEL", "warning").upper())
    from llsdk import Client

    url = os.environ.get("LLSDK_URL") or "http://127.0.0.1:8000"
    names = [n.strip() for n in (os.environ.get("HOUSE_BOTS_FILES") or DEFAULT_FILES)
             .split(",") if n.strip()]
    try:
        budget_ms = float(os.environ.get("HOUSE_BOTS_BUDGET_MS") or 0)
    except ValueError:
        raise SystemExit("HOUSE_BOTS_BUDGET_MS must be a number of milliseconds") from None
    copies = int(os.environ.get("HOUSE_BOTS_COPIES") or 2)
    poll_wait = float(os.environ.get("HOUSE_BOTS_POLL_WAIT") or 10)
    threads: list[threading.Thread] = []
    drain_s = drain_seconds()
    stop = threading.Event()
    drain = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        # the first signal drains (each bot finishes its matches), a second one stops now
        if drain.is_set() or drain_s <= 0 or not threads:
            stop.set()
        else:
            log.info("stopping: the house bots finish their matches (up to %.0f s; signal "
                     "again to stop now)", drain_s)
            drain.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    anon = Client(url)
    while not stop.is_set():  # the API may still be starting
        try:
            anon.ready()
            break
        except Exception as e:  # noqa: BLE001 - keep waiting
            log.info("waiting for %s: %s", url, e)
            stop.wait(2)
    if stop.is_set():
        return 0
    wanted = os.environ.get("HOUSE_BOTS_LADDERS")
    ladders = [n.strip() for n in wanted.split(",") if n.strip()] if wanted else \
        [lad.name for lad in anon.ladder.list()]
    store = _token_store()
    for bot_name in names:
        cls = load_bot_class(bots_dir() / f"{bot_name}.py")
        for i in range(copies):
            player = f"house-{bot_name.removesuffix('_bot')}-{i + 1}"
            try:
                token = player_token_retrying(anon, store, player, stop)
            except Exception:  # noqa: BLE001 - one bot's trouble never stops the others
                log.exception("%s: could not get a player; this bot sits out", player)
                token = None
            if token is None:
                continue
            client = Client(url, token)
            bot = cls()
            if budget_ms > 0 and hasattr(bot, "budget"):
                bot.budget = budget_ms / 1000
            t = threading.Thread(target=bot.run, args=(client,), name=player, daemon=True,
                                 kwargs={"ladders": ladders, "stop_event": stop,
                                         "poll_wait": poll_wait, "drain_event": drain,
                                         "drain_s": drain_s})
            t.start()
            threads.append(t)
            # the name it plays under, which is what the web pages and the online list show
            log.info("%s (%s) plays as %s on %s in %s", player, cls.__name__,
                     player_name(store, token), url, ", ".join(ladders) or "no ladder")
    if drain.is_set():  # a stop came while the bots were starting: they drain at once
        log.info("stopping while starting: the bots started finish their matches")
    if not threads:  # idle rather than exit: the stack would only start us again
        log.error("no house bot could get a player; idling until stopped")
        while not (stop.is_set() or drain.is_set()):
            stop.wait(0.5)
    while not stop.is_set() and any(t.is_alive() for t in threads):
        time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
