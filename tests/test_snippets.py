"""Every ``sh`` and ``python`` block of README.md and sdk/README.md runs as written, in order,
against a test server (gunicorn on a private Redis; its address replaces http://127.0.0.1:8000).

Blocks tagged ``text`` (output, usage synopses) are not code. A python block introduced by "Save
this as `NAME`" is written to NAME (and must load: ``python NAME --help``); the blocks after it
use the file. The few blocks that can't run here are listed in EXEMPT with the reason; a new block
that is neither runnable nor listed fails the test. Where a snippet waits for an opponent (a bot
that plays "every match its player is in"), the test seats it in a match against a rival that
plays random legal moves.

The curl walkthrough of docs/protocol.md runs in tests/test_readme.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from llsdk import View

from tests.support.sdkclient import Client
from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parent.parent
LOCAL = "http://127.0.0.1:8000"

#: (file, the block's code) -> why it does not run here
EXEMPT = {
    ("README.md", "make run\nmake test\n"):
        "the quick start: `make run`'s stack and banner are tests/system/test_run.py's; `make test` is "
        "this suite",
}


@dataclass
class Block:
    path: str
    line: int
    lang: str
    code: str
    save_as: str | None


def blocks(name: str) -> list[Block]:
    text = (REPO / name).read_text()
    out = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        before = text[:m.start()]
        para = before.rstrip().rsplit("\n\n", 1)[-1]
        saved = re.search(r"[Ss]ave this\s+as\s+`([\w.]+)`", para)
        out.append(Block(name, before.count("\n") + 1, m.group(1), m.group(2),
                         saved.group(1) if saved else None))
    return out


def runnable(name: str) -> list[Block]:
    out = []
    for b in blocks(name):
        if (name, b.code) in EXEMPT or b.lang in ("text", ""):
            continue
        assert b.lang in ("sh", "python"), f"{name}:{b.line}: a ```{b.lang} block: tag it sh, " \
                                           "python or text"
        out.append(b)
    return out


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A fresh directory that looks like the repository to the snippets: .venv and examples."""
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    return tmp_path


def env_for(url: str | None = None, token: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LLSDK_URL", "LLSDK_TOKEN", "REDIS_URL")}
    if url:
        env["LLSDK_URL"] = url
    if token:
        env["LLSDK_TOKEN"] = token
    return env


def sh(block: Block, url: str, cwd: Path, env: dict[str, str],
       timeout: float = 300) -> subprocess.CompletedProcess[str]:
    code = block.code.replace(LOCAL, url)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)
    assert done.returncode == 0, f"{block.path}:{block.line} exit {done.returncode}\n" \
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def save(block: Block, cwd: Path) -> None:
    assert block.save_as
    (cwd / block.save_as).write_text(block.code)
    done = subprocess.run([str(REPO / ".venv" / "bin" / "python"), block.save_as, "--help"],
                          cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{block.path}:{block.line}: {block.save_as} --help\n" \
                                 f"{done.stdout}\n{done.stderr}"


class Rival(threading.Thread):
    """Seats ``client`` (the snippet's player) and a new rival in a classic match; the rival
    plays random legal moves until the match ends."""

    def __init__(self, url: str, token: str, *, join: bool = True) -> None:
        super().__init__(daemon=True)
        anon = Client(url)
        self.me = anon.with_token(token)
        self.rival = anon.with_token(anon.players.register(f"rival-{random.randrange(10**9)}")
                                     .token or "")
        self.match_id = self.rival.matches.create("classic", 2, turn_timeout_s=600).match_id
        self.rival.matches.join(self.match_id)
        if join:
            self.me.matches.join(self.match_id)
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            rng = random.Random(1)
            v = self.rival.matches.view(self.match_id)
            deadline = time.monotonic() + 240
            while not v.finished and time.monotonic() < deadline:
                if v.my_turn:
                    v = self.rival.matches.act(self.match_id, rng.choice(v.legal_actions),
                                               expected_version=v.version)
                else:
                    v = self.rival.matches.wait_view(self.match_id, after=v.version, wait=2)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def finished(self) -> View:
        self.join(240)
        assert self.error is None, repr(self.error)
        v = self.me.matches.view(self.match_id)
        assert v.finished, v.status
        return v


def test_every_runnable_block_is_known() -> None:
    """README.md's and sdk/README.md's blocks are each runnable, text, or exempt with a reason,
    and the exemptions still exist."""
    found = {(b.path, b.code) for name in ("README.md", "sdk/README.md") for b in blocks(name)}
    assert set(EXEMPT) <= found, "an exempt block is gone: drop it from EXEMPT"
    assert len(runnable("README.md")) >= 3 and len(runnable("sdk/README.md")) >= 8


def test_readme_blocks_run(api_server: ApiServer, workdir: Path) -> None:
    url = api_server.url
    ran = 0
    for b in runnable("README.md"):
        if b.save_as:
            save(b, workdir)
        elif "llt_..." in b.code:
            play_block(b, url, workdir)
        else:
            sh(b, url, workdir, env_for())
        ran += 1
    assert ran == len(runnable("README.md"))


def play_block(b: Block, url: str, workdir: Path) -> None:
    """Say where the server is, register, export the token it printed, run the bot: the test
    reads the token from the register line's output (the reader's eyes) and seats the bot in a
    match against a rival; the bot plays it to the end, then is stopped with SIGTERM."""
    lines = b.code.replace(LOCAL, url).splitlines()
    (reg,) = [i for i, ln in enumerate(lines) if " register " in ln]
    (tok,) = [i for i, ln in enumerate(lines) if "llt_..." in ln]
    lines[reg] = lines[reg].split("#")[0].rstrip() + " > register.out"
    lines[tok] = "export LLSDK_TOKEN=$(sed -n 's/^token.*: //p' register.out)"
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", "\n".join(lines)], cwd=workdir,
                            env=env_for(), text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    out = ""
    try:
        deadline = time.monotonic() + 60
        token = ""
        while not token:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "no token printed"
            m = re.search(r"^token.*: (llt_\S+)$", (workdir / "register.out").read_text()
                          if (workdir / "register.out").exists() else "", re.M)
            token = m.group(1) if m else ""
            time.sleep(0.1)
        rival = Rival(url, token)
        final = rival.finished()
        # the bot made its own moves (no timeouts in a 600 s turn) and says so
        record = rival.me.matches.events(final.match_id)
        assert any(e.type == "play" and e.seat == final.seat for e in record.events)
        time.sleep(1.0)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=60)[0]
    assert "entered ladder duel" in out, out
    assert re.search(rf"{final.match_id} finished: (won|lost)", out), out


