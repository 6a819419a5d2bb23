"""The job processes use RQ and redis-py through their public APIs only (issue 25, item 2): no
private name of either is imported or touched, and a class built on theirs overrides only the
hooks they document for subclasses. A copied or overridden internal breaks silently on an
upgrade; a public API is what the version bounds in pyproject.toml promise to keep."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECKED = sorted((REPO / "service" / "jobs").glob("*.py")) + [
    REPO / "service" / "store" / "deadlines.py"]
LIBRARIES = ("rq", "redis")
#: what a subclass of an RQ class may define: RQ's documented worker hooks and settings
HOOKS = {"__init__", "execute_job", "handle_warm_shutdown_request", "max_connection_wait_time"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def library_names(tree: ast.Module) -> set[str]:
    """Local names bound to something imported from RQ or redis-py."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LIBRARIES:
            out |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names
                    if a.name.split(".")[0] in LIBRARIES}
    return out


def violations(path: Path, root: Path = REPO) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    theirs = library_names(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LIBRARIES:
            if any(private(part) for part in (node.module or "").split(".")):
                out.append(f"{where}: imports from the private module {node.module}")
            out += [f"{where}: imports the private {a.name}" for a in node.names
                    if private(a.name)]
        elif isinstance(node, ast.Attribute) and private(node.attr):
            out.append(f"{where}: uses the private attribute {node.attr}")
        elif isinstance(node, ast.ClassDef):
            bases = {b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases}
            if bases & theirs or any(b.split(".")[0] in theirs for b in bases):
                defined = {n.name for n in node.body
                           if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
                defined |= {t.id for n in node.body if isinstance(n, ast.Assign)
                            for t in n.targets if isinstance(t, ast.Name)}
                out += [f"{where}: {node.name} overrides {name} (not a documented hook)"
                        for name in sorted(defined - HOOKS)]
    return out


def test_job_modules_use_only_public_apis_of_rq_and_redis_py() -> None:
    assert len(CHECKED) > 5
    found = [v for path in CHECKED for v in violations(path)]
    assert found == [], "\n".join(found)


def test_the_check_catches_an_override_and_a_private_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from rq.worker import SimpleWorker\nfrom redis.client import _x\n"
                   "class W(SimpleWorker):\n    def _start_scheduler(self):\n"
                   "        return self.connection._pool\n")
    found = violations(bad, tmp_path)
    assert len(found) == 3, found
