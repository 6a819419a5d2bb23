"""Pinned installs: requirements/*.txt (made by `make lock` with the pinned uv) lock every
dependency of the two pyprojects with hashes; `make run` and the Dockerfile install only the
runtime lock, `make test` the development lock on top; every dependency is bounded from above
below its next major release."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
REQ = REPO / "requirements"


def pins(path: Path) -> dict[str, str]:
    """name -> version of every ``name==version`` line; each must carry at least one hash."""
    text = path.read_text()
    out: dict[str, str] = {}
    for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}[ \\]*\n?)+)",
                         text, re.M):
        out[canonicalize_name(m.group(1))] = m.group(2)
    named = re.findall(r"^([A-Za-z0-9_.\-]+)==", text, re.M)
    assert len(named) == len(out), f"{path.name}: a pin without a hash"
    return out


def deps(pyproject: Path, extra: str | None = None) -> list[Requirement]:
    project = tomllib.loads(pyproject.read_text())["project"]
    names = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return [Requirement(d) for d in names]


def local(req: Requirement) -> bool:
    return canonicalize_name(req.name) in ("love-letter-arena", "llsdk")


def test_the_runtime_lock_pins_every_runtime_dependency_within_its_bounds() -> None:
    run = pins(REQ / "run.txt")
    for req in deps(REPO / "pyproject.toml") + deps(REPO / "sdk" / "pyproject.toml"):
        name = canonicalize_name(req.name)
        assert name in run, f"{req.name} is not in requirements/run.txt: run `make lock`"
        assert Version(run[name]) in req.specifier, (req, run[name])
    # the build backend, so that local packages build without fetching anything unpinned
    assert {"setuptools", "wheel"} <= set(run)
    # development tools stay out of what `make run` installs
    assert not {"pytest", "mypy", "ruff", "playwright", "schemathesis"} & set(run)


def test_the_dev_lock_adds_the_tools_and_agrees_with_the_runtime_lock() -> None:
    run, dev = pins(REQ / "run.txt"), pins(REQ / "dev.txt")
    sdk = REPO / "sdk" / "pyproject.toml"
    # the SDK's research extras too: make test runs the PettingZoo and OpenSpiel tests
    for req in deps(REPO / "pyproject.toml", "dev") + deps(sdk, "dev") + deps(sdk, "rl") + \
            deps(sdk, "openspiel"):
        if local(req):
            continue
        name = canonicalize_name(req.name)
        assert name in dev, f"{req.name} is not in requirements/dev.txt: run `make lock`"
        assert Version(dev[name]) in req.specifier, (req, dev[name])
    assert {k: dev[k] for k in run} == run, "dev.txt must pin the runtime packages as run.txt does"
    assert set(pins(REQ / "uv.txt")) == {"uv"}


def next_major(v: Version) -> Version:
    """The release that may break: the next major, or for a 0.x release the next minor."""
    return Version(f"{v.major + 1}") if v.major else Version(f"0.{v.minor + 1}")


def test_every_dependency_is_bounded_below_its_next_major_release() -> None:
    """A new major release (a new minor of a 0.x one) changes APIs: the pin moves only by hand,
    with `make lock`, never by a fresh install resolving something newer."""
    locked = pins(REQ / "dev.txt")
    build = [Requirement(line) for line in (REQ / "build.in").read_text().splitlines()
             if line and not line.startswith("#")]
    reqs = [*build]
    for pyproject in (REPO / "pyproject.toml", REPO / "sdk" / "pyproject.toml"):
        doc = tomllib.loads(pyproject.read_text())
        reqs += [Requirement(r) for r in doc["build-system"]["requires"]]
        reqs += deps(pyproject) + deps(pyproject, "dev")
    for req in reqs:
        if local(req):
            continue
        version = Version(locked[canonicalize_name(req.name)])
        tops = [Version(s.version) for s in req.specifier if s.operator in ("<", "==")]
        assert tops, f"{req}: no upper bound"
        assert min(tops) <= next_major(version), (str(req), str(version))


def test_make_run_installs_only_the_runtime_lock() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^run: \$\(RUN_STAMP\)$", makefile, re.M)
    assert re.search(r"^\$\(RUN_STAMP\): \$\(LOCK_RUN\)", makefile, re.M)
    assert "--require-hashes" in makefile
