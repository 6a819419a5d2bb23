"""docker-compose.yml and the Dockerfile, checked without a Docker engine.

- The compose file validates against the Compose Specification's JSON schema (vendored in
  tests/data/, so this works offline), as written and after ``${VAR:-default}`` interpolation.
- Every command (services, health checks, the Dockerfile's CMD and HEALTHCHECK) names something
  that exists in the project: ``python -m X`` an importable module, ``gunicorn -c FILE MOD:APP`` a
  config file and a WSGI app (the worker, ``python -m service.jobs.worker``, on every queue),
  ``rq cron ... PATH`` options the real ``rq`` CLI accepts and a cron config file.
- The worker and cron commands, run here as written (against a private Redis), start and report
  healthy through the same ``python -m service.ops.healthcheck`` the containers use.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
SCHEMA = REPO / "tests" / "data" / "compose-spec.json"
BIN = Path(sys.executable).parent
SERVICES = {"redis", "migrate", "api", "worker", "cron", "house-bots"}
#: --profile cluster: a 3-master Redis Cluster for the data (docs/operations.md#redis-cluster)
CLUSTER = {"redis-node-1", "redis-node-2", "redis-node-3", "redis-node-4", "redis-node-5",
           "redis-node-6", "redis-cluster"}
# --profile ha: Sentinel-watched data and queue Redis, a replica each, three sentinels
HA = {"ha-data", "ha-data-replica", "ha-queue", "ha-queue-replica", "sentinel-1", "sentinel-2",
      "sentinel-3"}
#: --profile proxy: nginx in front of the API (docs/operations.md#proxy)
PROXY = {"proxy"}
#: exact versions (no registry here to look digests up: docs/operations.md#image)
REDIS_IMAGE = "redis:7.4.2-bookworm"
PINNED = re.compile(r"^[a-z0-9./-]+:\d+\.\d+\.\d+(-[a-z0-9]+)*$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def load_compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())  # type: ignore[no-any-return]


def interpolate(obj: Any, env: dict[str, str] | None = None) -> Any:
    """Compose's ``${VAR}`` / ``${VAR:-default}`` interpolation with an empty environment."""
    env = env or {}
    if isinstance(obj, str):
        return _VAR.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), obj)
    if isinstance(obj, list):
        return [interpolate(x, env) for x in obj]
    if isinstance(obj, dict):
        return {k: interpolate(v, env) for k, v in obj.items()}
    return obj


def validator() -> Any:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def command(svc: dict[str, Any]) -> list[str]:
    cmd = svc["command"]
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


# --------------------------------------------------------------------------- the schema


