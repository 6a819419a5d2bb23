"""A proxy in front of a private redis-server (unix sockets) that can stall exactly after a
transaction was sent: Redis receives and runs the ``EXEC``, its answer (and every answer after
it) is held back. The client times out although the change was applied: a ``503`` whose
outcome is "applied", the case a retry with the same ``Idempotency-Key`` must answer with the
first answer.

    with RedisFreezeProxy(rp.socket_path) as proxy:   # proxy.url: unix://...
        proxy.freeze_after_exec()      # the next EXEC goes through; then nothing comes back
        ...
        proxy.thaw()                   # answers flow again (the held ones are dropped)
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from types import TracebackType

EXEC = b"\r\nEXEC\r\n"


class RedisFreezeProxy:
    def __init__(self, redis_socket: str) -> None:
        self.target = redis_socket
        self.tmpdir = tempfile.mkdtemp(prefix="llfrz-")
        self.path = os.path.join(self.tmpdir, "proxy.sock")
        self._armed = threading.Event()
        self._frozen = threading.Event()
        self.execs_frozen = 0
        self._marker = EXEC
        self._listener: socket.socket | None = None
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def freeze_after_exec(self, marker: bytes = EXEC) -> None:
        """Arm: the next command that carries ``marker`` (an ``EXEC``, or a commit script's
        SHA1 sent with EVALSHA) goes through, then every answer is held."""
        self._marker = marker
        self._armed.set()

    def thaw(self) -> None:
        self._armed.clear()
        self._frozen.clear()

    @property
    def frozen(self) -> bool:
        return self._frozen.is_set()

    def start(self) -> RedisFreezeProxy:
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(self.path)
        ls.listen(256)
        self._listener = ls
        threading.Thread(target=self._accept, daemon=True, name="freeze-proxy").start()
        return self

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                server.connect(self.target)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._up, args=(client, server), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket) -> None:
        """client -> Redis, always; an EXEC while armed freezes its answer and every one after it."""
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                # frozen before the bytes leave: set after sendall, Redis's answer could be
                # forwarded by _down first (CI, a busy machine: the action answered 200)
                if self._armed.is_set() and self._marker in data:
                    self.execs_frozen += 1
                    self._frozen.set()
                server.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _down(self, server: socket.socket, client: socket.socket) -> None:
        """Redis -> client, unless frozen (then the answers are dropped)."""
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                if not self._frozen.is_set():
                    client.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, server):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self) -> RedisFreezeProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
