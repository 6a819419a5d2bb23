"""A TCP proxy for tests that loses responses on purpose: it forwards a request to the server,
reads the server's whole answer, and then drops the client connection without passing it on.
The client sees a connection reset although the server did the work: the situation that
``Idempotency-Key`` exists for.

    with DropProxy("127.0.0.1", server_port) as proxy:
        proxy.drop_next()                        # the next connection loses its response
        requests.post(proxy.url + "/v1/...")     # raises requests.ConnectionError
        lost = proxy.dropped[0]                  # what the server had answered:
        lost.status, lost.headers, lost.body

Connections that are not marked for dropping are forwarded both ways unchanged. One thread per
connection direction; plain sockets, no dependencies.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType


class DroppedResponse:
    """A response the server sent and the client never received."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip()
                        for k, _, v in (line.partition(":") for line in lines[1:])}


def _read_message(sock: socket.socket, timeout: float) -> bytes:
    """One complete HTTP/1.1 request or response (Content-Length framed, else up to EOF for a
    response; a request without Content-Length has no body)."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    if length is None and head.split(b" ", 1)[0].startswith(b"HTTP/"):  # a response: to EOF
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return buf
            buf += chunk
    length = length or 0
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def _reset(sock: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0): the client's read fails at once."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class DropProxy:
    """Listens on 127.0.0.1:<free port> and forwards to ``(host, port)``."""

    def __init__(self, host: str, port: int, *, response_timeout: float = 30.0) -> None:
        self.upstream = (host, port)
        self.response_timeout = response_timeout
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._to_drop = 0
        self.dropped: list[DroppedResponse] = []
        self.connections = 0
        self._closing = False
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._accept_loop, name="dropproxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def drop_next(self, n: int = 1) -> None:
        """The next ``n`` connections get their first response swallowed, then a reset."""
        with self._lock:
            self._to_drop += n

    # ------------------------------------------------------------------ plumbing

    def start(self) -> DropProxy:
        self._accept.start()
        return self

    def close(self) -> None:
        self._closing = True
        with contextlib.suppress(OSError):
            self._listener.close()
        for t in self._threads:
            t.join(timeout=2)

    def _accept_loop(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                drop = self._to_drop > 0
                if drop:
                    self._to_drop -= 1
            t = threading.Thread(target=self._handle, args=(client, drop), daemon=True)
            self._threads.append(t)
            t.start()

    def _handle(self, client: socket.socket, drop: bool) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            _reset(client)
            return
        if not drop:
            back = threading.Thread(target=self._pipe, args=(upstream, client), daemon=True)
            back.start()
            self._pipe(client, upstream)
            back.join(timeout=self.response_timeout)
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.close()
            return
        # Forward one request, read the server's whole answer, then reset the client.
        raw = b""
        try:
            request = _read_message(client, self.response_timeout)
            if request:
                upstream.sendall(request)
                raw = _read_message(upstream, self.response_timeout)
        except OSError:
            pass
        if raw:
            with self._lock:
                self.dropped.append(DroppedResponse(raw))
        _reset(client)
        with contextlib.suppress(OSError):
            upstream.close()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def __enter__(self) -> DropProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
