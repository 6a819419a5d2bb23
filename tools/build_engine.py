"""Compile the rules engine with mypyc (``make engine``, run by ``make test``).

The compiled modules go to ``service/engine/_native/`` (not beside the sources, which is
git-ignored) with a manifest of the sources they were built from. ``service/engine/_build.py``
puts that folder first on the package's ``__path__`` only while the manifest still matches the
sources (size and modification time of each), so an edited ``rules.py`` is never shadowed by a
stale extension, and ``LL_ENGINE_PURE=1`` keeps the pure package. Without a C compiler, Python
headers or mypyc, this prints why and leaves the pure package in use: nothing else changes.

The engine compiles in about 15 CPU-seconds (``errors.py`` stays pure: mypyc can't compile an
exception class with its own ``__new__``; ``__init__.py`` and
``_build.py`` stay pure: they pick the build).
Run: ``python tools/build_engine.py [--force] [--clean] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "service" / "engine"
NATIVE = PACKAGE / "_native"
# Compiled together (one group: calls between them are C calls). The rest stays pure.
MODULES = ("actions", "cards", "effects", "events", "rules", "state", "views", "catalog")
MANIFEST = "manifest.json"


def sources() -> dict[str, list[int]]:
    """What the build depends on: each compiled source's size and mtime (ns)."""
    out = {}
    for name in MODULES:
        st = (PACKAGE / f"{name}.py").stat()
        out[f"{name}.py"] = [st.st_size, st.st_mtime_ns]
    return out


def current(out: Path) -> bool:
    try:
        data = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return bool(data.get("sources") == sources()
                and data.get("ext_suffix") == EXTENSION_SUFFIXES[0])


def clean(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)


def build(out: Path) -> bool:
    """Compile into a scratch folder, then move the extensions into ``_native`` at once."""
    try:
        from mypyc.build import mypycify
        from setuptools import Distribution
    except ImportError as e:
        print(f"engine: mypyc or setuptools missing ({e}; `make install` brings mypyc): "
              "the pure engine is used")
        return False
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        print(f"engine: no Python headers in {include}: the pure engine is used")
        return False
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"  # as setuptools does
    if shutil.which(cc.split()[0]) is None:
        print(f"engine: no C compiler ({cc}): the pure engine is used")
        return False
    before = sources()
    with tempfile.TemporaryDirectory(prefix="engine-build-") as tmp:
        cwd = os.getcwd()
        os.chdir(ROOT)  # mypyc names modules from paths relative to here
        try:
            # The group's shared library is named after the group's last component and put
            # beside the modules, so everything lands in one folder.
            exts = mypycify([f"service/engine/{m}.py" for m in MODULES], opt_level="3",
                            target_dir=os.path.join(tmp, "c"),
                            group_name="service.engine.engine")
            dist = Distribution({"name": "engine", "ext_modules": exts})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = os.path.join(tmp, "lib")
            cmd.build_temp = os.path.join(tmp, "tmp")
            dist.run_command("build_ext")
        except (Exception, SystemExit) as e:  # distutils reports a failed gcc as SystemExit
            print(f"engine: compiling failed ({e}): the pure engine is used")
            return False
        finally:
            os.chdir(cwd)
        built = sorted((Path(tmp) / "lib" / "service" / "engine").glob("*.so"))
        if before != sources():
            print("engine: sources changed while compiling: the pure engine is used")
            return False
        clean(out)
        out.mkdir(parents=True)
        for f in built:
            shutil.copy2(f, out / f.name)
    (out / MANIFEST).write_text(json.dumps(
        {"sources": before, "ext_suffix": EXTENSION_SUFFIXES[0]}, indent=1))
    return True


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="compile even if up to date")
    ap.add_argument("--clean", action="store_true", help="remove the compiled engine")
    ap.add_argument("--out", type=Path, default=NATIVE,
                    help="where to put the build (the engine uses only the default)")
    opts = ap.parse_args()
    out: Path = opts.out.resolve()
    if opts.clean:
        clean(out)
        print("engine: compiled modules removed: the pure engine is used")
        return
    if not opts.force and current(out):
        print("engine: compiled engine up to date")
        return
    clean(out)
    t0, c0 = time.monotonic(), _cpu()
    if build(out):
        print(f"engine: compiled with mypyc into {out} in "
              f"{time.monotonic() - t0:.0f} s ({_cpu() - c0:.0f} CPU-s with the C compiler)")
    sys.exit(0)  # a failed build is not an error: the pure package is the fallback


if __name__ == "__main__":
    main()
