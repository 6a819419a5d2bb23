"""The service uses redis-py and RQ through their public APIs only: no module of ``service/``
imports a private name of either (``from redis.client import _x``, ``redis.foo._x``), reads or
sets one on their objects (``pipe._execution_strategy``, ``getattr(conn, "_sock")``), or
overrides one in a subclass (``def _start_scheduler`` in a subclass of an RQ class).

Why: a private name is no part of a library's contract; code that relies on one breaks
silently on an upgrade. A name counts as private when it starts with one underscore (dunders
are public protocol) and redis-py or RQ defines it; the service's own private names (say
``_transact``) are its business. Checked statically (the source, with ``ast``), one test per
module, so a failure names the module and the line."""

from __future__ import annotations

import ast
import importlib.util
import re
import sysconfig
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIBRARIES = ("redis", "rq")
MODULES = sorted(p for p in (REPO / "service").rglob("*.py") if "_native" not in p.parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@cache
def _stdlib_private_names() -> frozenset[str]:
    """Private names the standard library defines too (``os._exit``, ``namedtuple._replace``):
    on an object of unknown type they are taken for the standard library's."""
    found: set[str] = set()
    pattern = re.compile(r"\bdef (_[A-Za-z0-9]\w*)|\b(_[A-Za-z0-9]\w*) *=")
    for path in Path(sysconfig.get_paths()["stdlib"]).glob("*.py"):
        for pair in pattern.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.update(n for n in pair if n)
    return frozenset(found | {"_exit", "_getframe", "_current_frames"})


@cache
def _library_private_names() -> frozenset[str]:
    """Every private name redis-py and RQ define or use as an attribute (``def _x``,
    ``self._x``, ``obj._x``, ``_x = ...``) in their installed sources."""
    found: set[str] = set()
    pattern = re.compile(r"(?:\bdef |\.|^\s*)(_[A-Za-z0-9]\w*)\b", re.M)
    for lib in LIBRARIES:
        spec = importlib.util.find_spec(lib)
        assert spec is not None and spec.submodule_search_locations, lib
        for root in spec.submodule_search_locations:
            for path in Path(root).rglob("*.py"):
                for name in pattern.findall(path.read_text(encoding="utf-8", errors="replace")):
                    if _private(name):
                        found.add(name)
    return frozenset(found)


def _library_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to a redis-py/RQ module, and to a class or function imported from one."""
    modules: set[str] = set()
    objects: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in LIBRARIES:
                    modules.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] in LIBRARIES:
            for a in node.names:
                objects.add(a.asname or a.name)
    return modules, objects


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules, objects = _library_aliases(tree)
    if not modules and not objects:
        return []
    private = _library_private_names()
    out: list[str] = []

    def say(node: ast.AST, what: str) -> None:
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        out.append(f"{shown}:{getattr(node, 'lineno', 0)}: {what}")

    # classes that subclass a redis-py/RQ class (directly, by an imported name or module path)
    subclasses = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and any(
        _root(b) in modules | objects for b in node.bases)}
    changed = True
    while changed:  # and their subclasses in the same module
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name not in subclasses and any(
                    isinstance(b, ast.Name) and b.id in subclasses for b in node.bases):
                subclasses.add(node.name)
                changed = True

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] in LIBRARIES:
            if any(_private(part) for part in node.module.split(".")):
                say(node, f"imports the private module {node.module}")
            for a in node.names:
                if _private(a.name):
                    say(node, f"imports the private name {a.name} from {node.module}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] in LIBRARIES and any(_private(p) for p in parts):
                    say(node, f"imports the private module {a.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr) and \
                node.attr in private:
            root = _root(node.value)
            if root in modules or root in objects:
                say(node, f"uses the private name {node.attr} of {root}")
            elif root in ("self", "super", "cls") or root in subclasses:
                # on a redis-py/RQ subclass: the library's private state
                cls = _enclosing_class(tree, node)
                if cls in subclasses:
                    say(node, f"{cls} uses the private name {node.attr} of its library base")
            elif root is not None and node.attr not in _stdlib_private_names():
                say(node, f"uses the private name {node.attr} (a redis-py/RQ name) on {root}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "hasattr", "delattr") and \
                len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and \
                isinstance(node.args[1].value, str) and _private(node.args[1].value) and \
                node.args[1].value in private:
            say(node, f"{node.func.id}(..., {node.args[1].value!r}): a private redis-py/RQ name")
        elif isinstance(node, ast.ClassDef):
            # a subclass, or a mixin meant for one (``class _M: def _x``, mixed in later)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        _private(item.name) and item.name in private and (
                            node.name in subclasses or item.name not in _stdlib_private_names()):
                    say(item, f"{node.name} overrides the private method {item.name}")
    return out


def _enclosing_class(tree: ast.Module, target: ast.AST) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for sub in ast.walk(node):
                if sub is target:
                    return node.name
    return None


def test_the_check_sees_private_names(tmp_path: Path) -> None:
    """The check itself: each kind of use it forbids is found in a sample module."""
    sample = tmp_path / "sample.py"
    code = '''
import redis
from redis.client import Pipeline, _x_never_defined
from rq.worker import SimpleWorker

class W(SimpleWorker):
    def _install_signal_handlers(self): pass
    def run(self): return self._stop_requested

def f(pipe: Pipeline):
    return getattr(pipe, "_execution_strategy"), redis.client.Pipeline._execute_transaction
'''
    sample.write_text(code)
    found = "\n".join(violations(sample))
    assert "_x_never_defined" in found
    assert "overrides the private method _install_signal_handlers" in found
    assert "_stop_requested" in found
    assert "'_execution_strategy'" in found
    assert "_execute_transaction" in found


#: modules another change of issue 25 (item 2: the deadline dispatcher, stock RQ) rewrites;
#: expected to fail until it lands, then this set is emptied
REWRITTEN_ELSEWHERE: set[str] = set()


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(reason="the deadline dispatcher rewrites it"))
    if str(p.relative_to(REPO)) in REWRITTEN_ELSEWHERE else p for p in MODULES
], ids=lambda p: str(p.relative_to(REPO)))
def test_no_private_redis_or_rq_name(path: Path) -> None:
    assert violations(path) == []


def private_module_imports(source: str) -> list[str]:
    """The modules of a private name (``_random``, ``redis._parsers``) that ``source`` imports;
    relative imports are the project's own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        found += [n for n in names if any(_private(part) for part in n.split("."))]
    return found


def test_the_import_check_sees_private_modules() -> None:
    assert private_module_imports("from _random import Random\nimport redis._parsers as p\n"
                                  "from . import _build\nfrom __future__ import annotations\n"
                                  "import random\n") == ["_random", "redis._parsers"]


@pytest.mark.parametrize("path", [
    *MODULES, *sorted((REPO / "sdk" / "llsdk").rglob("*.py"))], ids=lambda p: str(p.relative_to(REPO)))
def test_no_module_imports_a_private_module_of_a_library(path: Path) -> None:
    """Not the standard library's either: the engine's round generator was the C one behind
    ``random.Random`` (``_random``), bypassing the public class."""
    assert private_module_imports(path.read_text(encoding="utf-8")) == []