@pytest.mark.timeout(900)  # its simulations are CPU-bound: minutes on a starved machine
def test_sdk_readme_blocks_run(api_server: ApiServer, workdir: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    url = api_server.url
    anon = Client(url)
    player = anon.players.register("sdk-snippets")
    token = player.token or ""
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("LLSDK_URL", url)
    monkeypatch.setenv("LLSDK_TOKEN", token)
    namespace: dict[str, object] = {"__name__": "snippets"}
    for b in runnable("sdk/README.md"):
        if b.save_as:
            save(b, workdir)
            exec(compile(b.code, f"sdk/README.md:{b.line}", "exec"), namespace)
        elif b.lang == "sh":
            rival = Rival(url, token) if "--max-matches" in b.code else None
            sh(b, url, workdir, env_for(url, token))
            if rival:
                rival.finished()
        else:
            code = b.code.replace(LOCAL, url)
            rival = Rival(url, token) if ".run(client" in code else None
            if "view." in code and "view" not in namespace:
                # the View reference: the view of the match the bot just played
                namespace["view"] = anon.with_token(token).matches.view(last_match(anon, token))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"sdk/README.md:{b.line}", "exec"), namespace)
            check_prints(b, out.getvalue())
            if rival:
                rival.finished()
    assert "Cautious" in namespace and "FlatMonteCarlo" in namespace


#: ``print(...)  # prints <what it prints>``: a claim about a block's output ("..." is anything)
_PRINTS = re.compile(r"^\s*print\(.*\)\s+# prints (.+)$", re.M)


def check_prints(block: Block, output: str) -> None:
    """Every ``# prints X`` comment of a block matches a line the block printed, in order, so a
    figure or shape shown on the page is the one a reader gets."""
    lines = output.splitlines()
    for claim in _PRINTS.findall(block.code):
        pattern = re.compile(".*".join(re.escape(part) for part in claim.strip().split("...")))
        found = next((i for i, ln in enumerate(lines) if pattern.fullmatch(ln.strip())), None)
        assert found is not None, f"{block.path}:{block.line}: no printed line matches " \
                                  f"{claim!r}; it printed:\n{output[-3000:]}"
        lines = lines[found + 1:]


def test_a_prints_claim_must_match_what_the_block_printed() -> None:
    b = Block("x", 1, "python", "print(1 / 4)   # prints 0.25\nprint(x)   # prints a ... c\n",
              None)
    check_prints(b, "0.25\na b c\n")
    with pytest.raises(AssertionError):
        check_prints(b, "0.52\na b c\n")
    with pytest.raises(AssertionError):  # in order
        check_prints(b, "a b c\n0.25\n")


def last_match(anon: Client, token: str) -> str:
    page = anon.with_token(token).me.matches()
    assert page.matches
    return page.matches[0].match_id


def test_snippet_runner_catches_a_failing_block(api_server: ApiServer, workdir: Path) -> None:
    bad = Block("x", 1, "sh", "true\nfalse\n", None)
    with pytest.raises(AssertionError):
        sh(bad, api_server.url, workdir, env_for())
