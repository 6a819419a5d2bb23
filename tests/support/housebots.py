"""``python -m service.ops.house_bots`` as a process of a test's stack (one bot of each kind, no
ladder unless the API has some), in its own process group, its output in a temp log."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

from tests.support import REPO, read_log


class HouseBots:
    def __init__(self, api_url: str, redis_url: str, *, env: dict[str, str] | None = None) -> None:
        self.env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        self.env.update({"LLSDK_URL": api_url, "REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1",
                         "HOUSE_BOTS_COPIES": "1", "HOUSE_BOTS_POLL_WAIT": "5",
                         "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")})
        self.env.update(env or {})
        self.tmpdir = tempfile.mkdtemp(prefix="llhouse-")
        self.log_path = os.path.join(self.tmpdir, "house_bots.log")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> HouseBots:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "service.ops.house_bots"], cwd=REPO,
                                         env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return read_log(self.log_path)

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmpdir, ignore_errors=True)
