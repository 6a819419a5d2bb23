"""The curl walkthrough of docs/protocol.md, run for real with bash against gunicorn on a private
Redis, step by step checked against the engine; the README's quick start; the Configuration table
of docs/operations.md."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from service import engine
from tests.support.redis_proc import RedisProcess

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PROTOCOL = REPO / "docs" / "protocol.md"
OPERATIONS = REPO / "docs" / "operations.md"

pytestmark = pytest.mark.skipif(shutil.which("curl") is None or shutil.which("python3") is None,
                                reason="the walkthrough needs curl and python3")


def walkthrough() -> str:
    text = PROTOCOL.read_text()
    section = text.split("## Walkthrough with curl", 1)
    assert len(section) == 2, "docs/protocol.md has no '## Walkthrough with curl' section"
    m = re.search(r"```sh\n(.*?)```", section[1], re.S)
    assert m, "no ```sh block in the walkthrough section"
    return m.group(1)


@pytest.fixture(scope="module")
def base_url(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """gunicorn -c service/ops/gunicorn_conf.py service.http.wsgi:app on a free port and the private
    Redis, rate limits and RQ jobs off; stopped (its whole process group) afterwards."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "HOST")}
    env.update(PORT=str(port), REDIS_URL=redis_server.url, RATE_LIMITS="0", EXPECT_WORKERS="0",
               WEB_CONCURRENCY="1")
    log_path = tmp_path_factory.mktemp("readme") / "gunicorn.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "service/ops/gunicorn_conf.py",
             "--no-control-socket", "service.http.wsgi:app"],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"gunicorn exited:\n{log_path.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"not ready:\n{log_path.read_text()[-3000:]}"
            try:
                if requests.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.1)
        yield url
        assert "Traceback" not in log_path.read_text(), log_path.read_text()[-5000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def test_quick_start_comes_first() -> None:
    text = README.read_text()
    first_block = re.search(r"```(?:sh)?\n(.*?)```", text, re.S)
    assert first_block and first_block.group(1).split() == ["make", "run", "make", "test"]
    assert text.index("## Quick start") < text.index("## Documentation")


def test_walkthrough_runs(base_url: str, tmp_path: Path) -> None:
    script = tmp_path / "walkthrough.sh"
    script.write_text(walkthrough())
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["BASE"] = base_url
    done = subprocess.run(["bash", "-euo", "pipefail", str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    out = done.stdout
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{out}\nstderr:\n{done.stderr}"
    assert done.stderr == "", done.stderr
    lines = out.splitlines()
    assert len(lines) == 11, out

    # 1. Alice registered: her answer, with the token shown once.
    alice = json.loads(lines[0])
    assert alice["id"].startswith("p_") and alice["token"] and alice["name"].startswith("alice-")
    # the page's sample of that answer has the same fields, in the same order
    sample = PROTOCOL.read_text().split("It prints something like this")[1].split("```")[1]
    assert list(json.loads(sample.strip().splitlines()[0])) == list(alice)

    # 2. The match was created, waiting for players.
    m = re.fullmatch(r"match (\S+) is waiting", lines[1])
    assert m, lines[1]
    match_id = m.group(1)

    # 3. First join: still waiting; second join: active.
    assert lines[2:4] == ["waiting", "active"]

    # The same match in the engine: seed "walkthrough", classic, two players.
    state = engine.new_match("classic", 2, seed="walkthrough")
    names = engine.view(state, 0)["hand"]

    # 4. Alice's hand and the seat to play, exactly as the engine deals them.
    assert lines[4] == f"alice holds {json.dumps(names)}"
    assert lines[5] == f"seat {state.turn} plays first"

    # 5. The first of that seat's legal actions was posted and applied.
    m = re.fullmatch(r"seat (\d) plays (\{.*\})", lines[6])
    assert m and int(m.group(1)) == state.turn, lines[6]
    action = json.loads(m.group(2))
    assert action == engine.legal_action_dicts(state)[0]
    m = re.fullmatch(r"version (\d+) -> (\d+), seat (\d) to play", lines[7])
    assert m, lines[7]
    before, after, next_seat = (int(g) for g in m.groups())
    assert after == before + 1
    seat = state.turn
    engine.apply_inplace(state, action, seat=seat)
    assert next_seat == state.turn
    played = ast.literal_eval(lines[8])
    assert played["type"] == "play" and played["seat"] == seat
    assert played["card"] == action["card"]
    assert ast.literal_eval(lines[9])["type"] == "turn"

    # 6. The public summary is at the new version.
    assert lines[10] == str(after)

    # And the server agrees: the stored match moved exactly one action.
    summary = requests.get(f"{base_url}/v1/matches/{match_id}", timeout=10).json()
    assert summary["status"] == "active" and summary["version"] == after
    assert [p["name"] for p in summary["players"]][0] == alice["name"]


def test_configuration_table_lists_every_setting() -> None:
    """Every environment variable read by service/config.py or service/ops/gunicorn_conf.py is a
    row of the Configuration table in docs/operations.md."""
    service = REPO / "service"
    names: set[str] = set()
    for name in ("config.py", "ops/gunicorn_conf.py"):
        src = (service / name).read_text()
        names |= set(re.findall(r"""(?:environ\.get|environ\[|_env_\w+)\(?\s*["']([A-Z][A-Z0-9_]+)["']""",
                                src))
    assert "REDIS_URL" in names and "WEB_CONCURRENCY" in names, names
    table = OPERATIONS.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", table, re.M))
    assert not names - rows, f"missing from docs/operations.md#configuration: {sorted(names - rows)}"
