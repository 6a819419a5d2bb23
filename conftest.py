"""Collection for the whole suite (``testpaths``: tests/ and service/engine/ for its doctests).

With the mypyc build in use (``make engine``; ``service.engine.BUILD``), the compiled modules'
doctests can't be collected from their ``.py`` files (the modules imported are the extensions):
``tests/engine/test_builds.py`` runs them, and the engine tests, on the pure package instead.
"""

from __future__ import annotations

import glob
import os

import service.engine

collect_ignore: list[str] = []
if service.engine.BUILD != "pure":
    _native = service.engine._build.NATIVE_DIR
    collect_ignore = [
        os.path.join("service", "engine", name.split(".")[0] + ".py")
        for name in map(os.path.basename, glob.glob(os.path.join(_native, "*.so")))
    ]
