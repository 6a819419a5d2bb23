"""Small measuring helpers shared by the benchmarks under bench/."""

from __future__ import annotations

import os


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process and its children so far (Linux /proc), else 0."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except (OSError, ValueError):
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(k) for k in kids)


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank); NaN for no values."""
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]
