"""The pure core imports no I/O library, and the layers import without cycles."""

from __future__ import annotations

import subprocess
import sys

import pytest


def loaded_after(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return {name.split(".")[0] for name in out.split()}


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("digests.decide", {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler"}),
        ("digests.types", {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler"}),
    ],
)
def test_module_loads_no_io_library(module: str, forbidden: set[str]) -> None:
    assert loaded_after(module) & forbidden == set()
