"""The writes of one change of a match besides its own document and events, recorded to go
into the match's commit script (``store/matches.py``): the same calls as on a redis-py pipeline
(``c.zadd(key, {member: score})``), each kept as the command's arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


class Commit:
    """The recorded commands (``ops``), RQ's jobs to queue once committed (``jobs``:
    ``store/queues.py``), and an error to raise once committed (``error``: a refused action
    whose timeouts stay applied)."""

    def __init__(self) -> None:
        self.ops: list[tuple[Any, ...]] = []
        self.jobs: list[Callable[[Any], Any]] = []
        self.error: Exception | None = None

    def set(self, name: str, value: Any, ex: int | None = None) -> None:
        self.ops.append(("SET", name, value) if ex is None else ("SET", name, value, "EX", ex))

    def zadd(self, name: str, mapping: Mapping[str, float]) -> None:
        args: list[Any] = []
        for member, score in mapping.items():
            args += [score, member]
        self.ops.append(("ZADD", name, *args))

    def zrem(self, name: str, *members: str) -> None:
        self.ops.append(("ZREM", name, *members))

    def hincrby(self, name: str, key: str, amount: int = 1) -> None:
        self.ops.append(("HINCRBY", name, key, amount))

    def xadd(self, name: str, fields: Mapping[str, Any], maxlen: int | None = None,
             approximate: bool = True) -> None:
        cap: list[Any] = [] if maxlen is None else ["MAXLEN", "~" if approximate else "=",
                                                    maxlen]
        flat: list[Any] = []
        for k, v in fields.items():
            flat += [k, v]
        self.ops.append(("XADD", name, *cap, "*", *flat))

    def expire(self, name: str, seconds: int) -> None:
        self.ops.append(("EXPIRE", name, seconds))

    def publish(self, channel: str, message: Any) -> None:
        self.ops.append(("PUBLISH", channel, message))
