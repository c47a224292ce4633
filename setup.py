"""digestbot's build: setuptools, with the show-notes hot path compiled by mypyc.

The modules in ``digests.native.COMPILED`` (HTML show notes to text, the PR scan and its
sentences) are compiled to C extensions where a C compiler is at hand; the same modules
run as Python where it is not, or with ``DIGESTBOT_PURE_PYTHON=1``. What it buys is in
docs/benchmarks.md ("Show notes, compiled").
"""

from __future__ import annotations

import os
import sys

from setuptools import setup

# Kept in step with digests/native.py's COMPILED (tests/test_native.py checks).
_COMPILED = [
    "digests/parse/text.py",
    "digests/extract/prs.py",
    "digests/extract/sentences.py",
    "digests/extract/summary.py",
]


def _extensions() -> list[object]:
    if os.environ.get("DIGESTBOT_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify

        extensions = mypycify(_COMPILED, group_name="digests_native")
    except Exception as err:  # mypy missing or refusing the modules: the Python is whole
        print(f"digestbot: not compiled ({err}); the modules run as Python", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # no compiler: a warning, and the modules run as Python
    return extensions


setup(ext_modules=_extensions())
