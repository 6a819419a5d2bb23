"""Helpers shared by the test suite and the benchmarks under bench/."""

from __future__ import annotations

import os
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def venv_executable(name: str) -> str:
    """A console script of the running interpreter's environment (the project's .venv), e.g.
    ``gunicorn`` or ``rq``, else one on PATH."""
    for candidate in (os.path.join(os.path.dirname(sys.executable), name),
                      os.path.join(REPO, ".venv", "bin", name)):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} is not installed next to the running Python")
    return found


def read_log(path: str) -> str:
    """A process's whole log, or "" while it has written none (its file does not exist yet)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""
