"""The committed nginx config (deploy/nginx/templates/default.conf.template, docker compose's
`proxy` profile), run by Debian's real nginx over TLS (a self-signed certificate made here with
the openssl CLI) in front of a real API server under gunicorn, all on 127.0.0.1 and free ports:

- requests and long-polls pass the proxy, and the longest long-poll the API makes (MAX_WAIT_S)
  is shorter than the proxy's read timeout;
- plain HTTP is redirected to HTTPS;
- with TRUSTED_PROXIES=1 the API's rate limits apply per real client (clients connect from
  different loopback addresses), and an X-Forwarded-For a client makes up changes nothing;
- with TRUSTED_PROXIES=0 (the default) the header is ignored: every client behind the proxy
  shares the proxy's address, and its limit.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.config import Config
from tests.support.nginx import TEMPLATE, Nginx, find_nginx
from tests.support.redis_proc import RedisProcess
from tests.support.server import REPO, ApiServer, free_port

NGINX = find_nginx()
pytestmark = pytest.mark.skipif(NGINX.startswith("no nginx"), reason=NGINX)
LIMIT = 4  # anonymous requests per minute per client address, in these tests
CLIENT_A, CLIENT_B = "127.0.0.2", "127.0.0.3"  # all of 127/8 is loopback on Linux


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl CLI to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    crt, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(crt)],
                   check=True, capture_output=True, timeout=60)
    return str(crt), str(key)


@pytest.fixture(scope="module")
def redis_proc() -> Iterator[RedisProcess]:
    with RedisProcess() as rp:
        yield rp


def _stack(redis_proc: RedisProcess, cert: tuple[str, str],
           trusted: str) -> Iterator[tuple[ApiServer, Nginx]]:
    env = {"TRUSTED_PROXIES": trusted, "RATE_LIMITS": "1", "RATE_LIMIT": f"{LIMIT}/minute",
           "REGISTER_RATE_LIMIT": "off", "MAX_WAIT_S": "60"}
    with ApiServer(redis_proc.url, env=env) as api:
        values = {"PROXY_LISTEN_HTTPS": f"127.0.0.1:{free_port()}",
                  "PROXY_LISTEN_HTTP": f"127.0.0.1:{free_port()}",
                  "API_UPSTREAM": f"127.0.0.1:{api.port}", "SERVER_NAME": "localhost",
                  "TLS_CERT": cert[0], "TLS_KEY": cert[1]}
        ngx = Nginx(values, https_port=int(values["PROXY_LISTEN_HTTPS"].rpartition(":")[2]),
                    http_port=int(values["PROXY_LISTEN_HTTP"].rpartition(":")[2]))
        with ngx:
            yield api, ngx


@pytest.fixture(scope="module")
def trusted(redis_proc: RedisProcess, cert: tuple[str, str]) -> Iterator[tuple[ApiServer, Nginx]]:
    yield from _stack(redis_proc, cert, "1")


@pytest.fixture(autouse=True)
def _fresh_limits(redis_proc: RedisProcess) -> None:
    r = redis_proc.client()
    for key in list(r.scan_iter(match="LIMITS:*")):
        r.delete(key)
    r.close()


def https(ngx: Nginx, cert: str, method: str, path: str, *, source: str = "127.0.0.1",
          headers: dict[str, str] | None = None, body: Any = None,
          timeout: float = 30) -> tuple[int, dict[str, str], Any]:
    ctx = ssl.create_default_context(cafile=cert)
    conn = http.client.HTTPSConnection("127.0.0.1", ngx.https_port, context=ctx,
                                       source_address=(source, 0), timeout=timeout)
    try:
        data = None if body is None else json.dumps(body)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        ctype = resp.getheader("Content-Type") or ""
        return resp.status, dict(resp.getheaders()), json.loads(raw) if "json" in ctype else raw
    finally:
        conn.close()


def test_the_config_passes_nginx_t(cert: tuple[str, str]) -> None:
    ngx = Nginx({"PROXY_LISTEN_HTTPS": f"127.0.0.1:{free_port()}",
                 "PROXY_LISTEN_HTTP": f"127.0.0.1:{free_port()}", "API_UPSTREAM": "127.0.0.1:9",
                 "SERVER_NAME": "localhost", "TLS_CERT": cert[0], "TLS_KEY": cert[1]},
                https_port=0, http_port=0)
    try:
        done = ngx.check()
        assert done.returncode == 0, done.stderr
    finally:
        ngx.close()


def test_the_longest_long_poll_is_shorter_than_the_proxy_read_timeout() -> None:
    text = TEMPLATE.read_text()
    (timeout,) = re.findall(r"^\s*proxy_read_timeout\s+(\d+)s;", text, re.M)
    compose = yaml.safe_load((Path(REPO) / "docker-compose.yml").read_text())
    wait = compose["services"]["api"]["environment"]["MAX_WAIT_S"]
    compose_max = int(re.fullmatch(r"\$\{MAX_WAIT_S:-(\d+)\}", wait).group(1))  # type: ignore[union-attr]
    # the API answers a long-poll within MAX_WAIT_S plus its own work; 10 s to spare at least
    assert max(Config().max_wait_s, compose_max) + 10 <= int(timeout)
    assert re.search(r"^\s*proxy_buffering off;", text, re.M), "woken polls must not wait"


def test_requests_and_long_polls_pass_the_tls_proxy(trusted: tuple[ApiServer, Nginx],
                                                     cert: tuple[str, str]) -> None:
    api, ngx = trusted
    status, _, body = https(ngx, cert[0], "GET", "/v1")
    assert status == 200 and "engine" in body, body
    status, _, me = https(ngx, cert[0], "POST", "/v1/players", body={"name": "proxied-bot"})
    assert status == 201, me
    auth = {"Authorization": f"Bearer {me['token']}"}
    # a long-poll that waits its whole time and answers through the proxy (not a 504)
    status, _, events = https(ngx, cert[0], "GET", "/v1/me/events?wait=2", headers=auth)
    assert status == 200 and events["events"] == [], events
    # the API saw https (X-Forwarded-Proto) and the client's address
    log = api.log_text()
    assert '"path":"/v1/me/events"' in log and '"remote":"127.0.0.1"' in log


def test_plain_http_is_redirected_to_https(trusted: tuple[ApiServer, Nginx]) -> None:
    _, ngx = trusted
    conn = http.client.HTTPConnection("127.0.0.1", ngx.http_port, timeout=10)
    try:
        conn.request("GET", "/v1/rulesets", headers={"Host": "localhost"})
        resp = conn.getresponse()
        assert resp.status == 308 and resp.getheader("Location") == "https://localhost/v1/rulesets"
    finally:
        conn.close()


def test_rate_limits_apply_per_real_client_behind_a_trusted_proxy(
        trusted: tuple[ApiServer, Nginx], cert: tuple[str, str]) -> None:
    api, ngx = trusted
    for _ in range(LIMIT):
        assert https(ngx, cert[0], "GET", "/v1/rulesets", source=CLIENT_A)[0] == 200
    status, headers, body = https(ngx, cert[0], "GET", "/v1/rulesets", source=CLIENT_A)
    assert status == 429 and body["code"] == "rate_limited" and int(headers["Retry-After"]) >= 1
    # naming another address changes nothing: nginx appends the real one, the API reads that
    spoof = {"X-Forwarded-For": "203.0.113.7"}
    assert https(ngx, cert[0], "GET", "/v1/rulesets", source=CLIENT_A, headers=spoof)[0] == 429
    # another client has a limit of its own
    assert https(ngx, cert[0], "GET", "/v1/rulesets", source=CLIENT_B)[0] == 200
    assert f'"remote":"{CLIENT_A}"' in api.log_text()
    assert '"remote":"203.0.113.7"' not in api.log_text()


def test_without_trusted_proxies_the_header_is_ignored_and_clients_share_the_proxys_limit(
        redis_proc: RedisProcess, cert: tuple[str, str]) -> None:
    for api, ngx in _stack(redis_proc, cert, "0"):
        for _ in range(LIMIT):
            assert https(ngx, cert[0], "GET", "/v1/rulesets", source=CLIENT_A)[0] == 200
        assert https(ngx, cert[0], "GET", "/v1/rulesets", source=CLIENT_B)[0] == 429
        assert f'"remote":"{CLIENT_A}"' not in api.log_text()


def test_an_oversized_body_is_answered_by_the_api_in_json(trusted: tuple[ApiServer, Nginx],
                                                          cert: tuple[str, str]) -> None:
    """nginx lets bodies above MAX_BODY_BYTES (16 KB) through, so the API's JSON 413 answers."""
    _, ngx = trusted
    status, _, body = https(ngx, cert[0], "POST", "/v1/players",
                            body={"name": "x" * 20_000})
    assert status == 413 and body["code"] == "payload_too_large", body
