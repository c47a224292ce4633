"""Every relative link in README.md, CHANGELOG.md and docs/ names a file that exists, and
README stays a page a newcomer reads (the rest lives in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
# [text](target) outside code spans; a target with a scheme is a web link, not checked here.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _links(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = [
        target
        for target in _links(doc)
        if not (doc.parent / target.partition("#")[0]).resolve().exists()
    ]
    assert broken == []


def test_the_readme_links_every_doc_and_fits_a_screenful_or_three() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 160
    linked = set(_links(ROOT / "README.md"))
    missing = [d for d in DOCS if d.name != "README.md" and str(d.relative_to(ROOT)) not in linked]
    assert missing == []
