"""The pure core imports no I/O library, and the layers import without cycles."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

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
        (
            "digests.decide.deliveries",
            {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler"},
        ),
        ("digests.types", {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler"}),
        ("bot.listeners.commands", {"apscheduler"}),
        ("bot.jobs.recap_build", {"apscheduler"}),
        # What the CLI's processes start from: a command failing on its settings or its port
        # says so before the store, Slack or the web server are loaded.
        ("bot.service", {"sqlalchemy", "slack_sdk", "slack_bolt", "apscheduler", "uvicorn"}),
        ("bot.server.listen", {"sqlalchemy", "slack_sdk", "slack_bolt", "apscheduler", "uvicorn"}),
        # `run --once` polls, delivers and posts the daily digests without a scheduler.
        ("bot.jobs.daily", {"apscheduler"}),
        ("bot.jobs.pipeline", {"apscheduler", "procrastinate"}),
        # The embedded default (`run` on SQLite) never loads the job queue.
        ("bot.jobs.scheduler", {"procrastinate"}),
        ("bot.cli", {"procrastinate"}),
    ],
)
def test_module_loads_no_io_library(module: str, forbidden: set[str]) -> None:
    assert loaded_after(module) & forbidden == set()


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        # The slash commands answer from the store: the deliverer and the scheduled recap
        # are the clock's.
        (
            "bot.listeners.commands",
            {"bot.delivery", "bot.jobs.recap", "bot.jobs.scheduler", "bot.delivery.outbox"},
        ),
        ("bot.jobs.ingest", {"bot.delivery", "bot.delivery.outbox", "digests.store"}),
    ],
)
def test_module_loads_no_other_layer(module: str, forbidden: set[str]) -> None:
    assert modules_after(module) & forbidden == set()


ROOT = Path(__file__).resolve().parents[1]
# Bolt's private request path: overriding or reaching into any of it breaks on a minor release.
_BOLT_PRIVATE_TEXT = (
    "_init_context",
    "_async_listeners",
    "AsyncWebClient.__new__",
    '"_signing_secret"',  # read with getattr
    "._signing_secret",
)


def _private_bolt_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``slack_bolt`` imports of a private module (an ``_name`` or ``internals`` part) or
    of a private name, in one source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules, names = [node.module], [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [alias.name for alias in node.names], []
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] != "slack_bolt":
                continue
            private = [p for p in parts if p.startswith("_") or p.endswith("internals")]
            private += [n for n in names if n.startswith("_")]
            if private:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {module} {private}")
    return found


def test_no_private_bolt_name_is_used() -> None:
    sources = sorted(p for top in ("bot", "digests") for p in (ROOT / top).rglob("*.py"))
    assert sources
    found = [line for path in sources for line in _private_bolt_imports(path)]
    found += [
        f"{path.relative_to(ROOT)}: {text}"
        for path in sources
        for text in _BOLT_PRIVATE_TEXT
        if text in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_the_private_bolt_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    source = (
        "from slack_bolt.request.internals import parse_body\n"
        "from slack_bolt.request.async_internals import build_async_context\n"
        "from slack_bolt.app.async_app import _private\n"
        "import slack_bolt._private_module\n"
        "from slack_bolt.async_app import AsyncApp\n"
    )
    path = tmp_path / "bot" / "sample.py"
    path.parent.mkdir()
    path.write_text(source)
    found = _private_bolt_imports(path, tmp_path)
    assert len(found) == 4 and not any("AsyncApp" in line for line in found)


SQLITE_RUN = """
import os, signal, sys, threading, time
from bot.cli import main


def stop_once_started():  # the clock runs until SIGTERM: sent once it handles it
    while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        time.sleep(0.05)
    time.sleep(2)
    os.kill(os.getpid(), signal.SIGTERM)


if sys.argv[2:] == ["run"]:
    threading.Thread(target=stop_once_started, daemon=True).start()
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:  # not stdout: what `run --once` prints goes there
    out.write(f"{'loaded' if 'procrastinate' in sys.modules else 'clean'} {code}")
"""


@pytest.mark.parametrize("args", [["run", "--once"], ["run"]])
def test_run_on_sqlite_loads_no_job_queue(args: list[str], tmp_path: Path) -> None:
    """`digestbot run` and `run --once` on SQLite: APScheduler in one process, no
    procrastinate (the job queue is `digestbot worker`'s, on PostgreSQL)."""
    env = {
        k: v for k, v in __import__("os").environ.items()
        if not k.startswith(("SLACK_", "DIGESTBOT_CONFIG", "DATABASE_URL"))
    }  # fmt: skip
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'd.sqlite3'}"
    result = tmp_path / "result.txt"
    done = subprocess.run(
        [sys.executable, "-c", SQLITE_RUN, str(result), *args], capture_output=True,
        text=True, timeout=120, env=env, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    said = result.read_text() if result.exists() else ""
    assert said == "clean 0", (done.returncode, done.stdout[-2000:], done.stderr[-2000:])


@functools.cache
def _defines(path: Path) -> tuple[set[str], set[str]]:
    """The names a module binds itself, and those it imports."""
    own: set[str] = set()
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            imported.update(a.asname or a.name.split(".")[0] for a in node.names)
    return own, imported


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    """No module is a relay: ``from X import name`` where X only imports ``name`` itself."""
    root = Path(__file__).resolve().parent.parent
    relayed = []
    for path in sorted(root.glob("*/**/*.py")):
        if path.parts[len(root.parts)] not in ("bot", "digests", "config", "tests"):
            continue
        if "migrations" in path.parts or ".venv" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                continue
            if node.module.split(".")[0] not in ("bot", "digests", "config"):
                continue
            base = root / node.module.replace(".", "/")
            source = base.with_suffix(".py")
            source = source if source.exists() else base / "__init__.py"
            if not source.exists():
                continue
            own, imported = _defines(source)
            relayed += [
                f"{path.relative_to(root)}: {node.module}.{a.name}"
                for a in node.names
                if a.name not in own
                and a.name in imported
                and not (base / f"{a.name}.py").exists()
                and not (base / a.name).is_dir()
            ]
    assert relayed == []
