"""digestbot's build: setuptools, with the show-notes hot path compiled by mypyc.

The modules in ``digests.native.COMPILED`` (HTML show notes to text, the PR scan and its
sentences) are compiled to C extensions where a C compiler is at hand; the same modules
run as Python where it is not, or with ``DIGESTBOT_PURE_PYTHON=1``. What it buys is in
docs/benchmarks.md ("Show notes, compiled").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup

# Kept in step with digests/native.py's COMPILED (tests/test_native.py checks).
_COMPILED = [
    "digests/parse/text.py",
    "digests/extract/prs.py",
    "digests/extract/sentences.py",
    "digests/extract/summary.py",
]
_GROUP = "digests_native"  # the modules' shared library, at the top level


def _extensions() -> list[object]:
    if os.environ.get("DIGESTBOT_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify

        extensions = mypycify(_COMPILED, group_name=_GROUP)
    except (Exception, SystemExit) as err:  # mypyc exits on a type error it finds
        print(f"digestbot: not compiled ({err}); the modules run as Python", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # no compiler: a warning, and the modules run as Python
    return extensions


def remove_built(root: Path) -> list[Path]:
    """The extensions an earlier compiled install left beside the sources (an editable
    install builds them there), deleted: Python would load them instead of the .py files."""
    built = [
        path
        for module in _COMPILED
        for path in (root / module).parent.glob(Path(module).stem + ".*")
        if path.suffix in (".so", ".pyd")
    ]
    built += [path for path in root.glob(f"{_GROUP}__mypyc.*") if path.suffix in (".so", ".pyd")]
    for path in built:
        path.unlink()
    return built


if __name__ == "__main__":  # as setuptools runs it
    extensions = _extensions()
    if not extensions:
        remove_built(Path(__file__).resolve().parent)
    setup(ext_modules=extensions)
