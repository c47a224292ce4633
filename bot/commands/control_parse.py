"""Arguments of the channel-control subcommands (issue 14): ``preview`` so far. Pure.

A filter is read here, not by ``shlex``: an apostrophe ("don't") is part of a word, and the
curly quotes Slack types stand for straight ones; the terms then go to ``digests.filters``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from bot import messages as msg
from bot.commands.model import MAX_KEYWORD_LEN, MAX_KEYWORDS, CommandError, Preview, quote_value
from digests.filters import Filter, FilterSyntaxError

# A term: an optional sign, then a "quoted phrase" or a bare word.
_TERM_RE = re.compile(r'([+-]?)"([^"]*)"|(\S+)')
_DOUBLE_QUOTES = str.maketrans({c: '"' for c in "“”„«»"})

CONTROL_WORDS = frozenset({"preview"})


def _fold(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def split_show(text: str, shows: Sequence[str]) -> tuple[str | None, str]:
    """(the configured show ``text`` starts with, the rest); the longest name wins, and a
    name may be quoted (``"Deep Learning Daily" fsdp``)."""
    words = text.split()
    for k in range(len(words), 0, -1):
        head = " ".join(words[:k])
        if head.count('"') == 2 and head.startswith('"') and head.endswith('"'):
            head = head[1:-1]
        elif '"' in head:
            continue
        wanted = _fold(head)
        show = next((s for s in shows if _fold(s) == wanted), None)
        if show is not None:
            return show, " ".join(words[k:])
    return None, text


def read_filter(text: str, subcommand: str) -> Filter:
    """``inductor "flex attention" +cuda -rocm`` → a Filter, or a one-line ``CommandError``."""
    if text.count('"') % 2:
        raise CommandError(msg.FILTER_OPEN_QUOTE, subcommand)
    terms: list[str] = []
    for sign, phrase, word in _TERM_RE.findall(text.replace(",", " ")):
        term = word or sign + " ".join(phrase.split())
        if term:
            terms.append(term)
    if len(terms) > MAX_KEYWORDS:
        raise CommandError(
            msg.FILTER_TOO_MANY.format(limit=MAX_KEYWORDS, count=len(terms)), subcommand
        )
    if any(len(t.lstrip("+-")) > MAX_KEYWORD_LEN for t in terms):
        raise CommandError(msg.FILTER_TERM_TOO_LONG.format(limit=MAX_KEYWORD_LEN), subcommand)
    for term in terms:
        try:
            Filter.from_terms([term])
        except FilterSyntaxError as exc:  # a sign on nothing, or on punctuation only ("+!")
            raise CommandError(
                msg.FILTER_LONE_SIGN.format(term=quote_value(term), sign=term[0]), subcommand
            ) from exc
    return Filter.from_terms(terms)


def parse_preview(args: Sequence[str], shows: Sequence[str]) -> Preview:
    if not shows:
        raise CommandError(msg.NO_SHOWS, "preview")
    text = " ".join(args).translate(_DOUBLE_QUOTES)
    show, rest = split_show(text, shows)
    if show is None:
        if len(shows) > 1:
            if not text:
                raise CommandError(msg.NAME_THE_SHOW.format(shows=", ".join(shows)), "preview")
            first = quote_value(text.split()[0].strip('"'))
            raise CommandError(
                msg.UNKNOWN_SHOW.format(name=first, shows=", ".join(shows)), "preview"
            )
        show = shows[0]  # with one show it may be left out, as with subscribe
    return Preview(show, read_filter(rest, "preview").terms())


def parse_control(head: str, args: Sequence[str], shows: Sequence[str]) -> Preview:
    """The command for a word of ``CONTROL_WORDS``."""
    return parse_preview(args, shows)
