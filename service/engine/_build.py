"""Which build of the engine this process runs: the mypyc-compiled modules or the pure ones.

``make engine`` (``tools/build_engine.py``, run by ``make test``) compiles the hot modules with
mypyc into ``_native/`` beside the sources, with a manifest of the sources they came from
(size and modification time of each). Importing this module (the package's first import) puts
that folder first on the package's ``__path__`` only while the manifest still matches, so an
edited ``rules.py`` is never shadowed by a stale extension; without a build, or with
``LL_ENGINE_PURE=1`` in the environment, the pure modules are the engine. The check costs about
10 stat calls at import. The compiled engine plays the same rules: the test suite runs on it,
and ``tests/engine/test_builds.py`` runs the engine tests again on the pure package.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES

_HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE_DIR = os.path.join(_HERE, "_native")


def native_is_current(here: str = _HERE, native: str = NATIVE_DIR) -> bool:
    """Whether ``native`` holds a build of the sources in ``here`` as they are now (and
    ``LL_ENGINE_PURE`` is unset)."""
    if os.environ.get("LL_ENGINE_PURE"):
        return False
    try:
        with open(os.path.join(native, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        if manifest["ext_suffix"] != EXTENSION_SUFFIXES[0] or not manifest["sources"]:
            return False
        for name, (size, mtime) in manifest["sources"].items():
            st = os.stat(os.path.join(here, name))
            if st.st_size != size or st.st_mtime_ns != mtime:
                return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


#: ``"mypyc"`` when the compiled modules are in use, else ``"pure"``.
BUILD = "pure"
if native_is_current():
    _package = sys.modules[__name__.rpartition(".")[0]]
    _package.__path__.insert(0, NATIVE_DIR)
    BUILD = "mypyc"
