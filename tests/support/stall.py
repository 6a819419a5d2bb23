"""Stall a private redis-server: it keeps its socket (connections are still accepted by the
kernel) but answers nothing, as during a long fork, a full disk or a paused VM.

    with stalled(rp):          # SIGSTOP now, SIGCONT on leaving (even on a failure)
        ...
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def _pid(proc: subprocess.Popen[bytes] | int | None) -> int:
    if proc is None:
        raise RuntimeError("the redis-server is not running")
    return proc if isinstance(proc, int) else proc.pid


@contextmanager
def stalled(server: object) -> Iterator[None]:
    """SIGSTOP ``server`` (a RedisProcess, anything with ``.proc``, or a pid) for the block."""
    pid = _pid(getattr(server, "proc", server))  # type: ignore[arg-type]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
