"""Debian's nginx running the committed proxy config (deploy/nginx/templates), for the proxy
tests: on 127.0.0.1 only, on free ports, in its own temp directory.

    with Nginx(values) as ngx:         # values: PROXY_LISTEN_HTTPS, API_UPSTREAM, TLS_CERT...
        ngx.https_port

The template is filled in as the nginx image's entrypoint does (envsubst of exactly the given
variables; nginx's own ``$variables`` stay), then included in a minimal main config whose pid,
logs and temp files live in the temp directory (the test never touches /etc/nginx or
/var/lib/nginx). ``find_nginx`` says why when there is none (``make test`` installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from tests.support import REPO, read_log

TEMPLATE = Path(REPO) / "deploy" / "nginx" / "templates" / "default.conf.template"
_VAR = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


def find_nginx() -> str:
    """nginx's path, or the reason there is none (a string starting with 'no nginx')."""
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)
    return found or "no nginx installed (make test installs Debian's nginx when it can)"


def render(template: str, values: dict[str, str]) -> str:
    """envsubst with exactly ``values``: every ``${NAME}`` of the template must be given."""
    missing = sorted({m for m in _VAR.findall(template) if m not in values})
    if missing:
        raise KeyError(f"the template needs {missing}")
    return _VAR.sub(lambda m: values[m.group(1)], template)


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: str, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}:\n{read_log(log)}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nginx did not listen on {port} within {timeout}s:\n{read_log(log)}")


class Nginx:
    def __init__(self, values: dict[str, str], *, https_port: int, http_port: int) -> None:
        self.exe = find_nginx()
        self.values = values
        self.https_port, self.http_port = https_port, http_port
        self.dir = tempfile.mkdtemp(prefix="llnginx-")
        self.log_path = os.path.join(self.dir, "error.log")
        self.access_log = os.path.join(self.dir, "access.log")
        self.conf = os.path.join(self.dir, "nginx.conf")
        self.proc: subprocess.Popen[bytes] | None = None

    def write_config(self) -> str:
        site = os.path.join(self.dir, "default.conf")
        Path(site).write_text(render(TEMPLATE.read_text(), self.values))
        temp = {name: os.path.join(self.dir, name) for name in
                ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
        for path in temp.values():
            os.makedirs(path, exist_ok=True)
        # as root, nginx's workers would switch to an unprivileged user that can't reach the
        # temp directory (0700)
        user = "user root;\n" if os.geteuid() == 0 else ""
        Path(self.conf).write_text(
            f"{user}worker_processes 1;\npid {self.dir}/nginx.pid;\n"
            f"error_log {self.log_path} info;\nevents {{ worker_connections 256; }}\n"
            f"http {{\n  access_log {self.access_log};\n"
            f"  client_body_temp_path {temp['body']};\n  proxy_temp_path {temp['proxy']};\n"
            f"  fastcgi_temp_path {temp['fastcgi']};\n  uwsgi_temp_path {temp['uwsgi']};\n"
            f"  scgi_temp_path {temp['scgi']};\n  include {site};\n}}\n")
        return self.conf

    def check(self) -> subprocess.CompletedProcess[str]:
        """``nginx -t`` on the config."""
        self.write_config()
        return subprocess.run([self.exe, "-t", "-e", "stderr", "-p", self.dir, "-c", self.conf],
                              capture_output=True, text=True, timeout=30, check=False)

    def start(self) -> Nginx:
        self.write_config()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.exe, "-e", self.log_path, "-p", self.dir, "-c", self.conf,
                 "-g", "daemon off;"], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        _wait_port(self.https_port, self.proc, self.log_path, 60)
        _wait_port(self.http_port, self.proc, self.log_path, 60)
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)  # graceful: the master takes its workers along
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_text(self) -> str:
        return read_log(self.log_path) + read_log(self.access_log)

    def __enter__(self) -> Nginx:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
