"""The code stays readable: functions fit on a screen, modules hold one concept."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 450  # in bot/ and digests/store/


def sources() -> list[Path]:
    return sorted(
        p
        for package in ("bot", "digests", "config")
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts
    )


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_over_80_lines(path: Path) -> None:
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


@pytest.mark.parametrize(
    "path",
    [p for p in sources() if p.relative_to(ROOT).parts[0] == "bot" or "store" in p.parts],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_module_over_450_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES
