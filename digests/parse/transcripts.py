"""Podcasting 2.0 transcripts and chapters → plain text. Pure: bytes in, text out.

``<podcast:transcript type>`` names one of five forms (podcastindex.org namespace):
WebVTT, SubRip, the namespace's JSON (``segments`` of ``speaker``/``body``), HTML (with
``<cite>`` speakers and ``<time>`` stamps) and plain text. Each becomes what was said:
cues joined into running text (a sentence split over two cues reads as one), timestamps,
cue numbers and speaker labels out, a paragraph break where the speaker changes.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from lxml import etree

from digests.parse.jsonfeed import too_deep
from digests.parse.text import MAX_TEXT, MAX_TITLE, cap, element_text, html_parser, squash

__all__ = ["TRANSCRIPT_TYPES", "chapter_titles", "sniff_form", "transcript_text"]

# What each <podcast:transcript type> is read as; a type we do not know is sniffed.
TRANSCRIPT_TYPES: dict[str, str] = {
    "text/vtt": "vtt",
    "application/x-subrip": "srt",
    "application/srt": "srt",
    "text/srt": "srt",
    "application/json": "json",
    "text/html": "html",
    "text/plain": "plain",
}

_MAX_CHAPTERS = 100
_TIMING = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?[.,]\d{1,3}\s*-->")
_VOICE = re.compile(r"<v(?:\.[\w.-]+)?\s+([^>\n]{1,100})>")
_TAG = re.compile(r"<[^<>\n]{0,200}>")
_ASS_TAG = re.compile(r"\{\\[^{}\n]{0,100}\}")
# "Alice:", "Dr. Bob Smith:", "SPEAKER 1:" opening a cue or line: a label, not speech.
_NAME = r"(?:[A-Z][\w.'’-]{0,30}|\d{1,3})"
_LABEL = re.compile(rf"^({_NAME}(?: {_NAME}){{0,3}}):\s+")
_BRACKET_LABEL = re.compile(r"^\[([^\[\]\n]{1,60})\]\s*")
# A stamp opening a line of a plain transcript: "00:01:02", "[1:02]", "(01:02:03.5)".
_STAMP = re.compile(r"^[\[(]?\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?[\])]?\s*[-–—:]?\s*")
_BLOCK_SPLIT = re.compile(r"\n[ \t]*\n")
# An object, or an array of objects: "[00:01] Alice: …" is a plain transcript.
_JSON_START = re.compile(r'\{|\[\s*[{\]"]')


def transcript_text(body: str, kind: str) -> str:
    """What was said, from a transcript ``body`` of ``kind`` (a media type, or "" to sniff)."""
    form = TRANSCRIPT_TYPES.get(kind.split(";", 1)[0].strip().lower()) or sniff_form(body)
    body = body.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if form in ("vtt", "srt"):
        turns = _cues(body)
        if turns is None:  # no cue timing at all: someone's plain text, labelled oddly
            turns = _plain(body)
    elif form == "json":
        turns = _json_segments(body)
    elif form == "html":
        return _html(body)
    else:
        turns = _plain(body)
    return _join(turns)


def sniff_form(body: str) -> str:
    """The form of a transcript whose type says nothing we know: vtt, json, srt, html, plain."""
    head = body[:2048].lstrip("\ufeff \t\r\n")
    if head.startswith("WEBVTT"):
        return "vtt"
    if _JSON_START.match(head):
        return "json"
    if _TIMING.search(head):
        return "srt"
    if head.startswith("<"):
        return "html"
    return "plain"


def _join(turns: list[tuple[str | None, str]]) -> str:
    """(speaker, words) runs as paragraphs: one per speaker turn, cues joined by spaces."""
    paragraphs: list[list[str]] = []
    last: str | None = None
    for speaker, words in turns:
        words = squash(words)
        if not words:
            continue
        if not paragraphs or (speaker is not None and speaker != last):
            paragraphs.append([])
        if speaker is not None:
            last = speaker
        paragraphs[-1].append(words)
    return cap("\n\n".join(" ".join(p) for p in paragraphs), MAX_TEXT)


def _speaker(line: str) -> tuple[str | None, str]:
    """A cue line without its speaker label, and the speaker it named."""
    m = _VOICE.search(line)
    speaker = squash(m.group(1)) if m else None
    line = html.unescape(_TAG.sub("", _ASS_TAG.sub("", line))).strip()
    if speaker is None:
        label = _LABEL.match(line) or _BRACKET_LABEL.match(line)
        if label is not None:
            speaker, line = label.group(1), line[label.end() :]
    return speaker, line


def _cues(body: str) -> list[tuple[str | None, str]] | None:
    """WebVTT or SubRip cues (the same shape: optional id or number, timing, text); None
    when no block has a timing line and there is no WebVTT header either."""
    turns: list[tuple[str | None, str]] = []
    timed = body.startswith("WEBVTT")
    for block in _BLOCK_SPLIT.split(body):
        lines = block.strip("\n").split("\n")
        first = lines[0].strip()
        if first.startswith(("WEBVTT", "NOTE", "STYLE", "REGION")):
            continue
        at = next((i for i, line in enumerate(lines[:3]) if "-->" in line), None)
        if at is None:
            continue  # a stray id or junk between cues
        timed = True
        for line in lines[at + 1 :]:
            turns.append(_speaker(line))
    return turns if timed else None


def _plain(body: str) -> list[tuple[str | None, str]]:
    turns: list[tuple[str | None, str]] = []
    for block in _BLOCK_SPLIT.split(body):
        for line in block.split("\n"):
            line = _STAMP.sub("", line.strip(), count=1)
            speaker, text = _speaker(line)
            turns.append((speaker, text))
        turns.append((None, ""))
    return _paragraph_breaks(turns)


def _paragraph_breaks(turns: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    """A blank line in plain text is a paragraph break even with no speaker: marked as a
    fresh anonymous speaker so ``_join`` starts a paragraph there; a line without a label
    continues the turn it is in."""
    out: list[tuple[str | None, str]] = []
    paragraph = 0
    current: str | None = None
    for speaker, text in turns:
        if not text:
            paragraph += 1
            current = f"\x00{paragraph}"  # unlabelled lines after a blank: a new paragraph
            continue
        current = speaker if speaker is not None else current
        out.append((current, text))
    return out


def _json_segments(body: str) -> list[tuple[str | None, str]]:
    """The namespace's JSON: ``{"segments": [{"speaker", "body", "startTime"…}]}``."""
    if too_deep(body):
        return []
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return []
    segments = data.get("segments") if isinstance(data, dict) else data
    if not isinstance(segments, list):
        return []
    turns: list[tuple[str | None, str]] = []
    for seg in segments:
        if not isinstance(seg, dict):
            continue
        text = seg.get("body")
        if not isinstance(text, str):
            continue
        who = seg.get("speaker")
        turns.append((squash(who) if isinstance(who, str) and who.strip() else None, text))
    return turns


