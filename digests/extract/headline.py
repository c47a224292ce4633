"""An episode's headline: its title without the show's name, or one made from its link and date.
"""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import unquote, urlsplit

from digests.parse.text import squash


def headline(title: str, show: str, *aliases: str | None) -> str:
    """The title without a leading ``Show: `` (or ``Show - ``), for the show or an alias."""
    return title_headline(squash(title), show_names(show, *aliases))


def show_names(*names: str | None) -> list[tuple[str, str]]:
    """(name, casefolded name) of each usable show name, in order; once per feed."""
    out = []
    for name in names:
        if name:
            name = squash(name)
            if name:
                out.append((name, name.casefold()))
    return out


def title_headline(text: str, names: list[tuple[str, str]]) -> str:
    folded = text.casefold()
    for name, folded_name in names:
        if not folded.startswith(folded_name):
            continue
        m = _SHOW_SEP.match(text, len(name))
        if m and m.end() < len(text):
            return text[m.end() :]
    return text


def legible(text: str) -> str:
    """``text``, or "" when it is mostly U+FFFD: an undeclared EUC-JP or KOI8-R title read
    as UTF-8 ("����"), which no reader can use as a headline."""
    if "\ufffd" not in text:
        return text
    visible = sum(1 for c in text if not c.isspace())
    return text if text.count("\ufffd") * 2 < visible else ""


def untitled_headline(link: str | None, when: datetime | None) -> str:
    """A readable headline for an item with no title: its link's slug, else its date.

    ``…/episodes/all-gather-showdown.html`` reads "All gather showdown"; an item with no
    usable link either is an "Untitled episode" of its day.
    """
    slug = _slug(link or "")
    if slug:
        return slug
    return f"Untitled episode of {when:%-d %b %Y}" if when else "Untitled episode"


def _slug(link: str) -> str:
    try:
        path = urlsplit(link).path if "://" in link else link
    except ValueError:
        # "http://example.c[o.test/" (feedparser's corpus has it): no URL, no slug.
        return ""
    last = unquote(path.rstrip("/").rsplit("/", 1)[-1])
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", last)
    words = " ".join(re.split(r"[-_+\s]+", stem)).strip()
    # A bare number or hash (``/p/123``, ``/e/9f8a…``) says nothing to a reader.
    if not words or not re.search(r"[A-Za-z]{2}", words) or re.fullmatch(r"[0-9a-f]{16,}", words):
        return ""
    return squash(words[0].upper() + words[1:])[:150]


_SHOW_SEP = re.compile(r"\s*[:|]\s*|\s+[-–—]\s+")
