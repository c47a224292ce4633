"""The compiled modules (digests/native.py) loaded from their Python source instead, for
comparing the two builds: ``python -m tests.pure_python`` prints ``outputs()``'s digest
as the source reads it; tests/test_native.py compares it with the compiled modules'.
The benchmarks import ``load_as_python`` to time the same code both ways in one run."""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

from digests.native import COMPILED

ROOT = Path(__file__).resolve().parents[1]


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds each compiled module's .py before the import system finds its extension."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED:
            return None
        source = ROOT.joinpath(*fullname.split(".")).with_suffix(".py")
        return importlib.util.spec_from_file_location(fullname, source)


def load_as_python() -> None:
    """From here on, the compiled modules import from their source. Call it before anything
    imports them: a module loaded already stays as it was loaded."""
    loaded = [name for name in COMPILED if name in sys.modules]
    assert not loaded, f"loaded before load_as_python: {loaded}"
    sys.meta_path.insert(0, _SourceFirst())


def outputs() -> Iterator[str]:
    """What the compiled modules give, as text: show notes and soup to text, PR scans, and
    every episode of the bench feeds and tests/data's feeds."""
    from digests.extract.episodes import build_episodes
    from digests.extract.prs import pull_requests
    from digests.parse import parse_bytes
    from digests.parse.text import html_to_text, notes_texts, to_text
    from tests.benchmarks.bench_parse import make_feed, make_show_notes_feed
    from tests.test_extract import _PR_PIECES
    from tests.test_parse_html import _linked_markup, _well_formed

    rng = random.Random(20261206)
    for _ in range(3000):
        markup = _linked_markup(rng)
        yield to_text(markup)
        yield repr(notes_texts(markup, markup + _well_formed(rng)))
        yield html_to_text(_well_formed(rng))
        text = " ".join(rng.choice([*_PR_PIECES, "\n\n", "e.g.", "("]) for _ in range(30))
        yield repr(pull_requests(text, "pytorch/pytorch"))
    feeds = [make_show_notes_feed(40), make_feed(300)]
    feeds += [path.read_bytes() for path in sorted((ROOT / "tests" / "data").glob("*.xml"))]
    for feed in feeds:
        for episode in build_episodes(parse_bytes(feed, "parity"), "PyTorch", "pytorch/pytorch"):
            yield episode.model_dump_json()


def digest() -> str:
    sha = hashlib.sha256()
    for text in outputs():
        sha.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return sha.hexdigest()


if __name__ == "__main__":
    load_as_python()
    from digests import native

    print(json.dumps({"compiled": native.compiled_modules(), "digest": digest()}))
