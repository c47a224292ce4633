"""`subscribe` and `unsubscribe` arguments → commands. Pure.

Show names are found anywhere in the words (a known show name is never a keyword, unless
quoted after a show or after ``keywords:``); the rest are keywords, read by
``digests.filters`` (commas and spaces split, punctuation round a word goes); ``recap
on|off`` at the end sets the weekly recap, ``daily [17:00 | 5pm | off]`` the daily mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.listeners.commands.model import (
    DAILY_OFF,
    MAX_KEYWORD_LEN,
    MAX_KEYWORDS,
    CommandError,
    Subscribe,
    Unsubscribe,
)
from bot.listeners.commands.model import quote_value as _quote
from bot.listeners.commands.names import (
    Arg,
    close_show,
    fold,
    match_show,
    show_list,
    split_quote_commas,
    unquote_words,
)
from bot.messages.control import (
    FILTER_EMPTY_QUOTES,
    FILTER_LONE_SIGN,
    FILTER_OPEN_QUOTE,
    FILTER_TOO_MANY,
)
from bot.messages.errors import (
    BAD_DAILY_TIME,
    DAILY_MISPLACED,
    KEYWORD_TOO_LONG,
    NAME_THE_SHOW,
    NO_SHOWS,
    RECAP_GOT,
    RECAP_MISPLACED,
    SHOW_TYPO,
    UNKNOWN_SHOW,
)
from digests.decide.daily import DEFAULT_TIME, BadTime, parse_time_of_day
from digests.filters import Filter, FilterSyntaxError

# `subscribe PyTorch keywords:jax` / `keywords: "jax"`: every word after it is a keyword,
# even one that names a show.
_KEYWORDS_MARK = "keywords:"
_RECAP_WORDS = {"on": True, "off": False, "yes": True, "no": False}
_OFF = ("off", "no")
_DOUBLE_QUOTES = str.maketrans({c: '"' for c in "“”„«»"})


def _show_at(args: list[Arg], i: int, shows: Sequence[str]) -> tuple[str, int] | None:
    """(the show, how many args it spans) named by the args from ``i`` on (longest match:
    names may have spaces; a quoted run is a whole name on its own)."""
    if args[i].quoted:
        show = match_show(args[i].text, shows)
        return (show, 1) if show else None
    stop = next((j for j in range(i + 1, len(args)) if args[j].quoted), len(args))
    for k in range(stop - i, 0, -1):
        show = match_show(" ".join(a.text for a in args[i : i + k]), shows)
        if show is not None:
            return show, k
    return None


@dataclass(frozen=True)
class _SubscribeWords:
    shows: tuple[str, ...]
    words: tuple[Arg, ...]  # the keyword words, as typed
    recap: bool | None
    daily: str | None = None
    pr_updates: bool | None = None


def _ends_a_show(args: list[Arg], shows: Sequence[str]) -> bool:
    """Whether the last words name a show (``Deep Learning Daily``), or look like a typo of
    one that ends in that word (``Deep Lerning Daily``)."""
    if any(match_show(" ".join(a.text for a in args[-k:]), shows) for k in range(1, len(args) + 1)):
        return True
    last = fold(args[-1].text)
    return any(
        (close := close_show([a.text for a in args[i:]], shows)) is not None
        and fold(close[1]).split()[-1] == last
        for i in range(len(args))
    )


def _read_daily(
    args: list[Arg], shows: Sequence[str], default: str
) -> tuple[list[Arg], str | None]:
    """``daily`` (at ``default``), ``daily 17:00`` / ``daily 5pm`` or ``daily off`` at the
    end, taken off."""
    last = args[-1] if args else None
    if last is None or last.quoted:
        return args, None
    if fold(last.text) == "daily" and not _ends_a_show(args, shows):
        return args[:-1], default
    if len(args) < 2 or args[-2].quoted or fold(args[-2].text) != "daily":
        return args, None
    if fold(last.text) in ("off", "no"):
        return args[:-2], DAILY_OFF
    if not last.text[:1].isdigit():
        return args, None  # `daily standup`: keywords
    try:
        return args[:-2], parse_time_of_day(last.text)
    except BadTime:
        raise CommandError(
            BAD_DAILY_TIME.format(value=_quote(last.text)), "subscribe"
        ) from None


def _read_options(
    args: list[Arg], shows: Sequence[str], daily_at: str
) -> tuple[list[Arg], bool | None, str | None, bool | None]:
    """``recap on|off``, ``daily …`` and ``pr-updates on|off`` at the end, in any order."""
    recap: bool | None = None
    daily: str | None = None
    pr_updates: bool | None = None
    for _ in range(3):
        if recap is None:
            args, recap = _read_switch(args, "recap")
        if pr_updates is None:
            args, pr_updates = _read_switch(args, "pr-updates")
        if daily is None:
            args, daily = _read_daily(args, shows, daily_at)
    return args, recap, daily, pr_updates


def _read_switch(args: list[Arg], name: str) -> tuple[list[Arg], bool | None]:
    """``<name> on|off`` at the end of the words, taken off."""
    if len(args) >= 2 and not args[-1].quoted and args[-2].text.casefold() == name:
        value = _RECAP_WORDS.get(fold(args[-1].text))
        if value is not None:
            return args[:-2], value
    return args, None


def _split_commas(args: list[Arg]) -> list[Arg]:
    """``JAX,PyTorch`` is two words, as keywords split on commas (up to ``keywords:``)."""
    out: list[Arg] = []
    for i, arg in enumerate(args):
        if not arg.quoted and arg.text.casefold().startswith(_KEYWORDS_MARK):
            return out + args[i:]
        out += [arg] if arg.quoted else [Arg(t, False) for t in arg.text.split(",") if t]
    return out


def _split_subscribe(words: list[str], shows: Sequence[str], daily_at: str) -> _SubscribeWords:
    """Shows wherever they are named, the rest keywords: a known show name is never a
    keyword unless it is quoted after a show, or follows ``keywords:``."""
    args, recap, daily, pr_updates = _read_options(
        _split_commas(unquote_words(words)), shows, daily_at
    )
    found: list[str] = []
    rest: list[Arg] = []
    after_show = False
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.quoted and arg.text.casefold().startswith(_KEYWORDS_MARK):
            tail = arg.text[len(_KEYWORDS_MARK) :]
            rest += [Arg(tail, True)] if tail else []
            rest += [Arg(a.text, True) for a in args[i + 1 :]]
            break
        # A quoted show name after a show is a keyword (`PyTorch "jax"`), unless it is the
        # next item of a list of shows (`"Empty Show", "Kernel Notes"`).
        keyword = arg.quoted and found and not (arg.listed and after_show)
        hit = None if keyword else _show_at(args, i, shows)
        after_show = hit is not None
        if hit is None:
            rest.append(arg)
            i += 1
            continue
        if hit[0] not in found:
            found.append(hit[0])
        i += hit[1]
    return _SubscribeWords(tuple(found), tuple(rest), recap, daily, pr_updates)


def _filter_words(words: list[str]) -> list[str]:
    """The words with a signed phrase's sign inside its quotes (``+"flex attention"`` →
    ``"+flex attention"``, one quoted argument), Slack's curly double quotes straight; an
    opening quote never closed is refused (``"flex attention`` is not two words)."""
    out = [w.translate(_DOUBLE_QUOTES) for w in split_quote_commas(words)]
    out = [f'"{w[0]}{w[2:]}' if w[:2] in ('+"', '-"') else w for w in out]
    i = 0
    while i < len(out):  # quoted runs paired as ``unquote_words`` pairs them
        word = out[i]
        if word.startswith('"') and not (len(word) > 1 and word.endswith('"')):
            close = next((j for j in range(i + 1, len(out)) if out[j].endswith('"')), None)
            if close is None:
                raise CommandError(FILTER_OPEN_QUOTE, "subscribe")
            i = close
        i += 1
    return out


def _keyword_terms(words: Sequence[Arg]) -> tuple[str, ...]:
    """Keywords as the channel filter reads them (``digests.filters``): commas split too,
    punctuation round a word goes, repeats in any case go, order is kept."""
    terms: list[str] = []
    for word in words:
        terms += [word.text] if word.quoted else [t for t in word.text.split(",") if t]
    for term in terms:
        try:
            Filter.from_terms([term])
        except FilterSyntaxError as exc:  # a sign on nothing, or on punctuation only ("+!")
            sign = next((c for c in term if c in "+-"), "+")
            lone = FILTER_LONE_SIGN.format(term=_quote(term), sign=sign)
            raise CommandError(lone, "subscribe") from exc
    parsed = Filter.from_terms(terms)
    seen: dict[str, str] = {}
    for term in parsed.terms():
        seen.setdefault(term.casefold(), term)
    return tuple(seen.values())


def _misplaced_options(words: Sequence[Arg]) -> None:
    """``recap`` left among the keywords (``recap maybe``, ``recap fsdp``) and ``daily`` with a
    time or ``off`` before more words (``daily 9:30am fsdp``) are refused: they would quietly
    become filter keywords. Quoted, they are keywords (``"recap"``); ``daily standup`` is too."""
    for i, arg in enumerate(words):
        if arg.quoted:
            continue
        after = words[i + 1] if i + 1 < len(words) and not words[i + 1].quoted else None
        if fold(arg.text) == "recap":
            got = RECAP_GOT.format(value=_quote(after.text)) if after else ""
            raise CommandError(RECAP_MISPLACED.format(got=got), "subscribe")
        timed = after is not None and (after.text[:1].isdigit() or fold(after.text) in _OFF)
        if fold(arg.text) == "daily" and after is not None and timed:
            value = _quote(f"{arg.text} {after.text}")
            raise CommandError(DAILY_MISPLACED.format(value=value), "subscribe")


def parse_subscribe(
    words: list[str], shows: Sequence[str], daily_at: str = DEFAULT_TIME
) -> Subscribe:
    """``daily_at``: the time a bare ``daily`` means (the ``daily_at`` setting)."""
    if not shows:
        raise CommandError(NO_SHOWS, "subscribe")
    words = _filter_words(words)
    split = _split_subscribe(words, shows, daily_at)
    if not split.words and any(w.strip("+-") == '""' for w in words):
        # `subscribe PyTorch ""` would quietly drop the channel's filter.
        raise CommandError(FILTER_EMPTY_QUOTES, "subscribe")
    _misplaced_options(split.words)
    loose = [a.text for a in split.words]
    close = close_show(loose, shows) if not split.shows and loose else None
    if close is not None:
        # A misspelt show must not quietly become a keyword filter (replacing what the
        # channel had).
        typed, near = close
        raise CommandError(SHOW_TYPO.format(name=_quote(typed), show=near), "subscribe")
    if split.shows:
        named = split.shows
    elif len(shows) == 1:
        # With one show the show may be omitted, so every word is a keyword filter.
        named = (shows[0],)
    elif loose:
        raise CommandError(
            UNKNOWN_SHOW.format(name=_quote(loose[0]), shows=show_list(shows)), "subscribe"
        )
    else:
        raise CommandError(NAME_THE_SHOW.format(shows=show_list(shows)), "subscribe")
    if any(len(a.text) > MAX_KEYWORD_LEN for a in split.words):
        raise CommandError(KEYWORD_TOO_LONG.format(limit=MAX_KEYWORD_LEN), "subscribe")
    keywords = _keyword_terms(split.words)
    if len(keywords) > MAX_KEYWORDS:
        too_many = FILTER_TOO_MANY.format(limit=MAX_KEYWORDS, count=len(keywords))
        raise CommandError(too_many, "subscribe")
    return Subscribe(
        named[0],
        keywords,
        also=named[1:],
        recap=split.recap,
        daily=split.daily,
        pr_updates=split.pr_updates,
    )


def parse_shows(words: Sequence[str], shows: Sequence[str], subcommand: str) -> tuple[str, ...]:
    """The shows ``words`` name, found as ``subscribe`` finds them (commas and spaces split,
    the longest name wins, a quoted run is one whole name), in order, no repeats. Any other
    word is refused, naming it (a near miss of a show's name: "did you mean"), so a command
    over several shows changes all of them or nothing."""
    args = _split_commas(unquote_words(list(words)))
    found: list[str] = []
    i = 0
    while i < len(args):
        hit = _show_at(args, i, shows)
        if hit is None:
            end = next((j for j in range(i + 1, len(args)) if _show_at(args, j, shows)), len(args))
            stray = [a.text for a in args[i:end]]
            close = close_show(stray, shows)
            if close is not None:
                typo = SHOW_TYPO.format(name=_quote(close[0]), show=close[1])
                raise CommandError(typo, subcommand)
            name, known = _quote(" ".join(stray)), show_list(shows)
            raise CommandError(UNKNOWN_SHOW.format(name=name, shows=known), subcommand)
        if hit[0] not in found:
            found.append(hit[0])
        i += hit[1]
    return tuple(found)


def parse_unsubscribe(words: list[str], shows: Sequence[str]) -> Unsubscribe:
    named = parse_shows(words, shows, "unsubscribe")
    return Unsubscribe(named[0], also=named[1:]) if named else Unsubscribe()
