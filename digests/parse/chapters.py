"""Chapters → records. Pure: a ``<podcast:chapters>`` JSON document, or the Podlove Simple
Chapters an item writes itself, in; chapters out.

The Podcasting 2.0 JSON chapters format: ``{"version": …, "chapters": [{"startTime": 0,
"title": "Intro", "url": …, "toc": true}, …]}``, validated here; chapters marked
``"toc": false`` (ads, silent markers) and those without a title are left out. Podlove's
``<psc:chapters><psc:chapter start="00:01:20.000" title="…" href="…"/></psc:chapters>``:
``start`` in Normal Play Time (``[[hh:]mm:]ss[.mmm]``).
"""

from __future__ import annotations

import json
import math
import re

from lxml import etree
from pydantic import BaseModel, ConfigDict, ValidationError

from digests.models import Chapter
from digests.parse.jsonfeed import too_deep
from digests.parse.text import squash

__all__ = ["MAX_CHAPTERS", "json_chapters", "npt_seconds", "psc_chapters"]

MAX_CHAPTERS = 100
_MAX_TITLE = 200
_MAX_URL = 2_000


class _JsonChapter(BaseModel):
    model_config = ConfigDict(extra="ignore")

    startTime: float = 0
    title: str | None = None
    url: str | None = None
    toc: bool = True


class _JsonChapters(BaseModel):
    model_config = ConfigDict(extra="ignore")

    chapters: list[_JsonChapter]


def json_chapters(body: str) -> tuple[Chapter, ...]:
    """The listed chapters of a JSON chapters document, in order of time; () when it is
    not one."""
    if too_deep(body):
        return ()
    try:
        document = _JsonChapters.model_validate(json.loads(body))
    except (ValueError, ValidationError, RecursionError):
        return ()
    found: list[Chapter] = []
    for chapter in document.chapters:
        title = squash(chapter.title or "")[:_MAX_TITLE]
        start = chapter.startTime
        if not chapter.toc or not title or not math.isfinite(start) or start < 0:
            continue
        url = (chapter.url or "").strip()[:_MAX_URL] or None
        found.append(Chapter(int(start), title, url))
        if len(found) >= MAX_CHAPTERS:
            break
    return tuple(sorted(found, key=lambda c: c.start))


_NPT = re.compile(r"^(?:(?:(\d{1,3}):)?(\d{1,2}):)?(\d{1,5})(?:\.(\d{1,3}))?$")


def npt_seconds(value: str) -> int | None:
    """``01:02:03.500`` → 3723; ``02:03`` → 123; ``83`` → 83; None for anything else."""
    m = _NPT.match(value.strip())
    if m is None:
        return None
    hours, minutes, seconds = (int(g) if g else 0 for g in m.group(1, 2, 3))
    return hours * 3600 + minutes * 60 + seconds


def psc_chapters(element: etree._Element) -> tuple[Chapter, ...]:
    """The chapters of a ``<psc:chapters>`` element, in order of time."""
    found: list[Chapter] = []
    for child in element:
        if not isinstance(child.tag, str) or not child.tag.endswith("chapter"):
            continue
        start = npt_seconds(child.get("start") or "")
        title = squash(child.get("title") or "")[:_MAX_TITLE]
        if start is None or not title:
            continue
        url = (child.get("href") or "").strip()[:_MAX_URL] or None
        found.append(Chapter(start, title, url))
        if len(found) >= MAX_CHAPTERS:
            break
    return tuple(sorted(found, key=lambda c: c.start))
