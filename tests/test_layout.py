"""The code stays readable: functions fit on a screen, modules hold one concept."""

from __future__ import annotations

import ast
from pathlib import Path

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


# One test over every module (not one each): per-test reporting cost more than the checks.
def test_no_function_over_80_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_no_module_over_450_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in sources()
        if path.relative_to(ROOT).parts[0] == "bot" or "store" in path.parts
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []
