"""openapi.yaml is generated from the code (``make openapi``) and must be current."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from service.http.openapi import SPEC_PATH, build_spec, main

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


@pytest.fixture(scope="module")
def generated() -> str:
    return build_spec()


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    return [(path, method, op, item) for path, item in spec["paths"].items()
            for method, op in item.items() if method in METHODS]


def test_committed_spec_is_current(generated: str) -> None:
    assert SPEC_PATH.exists(), "openapi.yaml is missing: run `make openapi` and commit it"
    assert SPEC_PATH.read_text() == generated, \
        "openapi.yaml is stale: run `make openapi` (or see `python -m service.http.openapi --check`)"


def test_check_mode(tmp_path: Any, generated: str) -> None:
    target = tmp_path / "openapi.yaml"
    assert main(["--check", "--path", str(target)]) == 1  # missing
    assert main(["--path", str(target)]) == 0
    assert target.read_text() == generated
    assert main(["--check", "--path", str(target)]) == 0
    target.write_text(generated.replace("Love Letter Arena", "Something Else"))
    assert main(["--check", "--path", str(target)]) == 1


def test_generation_is_deterministic(generated: str) -> None:
    assert build_spec() == generated


def test_every_operation_has_a_summary_and_documents_client_errors(generated: str) -> None:
    spec = yaml.safe_load(generated)
    ops = operations(spec)
    assert len(ops) >= 10
    problems = []
    for path, method, op, item in ops:
        if not (op.get("summary") or "").strip():
            problems.append(f"{method.upper()} {path}: no summary (the view's docstring)")
        codes = [str(c) for c in op.get("responses", {})]
        # An operation that takes no client input at all (no parameters, body or auth: the
        # health probes, which are also exempt from rate limits) has no client error to document.
        takes_input = bool(op.get("parameters") or item.get("parameters")
                           or op.get("requestBody") or op.get("security"))
        if takes_input and not any(c.startswith("4") for c in codes):
            problems.append(f"{method.upper()} {path}: documents no 4xx response ({codes})")
        if not any(c.startswith("2") or c.startswith("3") for c in codes):
            problems.append(f"{method.upper()} {path}: documents no success response")
    assert not problems, "\n".join(problems)


def test_benchmark_routes_stay_out_of_the_spec(generated: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_BARE_ENDPOINT", "1")
    assert build_spec() == generated
    assert "/bench" not in generated
