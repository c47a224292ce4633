"""docs/architecture.md names every module of bot/, digests/ and config/, and names none that
is gone: the map a newcomer follows matches the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_PATH = re.compile(r"`((?:bot|digests|config)/[\w/]+\.py)`")
_NAME = re.compile(r"`([\w]+\.py)`")


def documented() -> set[str]:
    """Every module the document names: full paths, and ``x.py`` after a full path in the
    same bullet (a name in the same folder)."""
    named: set[str] = set()
    # A bullet's continuation lines (indented) belong to it.
    text = re.sub(r"\n  (?=\S)", " ", (ROOT / "docs" / "architecture.md").read_text())
    for line in text.splitlines():
        paths = _PATH.findall(line)
        named.update(paths)
        if paths:
            folder = paths[0].rsplit("/", 1)[0]
            named.update(f"{folder}/{name}" for name in _NAME.findall(line))
    return named


def modules() -> set[str]:
    return {
        str(p.relative_to(ROOT))
        for package in ("bot", "digests", "config")
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts and p.name not in ("__init__.py", "__main__.py")
    }


def test_every_module_is_on_the_map() -> None:
    assert sorted(modules() - documented()) == []


def test_the_map_names_no_module_that_is_gone() -> None:
    assert sorted(p for p in documented() if not (ROOT / p).exists()) == []
