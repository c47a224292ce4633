"""The pure core imports no I/O library, and the layers import without cycles."""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest


@functools.cache  # a fresh interpreter per module, but one for both tests that ask for it
def modules_after(module: str) -> frozenset[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return frozenset(out.split())


def loaded_after(module: str) -> set[str]:
    return {name.split(".")[0] for name in modules_after(module)}


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("digests.decide", {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler"}),
        ("digests.types", {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler"}),
        ("bot.commands", {"apscheduler"}),
        ("bot.recap_build", {"apscheduler"}),
        # What the CLI's processes start from: a command failing on its settings or its port
        # says so before the store, Slack or the web server are loaded.
        ("bot.service", {"sqlalchemy", "slack_sdk", "slack_bolt", "apscheduler", "uvicorn"}),
        ("bot.listen", {"sqlalchemy", "slack_sdk", "slack_bolt", "apscheduler", "uvicorn"}),
        # `run --once` polls, delivers and posts the daily digests without a scheduler.
        ("bot.daily", {"apscheduler"}),
        ("bot.pipeline", {"apscheduler"}),
    ],
)
def test_module_loads_no_io_library(module: str, forbidden: set[str]) -> None:
    assert loaded_after(module) & forbidden == set()


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        # The slash commands answer from the store: the deliverer and the scheduled recap
        # are the clock's.
        ("bot.commands", {"bot.delivery", "bot.recap", "bot.scheduler", "bot.outbox"}),
        ("bot.ingest", {"bot.delivery", "bot.outbox", "digests.store"}),
    ],
)
def test_module_loads_no_other_layer(module: str, forbidden: set[str]) -> None:
    assert modules_after(module) & forbidden == set()
