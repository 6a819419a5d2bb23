"""The two builds of the engine (tools/build_engine.py, service/engine/_build.py): the suite runs
on the mypyc-compiled modules when ``make engine`` built them, and here the engine's tests and
doctests run again on the pure package; a stale or missing build is never used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import service.engine
from service.engine import _build, rules

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_in_use_is_the_one_reported() -> None:
    compiled = not rules.__file__.endswith(".py")
    assert service.engine.BUILD == ("mypyc" if compiled else "pure")
    if compiled:
        assert Path(rules.__file__).parent == Path(_build.NATIVE_DIR)


@pytest.mark.skipif(service.engine.BUILD == "pure",
                    reason="the engine is pure in this run already (no `make engine` build)")
@pytest.mark.timeout(900)  # minutes of wall time on a loaded machine
def test_engine_tests_pass_on_the_pure_package_too() -> None:
    env = dict(os.environ, LL_ENGINE_PURE="1")
    code = ("import service.engine as e, service.engine.rules as r; "
            "print(e.BUILD, r.__file__.endswith('.py'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["pure", "True"]
    # Every rule test and doctest, on the pure package. The random playouts (5,000 matches,
    # most of this run's CPU) stay with the build under test: that is where a compiler could
    # make the two differ; the golden matches of tests/engine/test_replay.py, which this run
    # plays too, hold the pure package to the same states as the build.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "tests/engine", "service/engine", "-k", "not random_playouts", "--deselect",
         "tests/engine/test_builds.py::test_engine_tests_pass_on_the_pure_package_too"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=850)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def _fake_package(tmp: Path) -> tuple[Path, Path]:
    here, native = tmp / "engine", tmp / "engine" / "_native"
    native.mkdir(parents=True)
    (here / "rules.py").write_text("x = 1\n")
    st = (here / "rules.py").stat()
    manifest = {"sources": {"rules.py": [st.st_size, st.st_mtime_ns]},
                "ext_suffix": EXTENSION_SUFFIXES[0]}
    (native / "manifest.json").write_text(json.dumps(manifest))
    return here, native


def test_a_build_is_used_only_while_it_matches_the_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LL_ENGINE_PURE", raising=False)
    here, native = _fake_package(tmp_path)
    assert _build.native_is_current(str(here), str(native))
    monkeypatch.setenv("LL_ENGINE_PURE", "1")
    assert not _build.native_is_current(str(here), str(native))
    monkeypatch.delenv("LL_ENGINE_PURE")
    (here / "rules.py").write_text("x = 2\n")  # edited after the build: stale
    assert not _build.native_is_current(str(here), str(native))
    (native / "manifest.json").unlink()  # no build at all
    assert not _build.native_is_current(str(here), str(native))


def test_no_c_compiler_leaves_the_pure_engine(tmp_path: Path) -> None:
    out = tmp_path / "native"
    run = subprocess.run(
        [sys.executable, "tools/build_engine.py", "--force", "--out", str(out)], cwd=ROOT,
        env=dict(os.environ, CC=str(tmp_path / "no-such-cc")), capture_output=True, text=True,
        timeout=120)
    assert run.returncode == 0, run.stderr
    assert "no C compiler" in run.stdout and "pure engine is used" in run.stdout
    assert not out.exists()
