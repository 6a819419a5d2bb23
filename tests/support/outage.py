"""What the whole-stack outage tests (tests/system/test_outages.py, test_data_stall.py) watch
while a process is down or Redis stalls: a :class:`Probe` that hits the API all along, and the
check that whatever it sent during the outage got a clean ``503 service_unavailable``."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests

#: one probe: (sent, answered, status, body, headers); status 0 when the client gave up
Seen = tuple[float, float, int, Any, dict[str, str]]


@dataclass
class Probe:
    """Sends ``calls`` (method, path, keyword arguments of ``requests``) to ``url`` in turn from
    a thread, one at a time, every 0.1 s, and records each answer in ``seen``; a request the
    client gave up on (``timeout`` s) or could not send is status 0."""

    url: str
    calls: list[tuple[str, str, dict[str, Any]]]
    timeout: float = 15.0
    seen: list[Seen] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Probe:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        http = requests.Session()
        http.trust_env = False
        i = 0
        while not self.stop.wait(0.1):
            method, path, kw = self.calls[i % len(self.calls)]
            i += 1
            sent = time.time()
            try:
                resp = http.request(method, self.url + path, timeout=self.timeout, **kw)
            except requests.RequestException:
                self.seen.append((sent, time.time(), 0, None, {}))
                continue
            try:
                body = resp.json()
            except ValueError:
                body = resp.text[:200]
            self.seen.append((sent, time.time(), resp.status_code, body, dict(resp.headers)))

    def check_outage(self, down: float, up: float, at_least: int) -> None:
        """Every request sent after the outage had begun (with half a second's grace) and
        answered before it ended was a JSON ``503 service_unavailable`` with ``Retry-After``,
        and there were ``at_least`` of them; no request at all got a 500 or no answer."""
        during = [p for p in self.seen if p[0] >= down + 0.5 and p[1] <= up - 0.2]
        assert len(during) >= at_least, f"too few answers during the outage: {len(during)}"
        for _, _, status, body, headers in during:
            assert status == 503, (status, body)
            assert body["code"] == "service_unavailable" and body["status"] == 503, body
            assert int(headers["Retry-After"]) >= 1, headers
        statuses = {p[2] for p in self.seen}
        assert 500 not in statuses and 0 not in statuses, statuses
