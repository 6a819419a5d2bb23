"""A JSON client on one keep-alive HTTP connection, for the load benchmarks (bench/api.py,
bench/scale.py): the standard library's http.client, so the client side spends as little CPU
per request as it can and the figures are the server's."""

from __future__ import annotations

import http.client
import json
from typing import Any


class KeepAlive:
    """One keep-alive connection to 127.0.0.1:``port`` (use one per thread)."""

    def __init__(self, port: int, timeout: float = 30) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, method: str, path: str, body: Any = None,
             token: str | None = None) -> tuple[int, Any]:
        """(status, parsed JSON body or None)."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.conn.request(method, path, body=None if body is None else json.dumps(body),
                          headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None

    def ok(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        """The parsed body of a 2xx answer; anything else raises."""
        status, data = self.call(method, path, body, token)
        if status >= 300:
            raise RuntimeError(f"{method} {path} -> {status}: {data}")
        return data

    def close(self) -> None:
        self.conn.close()
