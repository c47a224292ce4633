"""An episode's summary and transcript text: boilerplate removed, a lead when there is no
description, the nearby episodes a page lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from digests.extract.sentences import SENTENCE_END
from digests.parse.text import MAX_TEXT, paragraphs, squash

# Crawler and feed boilerplate: sentences that say nothing about the episode.
_BOILERPLATE = re.compile(
    r"(?:"
    r"This excerpt keeps the crawler page concise\.?"
    r"(?:\s*Listen to the episode or use the RSS feed for the full update\.?)?"
    r"|Listen to the episode or use the RSS feed for the full update\.?"
    r"|This episode is a short developer briefing from [^.\n]{1,100}\."
    r"|It explains recent repository work in plain language\."
    r")[^\S\n]*",
    re.I,
)


def summary(description: str) -> str:
    """The description, boilerplate removed and whitespace normalised to single spaces."""
    return cleaned(description, squash)[0]


def transcript(text: str) -> str:
    """The transcript, boilerplate removed; paragraphs kept (blank-line separated)."""
    return cleaned(text, paragraphs)[0]


def cleaned(
    text: str, normalise: Callable[[str], str], normalised: bool = False
) -> tuple[str, str]:
    """``text`` without boilerplate, normalised; and its lower-case, which the PR scan
    needs too (text from our own parsers is already normalised, so it is lowered once).

    ``normalised``: ``text`` is ``normalise``'s output already, unless a cap cut it (what
    is cut is exactly ``MAX_TEXT`` long), so normalising it again would give it back.
    """
    # Normalised first, then lowered once: normalising only joins whitespace, so a phrase
    # found in the text as given is found in it normalised too.
    clean = text if normalised and len(text) < MAX_TEXT else normalise(text)
    lower = clean.lower()
    if not _has_boilerplate(lower):
        return clean, lower
    if clean is not text:
        lower = text.lower()  # the phrases as given decide, as they always did
        if not _has_boilerplate(lower):
            return clean, clean.lower()
    clean = normalise(_BOILERPLATE.sub("", text))
    return clean, clean.lower()


def squashed(text: str, normalised: bool) -> tuple[str, str, bool]:
    """``cleaned(text, squash)`` of a description, and whether that is ``text`` with its
    paragraph breaks as spaces (False: not known). Normalised paragraphs have no other
    whitespace than single spaces and the breaks between them: replacing the breaks
    squashes them (``normalised``: ``text`` is ``paragraphs``' output)."""
    if normalised and len(text) < MAX_TEXT:
        flat = text.replace("\n\n", " ") if "\n" in text else text
        lower = flat.lower()
        if not _has_boilerplate(lower):
            return flat, lower, True
        if "\n" in text:
            return (*cleaned(text, squash), False)
    clean, lower = cleaned(text, squash, normalised and "\n" not in text)
    return clean, lower, False


def _has_boilerplate(lower: str) -> bool:
    return (
        "crawler page" in lower
        or "rss feed for the full" in lower
        or "short developer briefing" in lower
        or "repository work in plain" in lower
    )


MAX_LEAD = 500


def lead(text: str, limit: int = MAX_LEAD) -> str:
    """The first paragraph of normalised ``text`` (a transcript), at most ``limit``
    characters: cut after the last whole sentence that fits, else at a word, and marked
    with "…" when cut."""
    para = text.split("\n\n", 1)[0].strip()
    if len(para) <= limit:
        return para
    room = limit - 1  # for the "…"
    cut = 0
    for m in SENTENCE_END.finditer(para, 0, room + 1):
        end = len(para[: m.end()].rstrip())
        if end > room:
            break
        cut = end
    if cut:
        sentences = para[:cut]
        # "Whole sentences." then "…": the full stop gives way to the ellipsis.
        return (sentences[:-1] if sentences.endswith(".") else sentences) + "…"
    space = para.rfind(" ", 0, room + 1)
    words = para[:space] if space > 0 else para[:room]
    return words.rstrip(",;:–—-( ") + "…"


_LIST_MARK = re.compile(r"^\s*(?:[-*•·‣◦▪–]|\d{1,3}[.)])\s+")


def nearby(titles: Iterable[str]) -> tuple[str, ...]:
    """Nearby-episode titles: list marks stripped, whitespace normalised, no repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in titles:
        title = " ".join(_LIST_MARK.sub("", raw, count=1).split())
        if title and title.casefold() not in seen:
            seen.add(title.casefold())
            out.append(title)
    return tuple(out)
