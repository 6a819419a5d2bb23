"""Every setting docs/operations.md documents reaches the api, worker and cron containers from
an ``.env`` file next to docker-compose.yml (the compose file as written, validated against the
Compose Specification, then resolved the way Compose does it: the ``env_file`` lines first, the
service's ``environment`` over them, ``${VAR:-default}`` filled in from the same ``.env``).

A setting fails when a service has no way to receive it, or when the compose file sets it to a
fixed value that ``.env`` cannot change (except the few fixed on purpose, each with its reason).
Settings the table marks as ``make run`` only, tests only or benchmark only are not for these
containers; the ``docker compose only`` ones must be read by the compose file itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.test_compose import interpolate, load_compose, validator

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "operations.md"
SERVICES = ("api", "worker", "cron")
NOT_FOR_CONTAINERS = ("`make run` only", "tests only", "benchmark only")
COMPOSE_ONLY = "docker compose only"
#: fixed in the compose file on purpose: (service, setting) -> why
FIXED = {
    ("api", "HOST"): "inside its container the API listens on every interface; the host side "
                     "is API_BIND",
    ("api", "PORT"): "inside its container the API listens on 8000; the host side is API_PORT",
}


def documented_settings() -> dict[str, str]:
    """The Configuration table of docs/operations.md: variable -> its meaning."""
    text = DOCS.read_text()
    section = text[text.index('<a id="configuration"></a>'):]
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \|", section, re.M)
    assert len(rows) > 40, "the settings table was not found"
    return dict(rows)


def parse_env_file(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def container_env(doc: dict[str, Any], service: str, dotenv: dict[str, str]) -> dict[str, str]:
    """What Compose hands the service's process, with ``dotenv`` as the .env file (the shell's
    environment empty)."""
    svc = doc["services"][service]
    env: dict[str, str] = {}
    for entry in svc.get("env_file", []):
        path = entry["path"] if isinstance(entry, dict) else entry
        if path == ".env":
            env.update(dotenv)
    resolved = interpolate(svc, dotenv)
    env.update({k: str(v) for k, v in (resolved.get("environment") or {}).items()})
    return env


def test_the_compose_file_with_env_file_follows_the_compose_specification() -> None:
    doc = load_compose()
    assert not list(validator().iter_errors(doc))


def test_every_documented_setting_reaches_api_worker_and_cron_from_dotenv() -> None:
    settings = documented_settings()
    doc = load_compose()
    raw = (REPO / "docker-compose.yml").read_text()
    dotenv = {name: f"from-dotenv-{name.lower()}" for name in settings}
    unreachable = []
    for name, meaning in settings.items():
        if meaning.startswith(NOT_FOR_CONTAINERS):
            continue
        if meaning.startswith(COMPOSE_ONLY):
            if "${" + name not in raw:
                unreachable.append(f"{name}: documented for docker compose, which never reads it")
            continue
        for service in SERVICES:
            got = container_env(doc, service, dotenv).get(name)
            if got != dotenv[name] and (service, name) not in FIXED:
                unreachable.append(f"{service} gets {name}={got!r}, not .env's value")
    assert not unreachable, "\n".join(unreachable)


def test_the_commands_take_rqs_redis_from_dotenv() -> None:
    doc = load_compose()
    dotenv = {"QUEUE_REDIS_URL": "redis://queue.example:6379/0"}
    for service in ("worker", "cron"):
        cmd = interpolate(doc["services"][service], dotenv)["command"]
        assert cmd[cmd.index("--url") + 1] == dotenv["QUEUE_REDIS_URL"], service


def test_the_check_catches_a_setting_the_compose_file_pins() -> None:
    """The check itself: a compose file that pins a documented setting, or passes no .env,
    fails it."""
    settings = documented_settings()
    dotenv = {name: f"from-dotenv-{name.lower()}" for name in settings}
    doc = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    doc["services"]["api"]["environment"]["TRUSTED_PROXIES"] = "0"
    assert container_env(doc, "api", dotenv)["TRUSTED_PROXIES"] == "0"
    del doc["services"]["worker"]["env_file"]
    assert "CHALLENGE_TTL_S" not in container_env(doc, "worker", dotenv)


def test_an_example_env_file_names_only_documented_settings() -> None:
    example = parse_env_file((REPO / "deploy" / "env.example").read_text())
    settings = documented_settings()
    assert set(example) <= set(settings), set(example) - set(settings)
    assert example["TRUSTED_PROXIES"] == "1"  # the example runs behind the proxy
