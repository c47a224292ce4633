"""Show names and quoted words as `/episodes` reads them. Pure.

A name matches whatever its case, Unicode compatibility form (full-width letters) or runs
of spaces; a near miss (difflib, ``TYPO_CUTOFF``) is a typo to point out, never a keyword.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from bot.listeners.commands.model import TYPO_CUTOFF

# Straight and curly quotes people put around a show name or a keyword (Slack turns "
# into “ ” on some keyboards).
QUOTES = "\"'“”„‘’‚«»"


def fold(name: str) -> str:
    """A name as compared: case, Unicode look-alikes (full-width letters) and runs of
    spaces do not count."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def match_show(word: str, shows: Sequence[str]) -> str | None:
    wanted = fold(word)
    return next((s for s in shows if fold(s) == wanted), None)


@dataclass(frozen=True)
class Arg:
    text: str
    quoted: bool  # a quoted run of words: one argument, never part of a longer name
    listed: bool = False  # a comma before it: the next item of a list (``"A", "B"``)


# A comma next to a quote separates (``"Empty Show", "Kernel Notes"``, ``"A","B"``): it is
# never part of a name, and left on the word it would hide the quote that closes a run.
_QUOTE_COMMA_RE = re.compile(f"((?<=[{QUOTES}]),+|,+(?=[{QUOTES}]))")
COMMA = ","


def split_quote_commas(words: Sequence[str]) -> list[str]:
    """The words, split at the commas that touch a quote; each such run of commas is a
    word of its own, ``COMMA``."""
    out: list[str] = []
    for word in words:
        for i, part in enumerate(_QUOTE_COMMA_RE.split(word)):
            if part:
                out.append(COMMA if i % 2 else part)
    return out


def unquote_words(words: Sequence[str]) -> list[Arg]:
    """Words with quoted runs joined: ``"Deep Learning Daily" compiler`` → ``Deep Learning
    Daily``, ``compiler``. Quotes around a word are dropped (a quote left open only from the
    word it is on), and so are words that were nothing but quotes. In a comma list of
    quoted names (``"Empty Show", "Kernel Notes"``) the commas go, and each name after one
    is ``listed``."""
    words = split_quote_commas(words)
    out: list[Arg] = []
    listed = False
    i = 0
    while i < len(words):
        word = words[i]
        if word == COMMA:
            listed, i = True, i + 1
            continue
        end = i
        if word[0] in QUOTES and not (len(word) > 1 and word[-1] in QUOTES):
            end = next((j for j in range(i + 1, len(words)) if words[j][-1] in QUOTES), i)
        joined = " ".join(words[i : end + 1]).strip(QUOTES).strip()
        if joined:
            out.append(Arg(joined, end > i or word[0] in QUOTES, listed))
        listed = words[end].endswith(COMMA)
        i = end + 1
    return out


def show_list(shows: Sequence[str]) -> str:
    return ", ".join(shows) if shows else "none"


def close_show(args: list[str], shows: Sequence[str]) -> tuple[str, str] | None:
    """(the words, the show) when the leading words look like a typo of a show's name."""
    best: tuple[float, str, str] | None = None
    # Word by word: a quoted name arrives as one argument.
    flat = " ".join(args).split()
    for show in shows:
        words = " ".join(flat[: len(show.split())])
        if fold(words) == fold(show):
            continue  # never "did you mean" the very name typed
        matcher = difflib.SequenceMatcher(None, fold(words), fold(show))
        # Upper bounds of ratio() first, cheap: most shows are nowhere near what was typed
        # (every answer that names no show asks each of them).
        floor = TYPO_CUTOFF if best is None else best[0]
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        ratio = matcher.ratio()
        if ratio >= TYPO_CUTOFF and (best is None or ratio > best[0]):
            best = (ratio, words, show)
    return (best[1], best[2]) if best else None