def test_compose_file_follows_the_compose_specification() -> None:
    v = validator()
    doc = load_compose()
    for variant in (doc, interpolate(doc)):
        errors = sorted(v.iter_errors(variant), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    # The validator does catch mistakes (a typo'd key, a value outside an enum).
    broken = json.loads(json.dumps(doc))
    broken["services"]["api"]["helthcheck"] = {}
    assert list(v.iter_errors(broken))
    broken = json.loads(json.dumps(doc))
    broken["services"]["worker"]["depends_on"]["redis"]["condition"] = "whenever"
    assert list(v.iter_errors(broken))
    broken = json.loads(json.dumps(doc))
    broken["services"]["api"]["env_file"][0]["requierd"] = False
    assert list(v.iter_errors(broken))


def test_compose_services_are_as_documented() -> None:
    doc = interpolate(load_compose())
    services = doc["services"]
    assert set(services) == SERVICES | CLUSTER | PROXY | HA
    redis = services["redis"]
    assert redis["image"] == REDIS_IMAGE
    cmd = command(redis)
    assert cmd[cmd.index("--appendonly") + 1] == "yes"
    assert cmd[cmd.index("--appendfsync") + 1] == "everysec"
    volume = redis["volumes"][0].split(":")
    assert volume[1] == "/data" and volume[0] in doc["volumes"], "a named volume holds the data"
    for name, svc in services.items():
        if name == "migrate":  # one-shot: the others wait until it exits 0
            assert svc["restart"] == "no" and "healthcheck" not in svc
            continue
        assert svc.get("healthcheck", {}).get("test"), f"{name} has no health check"
        # a process that dies is started again (none has to die when Redis restarts)
        assert svc.get("restart") in ("unless-stopped", "always"), f"{name}: no restart policy"
        if "build" not in svc:
            assert PINNED.match(svc["image"]), f"{name}: {svc['image']} is not an exact version"
        if name != "redis" and name not in CLUSTER | PROXY | HA:
            assert svc["build"] == "." and svc["environment"]["REDIS_URL"], name
            # RQ's Redis: the single one, also when the data is on the cluster
            assert svc["environment"]["QUEUE_REDIS_URL"] == "redis://redis:6379/0", name
            assert "container_name" not in svc, f"{name}: a fixed name prevents --scale"
    api = services["api"]
    assert api["environment"]["HOST"] == "0.0.0.0"
    # published on the host's loopback only, unless API_BIND says otherwise
    assert api["ports"] == ["127.0.0.1:8000:8000"]
    assert interpolate(load_compose(), {"API_BIND": "0.0.0.0", "API_PORT": "80"})[
        "services"]["api"]["ports"] == ["0.0.0.0:80:8000"]
    assert int(api["environment"]["WEB_CONCURRENCY"]) >= 2
    assert api["environment"]["PROMETHEUS_MULTIPROC_DIR"]
    assert "ports" not in services["worker"], "workers are scaled with --scale: no fixed port"
    assert services["house-bots"]["profiles"] == ["house-bots"]
    for name in CLUSTER:
        assert services[name]["profiles"] == ["cluster"] and services[name]["image"] == REDIS_IMAGE
    ports = []
    for i in (1, 2, 3, 4, 5, 6):
        cmd = command(services[f"redis-node-{i}"])
        assert cmd[cmd.index("--cluster-enabled") + 1] == "yes"
        assert cmd[cmd.index("--appendonly") + 1] == "yes"
        ports.append(cmd[cmd.index("--port") + 1])
        assert services[f"redis-node-{i}"]["volumes"][0].split(":")[0] in doc["volumes"]
    init = command(services["redis-cluster"])[-1]
    assert "--cluster create" in init and "--cluster-replicas 1" in init  # a replica each
    assert all(f"redis-node-{i}:{p}" in init or f"-f1):{p}" in init
               for i, p in zip((1, 2, 3, 4, 5, 6), ports, strict=True)), init
    for name in HA:
        assert services[name]["profiles"] == ["ha"] and services[name]["image"] == REDIS_IMAGE
    for kind in ("data", "queue"):
        replica = command(services[f"ha-{kind}-replica"])
        assert replica[replica.index("--replicaof") + 1] == f"ha-{kind}", replica
    for i in (1, 2, 3):
        conf = command(services[f"sentinel-{i}"])[-1]
        assert "--sentinel" in conf
        for kind in ("data", "queue"):
            assert f"sentinel monitor {kind} ha-{kind} 6379 2" in conf, conf
    for name in ("worker", "cron"):
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
        # the schema migration ran once, first (they refuse another schema version)
        assert services[name]["depends_on"]["migrate"]["condition"] == \
            "service_completed_successfully"
    assert command(services["migrate"])[:3] == ["python", "-m", "service.ops.migrate"]
    assert "migrate" not in services["migrate"]["depends_on"]
    # Configuration only through environment variables (an optional .env: every line of it
    # reaches the app's processes, tests/system/test_settings_reachable.py); no mounted config.
    for name, svc in services.items():
        assert "configs" not in svc, name
        if name not in {"redis"} | CLUSTER | PROXY | HA:
            assert svc["env_file"] == [{"path": ".env", "required": False}], name
    proxy = services["proxy"]
    assert proxy["profiles"] == ["proxy"] and proxy["image"].startswith("nginx:")
    mounts = dict(v.split(":")[:2] for v in proxy["volumes"])
    assert mounts["./deploy/nginx/templates"] == "/etc/nginx/templates"
    assert (REPO / "deploy/nginx/templates/default.conf.template").is_file()
    assert proxy["environment"]["API_UPSTREAM"] == "api:8000"
    # the nginx image fills in the template from the container's environment: every variable
    from tests.support.nginx import TEMPLATE, render

    render(TEMPLATE.read_text(), {k: str(v) for k, v in proxy["environment"].items()})
    assert proxy["depends_on"]["api"]["condition"] == "service_healthy"


# --------------------------------------------------------------------------- commands exist


def _check_python(argv: list[str]) -> None:
    assert argv[1] == "-m", argv
    module = argv[2]
    assert importlib.util.find_spec(module) is not None, f"no module {module}"
    if module == "service.ops.healthcheck":
        from service.ops.healthcheck import CHECKS

        assert argv[3:] and argv[3] in CHECKS, argv
    if module == "service.jobs.worker":
        from service.store.queues import QUEUES

        args = [a for a in argv[3:] if not a.startswith("-")]
        assert args[1:] == list(QUEUES), (argv, QUEUES)  # after --url's value


def _check_gunicorn(argv: list[str]) -> None:
    conf = argv[argv.index("-c") + 1]
    assert (REPO / conf).is_file(), conf
    target = argv[-1]
    module, _, attr = target.partition(":")
    assert importlib.util.find_spec(module) is not None, module
    source = Path(importlib.util.find_spec(module).origin or "").read_text()  # type: ignore[union-attr]
    assert re.search(rf"^{re.escape(attr or 'application')}\s*=", source, re.M), target


def _rq_command(sub: str) -> Any:
    from rq.cli import main as rq_main

    assert sub in rq_main.commands, f"rq has no `{sub}` command"
    return rq_main.commands[sub]


def _check_rq(argv: list[str]) -> None:
    sub, args = argv[1], argv[2:]
    cmd = _rq_command(sub)
    # The real rq CLI parses these arguments (unknown options or missing arguments fail here).
    ctx = cmd.make_context(f"rq {sub}", list(args), resilient_parsing=False)
    if sub == "cron":
        assert (REPO / ctx.params["config_path"]).is_file(), ctx.params["config_path"]
    else:
        raise AssertionError(f"unexpected rq command {sub}")


def check_argv(argv: list[str]) -> None:
    exe = argv[0]
    if exe == "python":
        _check_python(argv)
    elif exe == "gunicorn":
        _check_gunicorn(argv)
    elif exe == "rq":
        _check_rq(argv)
    else:
        raise AssertionError(f"unknown program {exe!r} in {argv}")
    if exe != "python":  # console scripts the install provides (next to this Python)
        assert (BIN / exe).exists(), f"{exe} is not installed by the project"


def test_every_command_names_something_that_exists() -> None:
    doc = interpolate(load_compose())
    checked = 0
    for name, svc in doc["services"].items():
        if name == "redis":
            assert command(svc)[0] == "redis-server"
            assert svc["healthcheck"]["test"][1:] == ["redis-cli", "ping"]
            continue
        if name in PROXY:  # the nginx image's own
            assert svc["healthcheck"]["test"][1] == "bash", name
            continue
        if name in CLUSTER | HA:  # the redis image's own programs
            assert command(svc)[0] in ("redis-server", "sh"), name
            assert "redis-cli" in " ".join(svc["healthcheck"]["test"]), name
            continue
        check_argv(command(svc))
        checked += 1
        if name == "migrate":
            continue
        test = svc["healthcheck"]["test"]
        assert test[0] == "CMD", test
        check_argv(test[1:])
        checked += 1
    assert checked == 9  # migrate has no health check


def _dockerfile_json(instruction: str) -> list[list[str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        m = re.match(rf"^\s*{instruction}\s+(.*)$", line)
        if m:
            rest = m.group(1)
            rest = rest[rest.index("CMD") + 3:] if instruction == "HEALTHCHECK" else rest
            found.append(json.loads(rest.strip()))
    return found


def test_dockerfile_commands_and_sources_exist() -> None:
    text = DOCKERFILE.read_text()
    # both stages on one base image, pinned to an exact version (no registry here for a digest)
    (base,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    assert re.findall(r"^FROM (.+)$", text, re.M) == ["${PYTHON_IMAGE} AS build",
                                                      "${PYTHON_IMAGE}"]
    assert re.search(r"^USER (?!root\b)\S+", text, re.M), "the image runs as a non-root user"
    (cmd,) = _dockerfile_json("CMD")
    check_argv(cmd)
    (health,) = _dockerfile_json("HEALTHCHECK")
    check_argv(health)
    for m in re.finditer(r"^COPY\s+(.+)$", text, re.M):
        *sources, _dest = m.group(1).split()
        if sources[0].startswith("--from=build"):
            continue  # from the build stage, checked below
        for src in sources:
            assert (REPO / src).exists(), f"COPY {src}: not in the repository"
    # what running needs, from the lock file with its hashes, in the virtualenv the final stage
    # takes; mypyc from its own lock, in the build stage only; the engine compiled there
    assert "/opt/venv/bin/pip install --require-hashes -r requirements/run.txt" in text
    assert "pip install --require-hashes -r requirements/engine.txt" in text
    assert "RUN python tools/build_engine.py" in text
    assert "/opt/venv/bin/pip install --no-deps --no-build-isolation ./sdk" in text
    final = text[text.rindex("FROM "):]
    assert "COPY --from=build /opt/venv /opt/venv" in final
    assert "COPY --from=build /app/service /app/service" in final  # with service/engine/_native
    assert "gcc" not in final and "engine.txt" not in final, "no compiler or mypy in the image"
    assert re.search(r"LOG_FORMAT=json", final)
    # mypy's pin is the development lock's (make lock writes both)
    pins = {line.split(" ")[0] for line in (REPO / "requirements/engine.txt").read_text()
            .splitlines() if "==" in line}
    dev = (REPO / "requirements/dev.txt").read_text()
    assert any(p.startswith("mypy==") for p in pins) and all(p in dev for p in pins), pins


# --------------------------------------------------------------------------- run them here


def _spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    exe = argv[0] if argv[0] != "python" else sys.executable
    if exe in ("rq", "gunicorn"):
        exe = str(BIN / exe)
    with open(log, "ab") as f:
        return subprocess.Popen([exe, *argv[1:]], cwd=REPO, env=env, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _healthy(role: str, env: dict[str, str]) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "service.ops.healthcheck", role], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def _wait_healthy(role: str, env: dict[str, str], procs: list[subprocess.Popen[bytes]],
                  log: Path, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    out = ""
    while time.monotonic() < end:
        for p in procs:
            assert p.poll() is None, f"a process exited ({p.returncode}):\n{log.read_text()}"
        code, out = _healthy(role, env)
        if code == 0:
            return
        time.sleep(0.3)
    raise AssertionError(f"{role} never became healthy: {out}\n{log.read_text()[-3000:]}")


@pytest.fixture
def private_redis() -> Iterator[RedisProcess]:
    rp = RedisProcess()
    rp.start()
    try:
        yield rp
    finally:
        rp.stop()


def test_worker_and_cron_commands_run_and_report_healthy(private_redis: RedisProcess,
                                                         tmp_path: Path) -> None:
    doc = interpolate(load_compose(), {"REDIS_URL": private_redis.url,
                                       "QUEUE_REDIS_URL": private_redis.url})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_", "PROMETHEUS"))}
    env.update({k: str(v) for k, v in doc["services"]["worker"]["environment"].items()})
    env["REDIS_URL"] = private_redis.url
    log = tmp_path / "procs.log"
    for role in ("worker", "cron"):
        code, out = _healthy(role, env)
        assert code == 1 and "unhealthy" in out, (role, out)  # nothing runs yet
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for role in ("worker", "cron"):
            argv = command(doc["services"][role])
            assert private_redis.url in argv  # RQ's Redis, from the environment
            procs.append(_spawn(argv, env, log))
            _wait_healthy(role, env, procs, log)
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)


def test_api_and_house_bots_health_checks(api_server: ApiServer) -> None:
    env = dict(os.environ, PORT=str(api_server.port), LLSDK_URL=api_server.url)
    assert _healthy("api", env)[0] == 0
    assert _healthy("house-bots", env)[0] == 0
    from tests.support.server import free_port

    down = dict(env, PORT=str(free_port()), LLSDK_URL=f"http://127.0.0.1:{free_port()}")
    assert _healthy("api", down)[0] == 1
    assert _healthy("house-bots", down)[0] == 1
