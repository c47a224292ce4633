"""Chapters → records. Pure: a ``<podcast:chapters>`` JSON document in, chapters out.

The Podcasting 2.0 JSON chapters format: ``{"version": …, "chapters": [{"startTime": 0,
"title": "Intro", "url": …, "toc": true}, …]}``, validated here; chapters marked
``"toc": false`` (ads, silent markers) and those without a title are left out.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict, ValidationError

from digests.models import Chapter
from digests.parse.jsonfeed import too_deep
from digests.parse.text import squash

__all__ = ["MAX_CHAPTERS", "json_chapters"]

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