def _html(body: str) -> str:
    """An HTML transcript: ``<cite>`` (speakers) and ``<time>`` (stamps) dropped, the rest
    as text in paragraphs."""
    if not body.strip():
        return ""
    try:
        root = etree.fromstring(body.encode("utf-8"), html_parser())
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return ""
    if root is None:
        return ""
    for el in list(root.iter("cite", "time")):
        parent = el.getparent()
        if parent is not None:
            _drop(el, parent)
    return cap(element_text(root), MAX_TEXT)


def _drop(el: etree._Element, parent: etree._Element) -> None:
    # Keep the text after the element: it is speech, not part of the label.
    tail = el.tail or ""
    prev = el.getprevious()
    if prev is not None:
        prev.tail = (prev.tail or "") + tail
    else:
        parent.text = (parent.text or "") + tail
    parent.remove(el)


def chapter_titles(body: str) -> tuple[str, ...]:
    """Titles of a ``<podcast:chapters>`` JSON document (``{"chapters": [{"title"}]}``),
    in order, without chapters marked ``"toc": false``."""
    if too_deep(body):
        return ()
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return ()
    chapters = data.get("chapters") if isinstance(data, dict) else None
    if not isinstance(chapters, list):
        return ()
    titles: list[str] = []
    for chapter in chapters[: _MAX_CHAPTERS * 4]:
        if not isinstance(chapter, dict) or chapter.get("toc") is False:
            continue
        title = chapter.get("title")
        if isinstance(title, str) and (text := squash(title)[: MAX_TITLE // 10]):
            titles.append(text)
        if len(titles) >= _MAX_CHAPTERS:
            break
    return tuple(titles)
