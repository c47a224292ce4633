"""The sentence around a position of a text: where a PR is named, what the digest quotes.
"""

from __future__ import annotations

import re

MAX_CONTEXT = 400


# A sentence ends at . ! ? … (plus closing quotes/brackets) before whitespace and a
# capital, digit or opening quote, or at a blank line. "e.g. foo", "PR No. 5", "2.5" stay.
SENTENCE_END = re.compile(
    r"[.!?…\n](?:"
    r"(?<=\n)[^\S\n]*\n"
    r"|(?<!\b(?:e\.g|i\.e|etc)\.)(?<!\b(?:vs|[Nn]o|Dr|Mr|Ms|cf)\.)"
    r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[A-Z0-9])"
    r")"
)


# The same, for a paragraph whose only sentence mark is the full stop: led by a literal,
# so the regex engine skips ahead fast instead of testing a character set at every
# position (three times faster on prose).
FULL_STOP_END = re.compile(
    r"\.(?<!\b(?:e\.g|i\.e|etc)\.)(?<!\b(?:vs|[Nn]o|Dr|Mr|Ms|cf)\.)"
    r"[\"')\]]*\s+(?=[\"'(\[A-Z0-9])"
)


class SentenceList:
    """Sentences of any text, found by one scan of it: ``(start, end)`` of the one holding
    a position, ``text[start:end]`` the sentence with what follows it up to the next."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *[m.end() for m in SENTENCE_END.finditer(text)], len(text) + 1]
        self.i = 0

    def __call__(self, text: str, pos: int) -> tuple[int, int]:
        starts = self.starts
        i = self.i
        while starts[i + 1] <= pos:
            i += 1
        self.i = i
        return starts[i], starts[i + 1]


class NormalisedSentences:
    """Sentences of normalised ``text``, as ``SentenceList`` finds them, looked up near
    each mention instead of scanning every sentence (see ``near_sentence``)."""

    def __init__(self, text: str) -> None:
        self.plain = is_plain(text)

    def __call__(self, text: str, pos: int) -> tuple[int, int]:
        return near_sentence(text, pos, self.plain)


def is_plain(text: str) -> bool:
    """Whether ``text`` has no "!", "?" or "…" at all (most texts): then no paragraph of
    it needs checking for them."""
    return "!" not in text and "?" not in text and (text.isascii() or "…" not in text)


def near_sentence(text: str, pos: int, plain: bool) -> tuple[int, int]:
    """(start, end) of the sentence of normalised ``text`` holding ``pos`` (a mention: no
    space, no quote, no full stop); ``text[start:end].rstrip()`` is the sentence.
    ``plain``: ``is_plain(text)``.

    In normalised text every paragraph start ends a ``SENTENCE_END`` match and no match
    reaches across a paragraph. In a paragraph whose only sentence mark is the full stop,
    a sentence ends where a ``FULL_STOP_END`` match ends, and what such a match covers
    after its full stop (closing quotes, spaces) holds no full stop and no mention: the
    sentence holding a mention starts where the last match before it ends (or at its
    paragraph's start, whichever is later) and ends where the first match after it ends
    (or at its paragraph's end, whichever is sooner).
    """
    if not plain:
        para = text.rfind("\n\n", 0, pos)
        para = para + 2 if para >= 0 else 0
        stop = text.find("\n\n", pos)
        stop = len(text) if stop < 0 else stop
        if (
            text.find("!", para, stop) >= 0
            or text.find("?", para, stop) >= 0
            or (not text.isascii() and text.find("…", para, stop) >= 0)
        ):
            return _marked_sentence(text, pos, para, stop)
    start = 0
    dot = pos
    while (dot := text.rfind(".", 0, dot)) >= 0:
        m = FULL_STOP_END.match(text, dot)
        if m is not None:
            start = m.end()
            break
    # A match ending the paragraph before ends at this one's start; a break after
    # the match found means the sentence starts the paragraph.
    brk = text.rfind("\n\n", start, pos)
    if brk >= 0:
        start = brk + 2
    # The first match after the mention (one search, led by the literal full stop).
    m = FULL_STOP_END.search(text, pos)
    end = m.end() if m is not None else len(text)
    # The sentence stops at its paragraph's end (a match may reach into the next).
    brk = text.find("\n\n", pos, end)
    return start, (brk if brk >= 0 else end)


def _marked_sentence(text: str, pos: int, para: int, stop: int) -> tuple[int, int]:
    """The sentence holding ``pos`` in the paragraph ``text[para:stop]``, any mark."""
    start = para
    for m in SENTENCE_END.finditer(text, para, stop):
        if m.end() > pos:
            return start, m.end()
        start = m.end()
    return start, stop


def clip(sentence: str, at: int) -> str:
    """A window of a very long sentence around the mention, cut at words, marked with …."""
    lo = max(0, at - MAX_CONTEXT // 2)
    hi = min(len(sentence), lo + MAX_CONTEXT)
    lo = max(0, hi - MAX_CONTEXT)
    if lo > 0:
        space = sentence.find(" ", lo)
        lo = space + 1 if 0 <= space < at else lo
    if hi < len(sentence):
        space = sentence.rfind(" ", at, hi)
        hi = space if space > at else hi
    return ("…" if lo > 0 else "") + sentence[lo:hi].strip() + ("…" if hi < len(sentence) else "")
