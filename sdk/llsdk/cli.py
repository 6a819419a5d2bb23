"""The ``llsdk`` command.

    llsdk register NAME                       register a player, print its token
    llsdk play BOT.py [--ladder NAME]...      play every match of the token's player
    llsdk arena BOT.py BOT.py ... [--ruleset classic] [--games 2000] [--seed 1] [--budget-ms 100]
    llsdk challenge NAME [NAME...] [--ruleset classic] [--wait 60]   challenge players
    llsdk token rotate                        a new token for the player; the old one stops

The server URL and token come from ``--url`` / ``--token`` or ``LLSDK_URL`` / ``LLSDK_TOKEN``.
``BOT.py`` is a file defining a :class:`~llsdk.Bot` subclass (``BOT.py:ClassName`` picks one
when it defines several).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import sys
import time
from collections.abc import Sequence

from . import __version__
from .bot import Bot, add_play_arguments, play_from_args
from .client import DEFAULT_URL, Client
from .errors import LLSDKError, TransportError


class BotLoadError(Exception):
    pass


def load_bot_class(spec: str) -> type[Bot]:
    """The :class:`Bot` subclass defined in a file: ``path/to/bot.py`` or
    ``path/to/bot.py:ClassName``."""
    path, _, cls_name = spec.partition(":")
    if not os.path.isfile(path):
        raise BotLoadError(f"{path}: no such file")
    mod_name = "llsdk_bot_" + "".join(ch if ch.isalnum() else "_"
                                       for ch in os.path.abspath(path))
    module = sys.modules.get(mod_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise BotLoadError(f"{path}: not a Python file")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        # the bot's own directory first, so it can import its helper modules
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        try:
            loader_spec.loader.exec_module(module)
        except Exception:
            del sys.modules[mod_name]
            raise
        finally:
            sys.path.pop(0)
    found = [c for _, c in inspect.getmembers(module, inspect.isclass)
             if issubclass(c, Bot) and c is not Bot and c.__module__ == mod_name]
    if cls_name:
        found = [c for c in found if c.__name__ == cls_name]
        if not found:
            raise BotLoadError(f"{path}: no Bot subclass named {cls_name}")
    if not found:
        raise BotLoadError(f"{path}: defines no subclass of llsdk.Bot")
    if len(found) > 1:
        raise BotLoadError(f"{path}: several Bot subclasses ({', '.join(c.__name__ for c in found)});"
                           f" pick one with {path}:ClassName")
    return found[0]


def load_bot(spec: str) -> Bot:
    """An instance of the bot in ``spec``, named after its file unless it sets ``name``."""
    cls = load_bot_class(spec)
    bot = cls()
    if not bot.name:
        bot.name = os.path.splitext(os.path.basename(spec.partition(":")[0]))[0]
    return bot


# --------------------------------------------------------------------------- commands


def cmd_register(args: argparse.Namespace) -> int:
    with Client(args.url) as client:
        player = client.players.register(args.name)
    if args.json:
        print(json.dumps({"id": player.id, "name": player.name, "token": player.token}))
    else:
        print(f"registered {player.name} ({player.id}) on {args.url}")
        print(f"token (shown once, keep it): {player.token}")
        print(f"\n  export LLSDK_URL={args.url}\n  export LLSDK_TOKEN={player.token}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    return play_from_args(load_bot(args.bot), args)


def cmd_arena(args: argparse.Namespace) -> int:
    from . import arena

    bots = [load_bot(spec) for spec in args.bots]
    if not 2 <= len(bots) <= 6:
        print("llsdk arena: give 2 to 6 bots (one per seat; a file may repeat)",
              file=sys.stderr)
        return 2
    result = arena.run(bots, args.ruleset, games=args.games, seed=args.seed,
                       tokens_to_win=args.tokens_to_win, budget_ms=args.budget_ms,
                       progress=None if args.no_progress else sys.stderr)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.table())
    return 0


def _budget(text: str) -> float:
    try:
        ms = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if not 0 < ms <= 600_000:  # also refuses nan and inf
        raise argparse.ArgumentTypeError("give from 0 (excluded) to 600000 milliseconds")
    return ms


def cmd_challenge(args: argparse.Namespace) -> int:
    """Challenge the named players; print the challenge as JSON (with ``--wait``, once it is
    answered, expired or the wait is over). Play the match with ``llsdk play``."""
    if not args.token:
        print("llsdk challenge: no token: pass --token or set LLSDK_TOKEN", file=sys.stderr)
        return 2
    with Client(args.url, args.token) as client:
        ch = client.challenges.create(
            args.opponents, args.ruleset, turn_timeout_s=args.turn_timeout, seed=args.seed,
            tokens_to_win=args.tokens_to_win, expires_in_s=args.expires_in)
        end = time.monotonic() + args.wait
        while ch.open and time.monotonic() < end:
            time.sleep(0.5)
            ch = client.challenges.get(ch.id)
    print(json.dumps(ch.raw, indent=2))
    if ch.match_id:
        print(f"match {ch.match_id} started: play it with `llsdk play BOT.py`", file=sys.stderr)
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    """``llsdk token rotate``: print the new token (the old one is refused from now on)."""
    if not args.token:
        print("llsdk token: no token: pass --token or set LLSDK_TOKEN", file=sys.stderr)
        return 2
    with Client(args.url, args.token) as client:
        token = client.rotate_token()
    if args.json:
        print(json.dumps({"token": token}))
    else:
        print(f"new token (shown once, keep it; the old one no longer works): {token}")
        print(f"\n  export LLSDK_TOKEN={token}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="llsdk", description="Love Letter Arena SDK tools")
    ap.add_argument("--version", action="version", version=f"llsdk {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("register", help="register a player and print its token")
    p.add_argument("name")
    p.add_argument("--url", default=os.environ.get("LLSDK_URL", DEFAULT_URL),
                   help="server URL (default: $LLSDK_URL or %(default)s)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(fn=cmd_register)

    p = sub.add_parser("play", help="play every match of the token's player with BOT.py")
    p.add_argument("bot", metavar="BOT.py")
    add_play_arguments(p)
    p.set_defaults(fn=cmd_play)

    p = sub.add_parser("arena", help="play bots against each other offline")
    p.add_argument("bots", nargs="+", metavar="BOT.py", help="one per seat (2 to 6)")
    p.add_argument("--ruleset", default="classic", choices=["classic", "2019", "2019-classic"])
    p.add_argument("--games", type=int, default=1000)
    p.add_argument("--seed", default="1")
    p.add_argument("--tokens-to-win", type=int, default=None)
    p.add_argument("--budget-ms", type=_budget, default=None, metavar="MS",
                   help="CPU milliseconds per move for every bot with a 'budget' attribute "
                        "(e.g. examples/bots/search_bot.py; default: each bot's own)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(fn=cmd_arena)

    p = sub.add_parser("challenge", help="challenge players (names or ids) to an unrated match")
    p.add_argument("opponents", nargs="+", metavar="NAME", help="1 to 5 players")
    p.add_argument("--ruleset", default="classic", choices=["classic", "2019", "2019-classic"])
    p.add_argument("--turn-timeout", type=int, default=None, metavar="S",
                   help="seconds per turn (server default 30)")
    p.add_argument("--tokens-to-win", type=int, default=None)
    p.add_argument("--seed", default=None, help="a seed: the deal is reproducible")
    p.add_argument("--expires-in", type=int, default=None, metavar="S",
                   help="close the challenge unanswered after S seconds (server default 120)")
    p.add_argument("--wait", type=float, default=0.0, metavar="S",
                   help="wait up to S seconds for the answers before printing")
    p.add_argument("--url", default=os.environ.get("LLSDK_URL", DEFAULT_URL),
                   help="server URL (default: $LLSDK_URL or %(default)s)")
    p.add_argument("--token", default=os.environ.get("LLSDK_TOKEN"),
                   help="your token (default: $LLSDK_TOKEN)")
    p.set_defaults(fn=cmd_challenge)

    p = sub.add_parser("token", help="manage the player's token")
    p.add_argument("action", choices=["rotate"],
                   help="rotate: issue a new token and revoke the one given")
    p.add_argument("--url", default=os.environ.get("LLSDK_URL", DEFAULT_URL),
                   help="server URL (default: $LLSDK_URL or %(default)s)")
    p.add_argument("--token", default=os.environ.get("LLSDK_TOKEN"),
                   help="your token (default: $LLSDK_TOKEN)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(fn=cmd_token)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except BotLoadError as e:
        print(f"llsdk: {e}", file=sys.stderr)
        return 2
    except TransportError as e:
        url = getattr(args, "url", None)
        print(f"llsdk: {e}\nllsdk: is the server at {url} running (make run)? Point LLSDK_URL "
              "or --url at it.", file=sys.stderr)
        return 1
    except LLSDKError as e:
        print(f"llsdk: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


__all__ = ["BotLoadError", "build_parser", "load_bot", "load_bot_class", "main"]
