"""Which modules of the show-notes hot path run compiled (mypyc, see setup.py), and which
of those are stale: their source changed after the build, so the extension Python loads
instead of it runs the old code until ``pip install -e .`` builds it again."""

from __future__ import annotations

import importlib
from pathlib import Path

# The modules setup.py compiles, as module names.
COMPILED = (
    "digests.parse.text",
    "digests.extract.prs",
    "digests.extract.sentences",
    "digests.extract.summary",
)


def compiled_modules() -> list[str]:
    """The modules of ``COMPILED`` that Python loaded from a C extension."""
    return [name for name in COMPILED if _extension(name) is not None]


def stale_modules() -> list[str]:
    """Sources (paths) of compiled modules written after their extension was built."""
    stale = []
    for name in COMPILED:
        extension = _extension(name)
        if extension is None:
            continue
        source = extension.parent / (name.rsplit(".", 1)[1] + ".py")
        if written_after(source, extension):
            stale.append(str(source))
    return stale


def stale_message(source: str) -> str:
    """What to say of a stale module (the CLI's warning, pytest's refusal)."""
    return (
        f"{source} changed after it was compiled: its old code runs until "
        "`pip install -e .` compiles it again"
    )


def written_after(source: Path, extension: Path) -> bool:
    """Whether ``source`` exists and was written after ``extension`` was built. An
    extension deleted since counts as older: the module still runs compiled (another
    compiled module's import loads it from the group's shared library, setup.py's
    ``digests_native``), as it was built, whatever the source says now."""
    if not source.exists():
        return False
    return not extension.exists() or source.stat().st_mtime > extension.stat().st_mtime


def _extension(name: str) -> Path | None:
    path = Path(importlib.import_module(name).__file__ or "")
    return path if path.suffix in (".so", ".pyd") else None
