"""Extraction: raw feed/page text → the fields of an ``Episode``. Pure functions only.

Patterns are compiled once and written so they cannot backtrack badly on hostile text:
every repetition is bounded or anchored on a literal.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from urllib.parse import unquote, urlsplit

import isodate

from digests.models import Episode, ParsedSource, PullRequestRef, RawEntry
from digests.parse.text import MAX_TEXT, paragraphs, squash, stable_guid
from digests.types import MENTIONS, UNKNOWN_DATE, PrMode
from digests.update import feed_order_dates

__all__ = [
    "build_episodes",
    "duration_seconds",
    "headline",
    "lead",
    "nearby",
    "published_at",
    "pull_requests",
    "summary",
    "transcript",
]

MAX_DURATION = 7 * 24 * 3600
MAX_CONTEXT = 400
MAX_PULL_REQUESTS = 200

# ---------------------------------------------------------------- headline / summary


def headline(title: str, show: str, *aliases: str | None) -> str:
    """The title without a leading ``Show: `` (or ``Show - ``), for the show or an alias."""
    return _headline(squash(title), _show_names(show, *aliases))


def _show_names(*names: str | None) -> list[tuple[str, str]]:
    """(name, casefolded name) of each usable show name, in order; once per feed."""
    out = []
    for name in names:
        if name:
            name = squash(name)
            if name:
                out.append((name, name.casefold()))
    return out


def _headline(text: str, names: list[tuple[str, str]]) -> str:
    folded = text.casefold()
    for name, folded_name in names:
        if not folded.startswith(folded_name):
            continue
        m = _SHOW_SEP.match(text, len(name))
        if m and m.end() < len(text):
            return text[m.end() :]
    return text


def _legible(text: str) -> str:
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
    return _cleaned(description, squash)[0]


def transcript(text: str) -> str:
    """The transcript, boilerplate removed; paragraphs kept (blank-line separated)."""
    return _cleaned(text, paragraphs)[0]


def _cleaned(
    text: str, normalise: Callable[[str], str], normalised: bool = False
) -> tuple[str, str]:
    """``text`` without boilerplate, normalised; and its lower-case, which the PR scan
    needs too (text from our own parsers is already normalised, so it is lowered once).

    ``normalised``: ``text`` is ``normalise``'s output already, unless a cap cut it (what
    is cut is exactly ``MAX_TEXT`` long), so normalising it again would give it back.
    """
    lower = text.lower()
    if (
        "crawler page" in lower
        or "rss feed for the full" in lower
        or "short developer briefing" in lower
        or "repository work in plain" in lower
    ):
        clean = normalise(_BOILERPLATE.sub("", text))
        return clean, clean.lower()
    if normalised and len(text) < MAX_TEXT:
        return text, lower
    clean = normalise(text)
    return clean, (lower if clean == text else clean.lower())


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
    for m in _SENTENCE_END.finditer(para, 0, room + 1):
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


# ---------------------------------------------------------------- duration / date

_SIMPLE_ISO = re.compile(r"PT(?:(\d{1,3})H)?(?:(\d{1,4})M)?(?:(\d{1,6}(?:\.\d{1,6})?)S)?")
_CLOCK = re.compile(r"(?:(\d{1,3}):)?(\d{1,4}):(\d{1,2}(?:\.\d{1,6})?)")
_NUMBER = re.compile(r"\d{1,9}(?:\.\d{1,6})?")
_WORDS = re.compile(
    r"(?=\d)(?:(\d{1,3})\s*h(?:ours?|rs?)?\s*)?(?:(\d{1,4})\s*m(?:in(?:ute)?s?)?\s*)?"
    r"(?:(\d{1,6})\s*s(?:ec(?:ond)?s?)?)?",
    re.I,
)


def duration_seconds(text: str | None) -> int | None:
    """Seconds from ``PT4M11S``, ``4:11``, ``00:04:11``, ``251``, ``251.0``, ``4m 11s``."""
    if not text:
        return None
    value = text.strip()
    if not value or len(value) > 64:
        return None
    seconds: float | None = None
    if (m := _SIMPLE_ISO.fullmatch(value)) is not None and any(m.groups()):
        # The common "PT4M11S" without isodate's general machinery; same result.
        h, mi, sec = m.groups()
        seconds = int(h or 0) * 3600 + int(mi or 0) * 60 + float(sec or 0)
    elif value[0] in "Pp":
        if not any(c.isdigit() for c in value):
            return None  # isodate reads a bare "PT" as zero
        try:
            parsed = isodate.parse_duration(value.upper())
        except (isodate.ISO8601Error, ValueError, OverflowError):
            return None
        if not isinstance(parsed, timedelta):
            # Years and months have no fixed length: not a duration for audio.
            return None
        seconds = parsed.total_seconds()
    elif (m := _CLOCK.fullmatch(value)) is not None:
        hours, minutes, secs = m.group(1), int(m.group(2)), float(m.group(3))
        if secs >= 60 or (hours is not None and minutes >= 60):
            return None
        seconds = (int(hours) * 3600 if hours else 0) + minutes * 60 + secs
    elif _NUMBER.fullmatch(value):
        seconds = float(value)
    elif (m := _WORDS.fullmatch(value)) is not None and any(m.groups()):
        h, mi, s = (int(g) if g else 0 for g in m.groups())
        seconds = h * 3600 + mi * 60 + s
    if seconds is None or math.isnan(seconds) or seconds < 0 or seconds > MAX_DURATION:
        return None
    return int(seconds + 0.5)


def published_at(text: str | None) -> datetime | None:
    """A UTC datetime from RFC 822 (``Mon, 05 Oct 2026 13:00:40 GMT``) or ISO 8601."""
    if not text:
        return None
    value = text.strip()
    if not value or len(value) > 100:
        return None
    fast = _rfc822_usual(value)
    if fast is not None:
        return fast
    parsed = _iso(value) if value[:4].isdigit() else None
    if parsed is None:
        parsed = _rfc822(value)
    if parsed is None and not value[:4].isdigit():
        parsed = _iso(value)
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        # Out of range once in UTC, or an offset of a day or more (isodate reads
        # "+24:00", which datetime cannot represent): no date, as if none were given.
        return None


def _iso(value: str) -> datetime | None:
    if value.endswith(("z", "Z")):
        value = value[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    try:
        return isodate.parse_datetime(value)
    except (isodate.ISO8601Error, ValueError, OverflowError):
        pass
    try:
        day = isodate.parse_date(value)
    except (isodate.ISO8601Error, ValueError, OverflowError):
        return None
    if isinstance(day, date):
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    return None


_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
# "Mon, 05 Oct 2026 13:00:40 GMT" / "+0200": what nearly every feed writes.
_RFC822_FAST = re.compile(
    r"(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{2}):(\d{2})(?::(\d{2}))?"
    r"\s*(?:(GMT|UTC|UT|Z)|([+-])(\d{2})(\d{2}))?"
)


# The same, exactly as nearly every feed writes it (ASCII, two-digit day, seconds, GMT,
# UTC or a numeric zone): read by one fullmatch, which costs less than testing each
# position in Python.
_RFC822_USUAL = re.compile(
    r"[A-Za-z]{3}, ([0-9]{2}) ([A-Za-z]{3}) ([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) "
    r"(?:GMT|UTC|[+-]0000|([+-])([0-9]{2})([0-9]{2}))"
)


def _rfc822_usual(v: str) -> datetime | None:
    """``Mon, 05 Oct 2026 13:00:40 GMT`` / ``+0200``: how nearly every feed dates items.
    Anything else is left to ``_rfc822`` and ``_iso``."""
    m = _RFC822_USUAL.fullmatch(v)
    if m is None:
        return None
    day, mon, year, hh, mm, ss, sign, oh, om = m.groups()
    month = _MONTHS.get(mon.lower())
    if month is None:
        return None
    try:
        parsed = datetime(int(year), month, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
        if sign:
            offset = int(oh) * 60 + int(om)
            return parsed - timedelta(minutes=offset if sign == "+" else -offset)
        return parsed
    except (ValueError, OverflowError):
        return None


def _rfc822(value: str) -> datetime | None:
    m = _RFC822_FAST.fullmatch(value)
    if m is not None:
        day, mon, year, hh, mm, ss, _, sign, oh, om = m.groups()
        month = _MONTHS.get(mon.lower())
        if month is not None:
            try:
                parsed = datetime(int(year), month, int(day), int(hh), int(mm), int(ss or 0))
            except ValueError:
                return None
            if sign:
                offset = timedelta(hours=int(oh), minutes=int(om))
                try:
                    parsed -= offset if sign == "+" else -offset
                except OverflowError:
                    return None  # year 1 or 9999 moved out of range
            return parsed.replace(tzinfo=UTC)
    try:
        return email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# ---------------------------------------------------------------- pull requests

# Scanned on the lower-cased text so the pattern starts with the literal "p" (the regex
# engine then skips ahead with a fast search instead of trying every position); the
# "not after a word character" test comes after that "p" so it keeps the fast search.
# "pr 1", "pr #1", "pr#1", "prs: 1", "pull request 1", "pull requests #1", "pr number 1",
# "pr-1", and "pr123" glued (three digits at least: "PR2" is as often a product name). In
# those two a date ("pr-2026-10-05") is no PR; "apr-2026" and "spr-5" fail the look-behind.
_PR_HEAD = re.compile(
    r"p(?<!\wp)(?:(rs)|r|(ull[ \t-]+requests)|ull[ \t-]+request)"
    r"(?:\b(?:-(?!\d{1,9}[-/]\d)|[^\S\n]*+:?[^\S\n]*+(?:(?:number|no\.|num\.)[^\S\n]*+)?)#?"
    r"|(?<=r)(?=\d{3,9}\b(?![-/]\d)))"
    r"(\d{1,9})\b(?!\.\d)"
)
# After any head, "#1/#2/#3": a slash list, "#" on every number (without it, "10/11" is as
# likely a date).
_SLASH_NEXT = r"[^\S\n]*+/[^\S\n]*+#\d{1,9}\b(?!\.\d)"
_PR_SLASHES = re.compile(rf"(?:{_SLASH_NEXT})*+")
# Numbers that are counts, not PRs: "PRs 3, 4 and 17 commits" stops before 17.
_COUNT_WORD = (
    r"(?i:commits?|times|files?|tests?|lines?|days?|hours?|minutes?|seconds?|weeks?|months?|"
    r"years?|percent|%|people|contributors?|authors?|issues?|more|other)\b"
)
# The rest of a list after a plural head, as one match on the original text: ", 2",
# " and 3", ", and #4", or "1 for merging, 2 for rebasing" (a few lower-case words before
# each separator; a capital, a full stop or a line break ends the list). Words hold no
# digits, so the numbers in the match are exactly the list's. Possessive: a list that
# stops is never re-read.
_PR_LIST = re.compile(
    r"(?:" + _SLASH_NEXT + r"|(?:[^\S\n]++[a-z][a-z'-]{0,20}+){0,4}?"
    r"(?:[^\S\n]*+,[^\S\n]*+(?:(?:and|or|&)[^\S\n]++)?|[^\S\n]++(?:and|or|&)[^\S\n]++)"
    r"#?\d{1,9}\b(?!\.\d)(?![^\S\n]*+" + _COUNT_WORD + r"))*+"
)
_LIST_NUMBER = re.compile(r"\d{1,9}")

# The same heads with their lists, as two patterns each led by a longer literal ("pr",
# "pull"): the regex engine then stops at a few places per text instead of at every "p"
# (a dozen words in a sentence hold one). Each is scanned on the lower-cased text, the
# list included (group 1: a plural head, whose list is ``_PR_LIST``'s, else a slash
# list); a list holding a character lower-casing changed is read again on the text as
# written. No head can start inside a list (its words are followed by a separator, a
# head's by its number), so the two scans find exactly the single scan's mentions.
_HEAD_REST = (
    r"(?:\b(?:-(?!\d{1,9}[-/]\d)|[^\S\n]*+:?[^\S\n]*+(?:(?:number|no\.|num\.)[^\S\n]*+)?)#?"
    r"|(?<=r)(?=\d{3,9}\b(?![-/]\d)))"
    r"(\d{1,9})\b(?!\.\d)"
    r"(?(1)" + _PR_LIST.pattern + "|" + _PR_SLASHES.pattern + ")"
)
_PR_MENTIONS = (
    re.compile(r"pr(?<!\wpr)(s)?" + _HEAD_REST),
    re.compile(r"pull(?<!\wpull)[ \t-]+request(s)?" + _HEAD_REST),
)
_PR_LINK = re.compile(r"github\.com/([a-z0-9_.-]{1,100})/([a-z0-9_.-]{1,100})/pull/(\d{1,9})\b")
# A sentence ends at . ! ? … (plus closing quotes/brackets) before whitespace and a
# capital, digit or opening quote, or at a blank line. "e.g. foo", "PR No. 5", "2.5" stay.
_SENTENCE_END = re.compile(
    r"[.!?…\n](?:"
    r"(?<=\n)[^\S\n]*\n"
    r"|(?<!\b(?:e\.g|i\.e|etc)\.)(?<!\b(?:vs|[Nn]o|Dr|Mr|Ms|cf)\.)"
    r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[A-Z0-9])"
    r")"
)
# The same, for a paragraph whose only sentence mark is the full stop: led by a literal,
# so the regex engine skips ahead fast instead of testing a character set at every
# position (three times faster on prose).
_FULL_STOP_END = re.compile(
    r"\.(?<!\b(?:e\.g|i\.e|etc)\.)(?<!\b(?:vs|[Nn]o|Dr|Mr|Ms|cf)\.)"
    r"[\"')\]]*\s+(?=[\"'(\[A-Z0-9])"
)


# A PullRequestRef made through its slots: a frozen dataclass's __init__ sets each field
# with object.__setattr__, and that is most of the cost of the tens of thousands of refs a
# large feed makes. The same record (equal, same repr); only the extractor makes them so.
_REF_FIELDS = vars(PullRequestRef)
_SET_NUMBER = _REF_FIELDS["number"].__set__
_SET_URL = _REF_FIELDS["url"].__set__
_SET_CONTEXT = _REF_FIELDS["context"].__set__
_new = object.__new__


def pull_requests(text: str, repo: str, prs: PrMode = MENTIONS) -> tuple[PullRequestRef, ...]:
    """Every PR the text names, in order of first mention, no repeats, with its sentence."""
    return tuple(_pull_requests(text, repo, prs=prs))


def _pull_requests(
    text: str,
    repo: str,
    lower: str | None = None,
    normalised: bool = False,
    prs: PrMode = MENTIONS,
) -> list[PullRequestRef]:
    """Each PR ``text`` names.

    ``lower`` is ``text.lower()`` when the caller has it. ``normalised`` says ``text`` is
    the output of ``summary`` or ``transcript`` (single spaces, paragraphs split by exactly
    one blank line, nothing around), so sentences need only be found in the paragraphs
    from the first mention's to the last one's. ``prs``: which mentions count (``PrMode``).
    """
    if not text or prs == "off":
        return []
    if lower is None:
        lower = text.lower()
    if len(lower) != len(text):
        # A few characters lower-case to two; keep offsets valid by scanning the original.
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    found = _mentions(text, lower, MAX_PULL_REQUESTS, heads=prs == MENTIONS)
    if not found:
        return []
    if len(found) > 1:
        found.sort()  # by position: positions are distinct, so nothing else is compared
    plain = _plain(text) if normalised else False
    scan = None if normalised else _SentenceList(text)
    base = f"https://github.com/{repo}/pull/"
    seen: set[str] = set()
    refs: list[PullRequestRef] = []
    append = refs.append
    start = end = -1
    whole = ""
    new = _new
    for pos, number, url in found:
        if not url:
            url = base + str(number)
        if url in seen:
            continue
        seen.add(url)
        if pos >= end:
            # Mentions come in text order: a sentence is looked up once, when the first
            # mention past the last one's sentence arrives.
            if scan is None:
                start, end = _near_sentence(text, pos, plain)
                # Inside a normalised paragraph every space is single already.
                whole = text[start:end].rstrip()
            else:
                start, end = scan(text, pos)
                whole = squash(text[start:end].rstrip())
        # Made through its slots, inline: see _SET_NUMBER.
        ref: PullRequestRef = new(PullRequestRef)
        _SET_NUMBER(ref, number)
        _SET_URL(ref, url)
        _SET_CONTEXT(ref, whole if len(whole) <= MAX_CONTEXT else _clip(whole, pos - start))
        append(ref)
        if len(refs) >= MAX_PULL_REQUESTS:
            break
    return refs


def mention_positions(text: str, repo: str) -> list[tuple[int, str]]:
    """(position, PR URL) of every PR mention in ``text``, in text order, repeats kept."""
    lower = text.lower()
    if len(lower) != len(text):
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    base = f"https://github.com/{repo}/pull/"
    found = sorted(_mentions(text, lower, None))
    return [(pos, url or base + str(number)) for pos, number, url in found]


def _mentions(
    text: str, lower: str, cap: int | None, heads: bool = True
) -> list[tuple[int, int, str]]:
    """Each PR mention: (position, number, url or "" for a bare number), unsorted; a list
    stops growing at ``cap`` (None: never). ``heads=False``: links only, no "PR 12"."""
    found: list[tuple[int, int, str]] = []  # (position, number, url or "")
    append = found.append
    if heads and "pr" in lower:
        _head_mentions(_PR_MENTIONS[0], text, lower, append)
    if heads and "request" in lower:  # a cheaper test than "pull": links hold "/pull/"
        _head_mentions(_PR_MENTIONS[1], text, lower, append)
    if cap is not None and len(found) > cap:
        # Which list numbers the cap drops depends on the order heads are met in: the
        # single scan in text order decides, as it always did.
        found = _capped_mentions(text, lower, cap)
        append = found.append
    if "github.com/" in lower:
        for m in _PR_LINK.finditer(lower):
            at = m.start()
            if at and (lower[at - 1].isalnum() or lower[at - 1] == "-"):
                continue  # "notgithub.com/…" is another host
            owner, name = text[m.start(1) : m.end(1)], text[m.start(2) : m.end(2)]
            append((at, int(m.group(3)), f"https://github.com/{owner}/{name}/pull/{m.group(3)}"))
    return found


def _head_mentions(
    pattern: re.Pattern[str],
    text: str,
    lower: str,
    append: Callable[[tuple[int, int, str]], None],
) -> None:
    """Append each mention by a head of ``pattern`` and the list after it."""
    for m in pattern.finditer(lower):
        head_end = m.end(2)
        append((m.start(2), int(m.group(2)), ""))
        end = m.end()
        if end > head_end:
            if text[head_end:end] != lower[head_end:end]:
                # A capital ends a list: read it again on the text as written.
                rest = (_PR_LIST if m.group(1) else _PR_SLASHES).match(text, head_end)
                end = rest.end() if rest is not None else head_end
            for more in _LIST_NUMBER.finditer(lower, head_end, end):
                append((more.start(), int(more.group()), ""))


def _capped_mentions(text: str, lower: str, cap: int) -> list[tuple[int, int, str]]:
    """Head and list mentions as one scan in text order finds them, a list stopping at
    ``cap`` mentions found so far."""
    found: list[tuple[int, int, str]] = []
    append = found.append
    slashes = "/" in text
    for m in _PR_HEAD.finditer(lower):
        append((m.start(3), int(m.group(3)), ""))
        # A plural head starts a list; any head may start a "#1/#2" one.
        plural = m.group(1) or m.group(2)
        if plural or slashes:
            rest = (_PR_LIST if plural else _PR_SLASHES).match(text, m.end())
            for more in _LIST_NUMBER.finditer(text, m.end(), rest.end() if rest else 0):
                if len(found) >= cap:
                    break
                append((more.start(), int(more.group()), ""))
    return found


def named_count(text: str, repo: str, prs: PrMode = MENTIONS) -> int:
    """How many distinct PRs ``text`` names, past the cap on what an episode keeps (so a
    thread can say "the first 200 of 250")."""
    if not text or prs == "off":
        return 0
    lower = text.lower()
    if len(lower) != len(text):
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    base = f"https://github.com/{repo}/pull/"
    found = _mentions(text, lower, None, heads=prs == MENTIONS)
    return len({url or base + str(number) for _, number, url in found})


def _named_past_cap(
    found: Sequence[PullRequestRef], text: str, repo: str, prs: PrMode = MENTIONS
) -> int:
    """``named_count`` when it is more than ``found`` (only at the cap can it be); else 0."""
    if len(found) < MAX_PULL_REQUESTS:
        return 0
    count = named_count(text, repo, prs)
    return count if count > len(found) else 0


class _SentenceList:
    """Sentences of any text, found by one scan of it: ``(start, end)`` of the one holding
    a position, ``text[start:end]`` the sentence with what follows it up to the next."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *[m.end() for m in _SENTENCE_END.finditer(text)], len(text) + 1]
        self.i = 0

    def __call__(self, text: str, pos: int) -> tuple[int, int]:
        starts = self.starts
        i = self.i
        while starts[i + 1] <= pos:
            i += 1
        self.i = i
        return starts[i], starts[i + 1]


class _NormalisedSentences:
    """Sentences of normalised ``text``, as ``_SentenceList`` finds them, looked up near
    each mention instead of scanning every sentence (see ``_near_sentence``)."""

    def __init__(self, text: str) -> None:
        self.plain = _plain(text)

    def __call__(self, text: str, pos: int) -> tuple[int, int]:
        return _near_sentence(text, pos, self.plain)


def _plain(text: str) -> bool:
    """Whether ``text`` has no "!", "?" or "…" at all (most texts): then no paragraph of
    it needs checking for them."""
    return "!" not in text and "?" not in text and (text.isascii() or "…" not in text)


def _near_sentence(text: str, pos: int, plain: bool) -> tuple[int, int]:
    """(start, end) of the sentence of normalised ``text`` holding ``pos`` (a mention: no
    space, no quote, no full stop); ``text[start:end].rstrip()`` is the sentence.
    ``plain``: ``_plain(text)``.

    In normalised text every paragraph start ends a ``_SENTENCE_END`` match and no match
    reaches across a paragraph. In a paragraph whose only sentence mark is the full stop,
    a sentence ends where a ``_FULL_STOP_END`` match ends, and what such a match covers
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
        m = _FULL_STOP_END.match(text, dot)
        if m is not None:
            start = m.end()
            break
    # A match ending the paragraph before ends at this one's start; a break after
    # the match found means the sentence starts the paragraph.
    brk = text.rfind("\n\n", start, pos)
    if brk >= 0:
        start = brk + 2
    # The first match after the mention (one search, led by the literal full stop).
    m = _FULL_STOP_END.search(text, pos)
    end = m.end() if m is not None else len(text)
    # The sentence stops at its paragraph's end (a match may reach into the next).
    brk = text.find("\n\n", pos, end)
    return start, (brk if brk >= 0 else end)


def _marked_sentence(text: str, pos: int, para: int, stop: int) -> tuple[int, int]:
    """The sentence holding ``pos`` in the paragraph ``text[para:stop]``, any mark."""
    start = para
    for m in _SENTENCE_END.finditer(text, para, stop):
        if m.end() > pos:
            return start, m.end()
        start = m.end()
    return start, stop


def _clip(sentence: str, at: int) -> str:
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


# ---------------------------------------------------------------- episodes


def _guid(entry: RawEntry) -> str:
    return entry.guid or stable_guid(entry.link, entry.title, entry.published)


def extract_entry(
    entry: RawEntry,
    guid: str,
    show: str,
    repo: str,
    names: list[tuple[str, str]],
    prs: PrMode = MENTIONS,
) -> Episode:
    """One raw entry's episode: the text work (sentences, PR mentions, headline, date)."""
    # A feed reader's text is normalised already: a paragraph of it is squashed too.
    done = entry.normalised
    description, description_lower = _cleaned(
        entry.description, squash, done and "\n" not in entry.description
    )
    text, lower = _cleaned(entry.transcript, paragraphs, done)
    if description:
        # One scan of both, a paragraph break between them: the summary's PRs first,
        # then the transcript's not named yet, each with its own sentence.
        text_lower = description_lower + "\n\n" + lower if text else description_lower
        both = description + "\n\n" + text if text else description
        found = _pull_requests(both, repo, text_lower, normalised=True, prs=prs)
    else:
        found = _pull_requests(text, repo, lower, normalised=True, prs=prs)
        # No description (an item with only content:encoded, an Atom entry with only
        # <content>): the transcript's opening says what the episode covers. Its PRs
        # are the transcript's, scanned above once.
        description = lead(text)
        both = description + "\n\n" + text if text else description
    title = squash(entry.title)
    when = published_at(entry.published)
    return _episode(
        {
            "guid": guid,
            "show": show,
            "title": title,
            "headline": _legible(_headline(title, names)) or untitled_headline(entry.link, when),
            "summary": description,
            "published_at": when or UNKNOWN_DATE,
            "duration_seconds": duration_seconds(entry.duration),
            "url": entry.link or None,
            "audio_url": entry.audio_url or None,
            "pull_requests": tuple(found),
            "nearby": nearby(entry.nearby) if entry.nearby else (),
            "transcript": text,
            "pr_info": (),
            "transcript_links": entry.transcripts,
            "chapters_url": entry.chapters_url,
            "pull_requests_named": _named_past_cap(found, both, repo, prs),
            "raw_hash": _reusable_hash(entry, when),
            "pr_times": (),
            "chapters": entry.chapters,
        }
    )


# An Episode made from values extraction built, as ``Episode.model_validate`` of them
# would make it (the same __dict__, in field order, and the same fields set), without the
# validation: one pydantic-core call per episode, a twentieth of a cold parse, checked
# only what this module's own code gives (strings it cut, ints, records, a UTC datetime),
# never a value read as it stands. Feed text is still capped and cleaned on its way here;
# tests/test_extract.py compares the two on every episode of the bench feeds.
_EPISODE_FIELDS = tuple(Episode.model_fields)
_GIVEN = frozenset(_EPISODE_FIELDS) - {"pr_info"}
_set_attr = object.__setattr__


def _episode(values: dict[str, object]) -> Episode:
    """``Episode.model_validate(values)`` for ``values`` extract_entry built (every field
    but ``pr_info`` given, ``pr_info`` as its default, keys in field order)."""
    episode: Episode = _new(Episode)
    _set_attr(episode, "__dict__", values)
    _set_attr(episode, "__pydantic_fields_set__", set(_GIVEN))
    _set_attr(episode, "__pydantic_extra__", None)
    _set_attr(episode, "__pydantic_private__", None)
    return episode


def _reusable_hash(entry: RawEntry, when: datetime | None) -> str | None:
    """The item's hash, when reading it again could only give this episode again.

    Not for an undated item (the store dates it from what else it holds) nor one linking
    a transcript (fetched on a later poll, a few per poll, and retried): each poll reads
    those afresh, as it always did.
    """
    if entry.raw_hash is None or when is None or entry.transcripts:
        return None
    return entry.raw_hash


def build_episodes(
    parsed: ParsedSource, show: str, repo: str, prs: PrMode = MENTIONS
) -> list[Episode]:
    """Episodes of a parsed source, newest first, one per guid (first occurrence wins).

    An item the parse skipped (``parsed.skipped``: its bytes hash as a stored episode's)
    makes no episode, but still counts as its guid's occurrence in its place.
    """
    episodes: list[Episode] = []
    seen: set[str] = set()
    names = _show_names(show, parsed.show_title)
    skipped = iter(parsed.skipped)
    pending = next(skipped, None)
    for position, entry in enumerate(parsed.entries):
        while pending is not None and pending[0] <= position:
            seen.add(pending[1])
            pending = next(skipped, None)
        guid = _guid(entry)
        if guid in seen:
            continue
        seen.add(guid)
        here = names if entry.show is None else _show_names(show, parsed.show_title, entry.show)
        episodes.append(extract_entry(entry, guid, show, repo, here, prs))
    # Newest first; an undated item keeps its place among its dated neighbours.
    placed = feed_order_dates(episodes)
    order = {id(e): placed.get(i, e.published_at) for i, e in enumerate(episodes)}
    episodes.sort(key=lambda e: order[id(e)], reverse=True)
    return episodes


def with_transcript(
    episode: Episode, full_text: str, repo: str, prs: PrMode = MENTIONS
) -> Episode:
    """``episode`` with a transcript fetched from its ``<podcast:transcript>`` link: that
    text becomes its transcript, and its PRs are found there first — the full sentence,
    where the feed's excerpt is cut with "…" at the PR — then in the summary and the feed's
    own text for any the transcript does not name. Nothing usable: ``episode`` as it is.
    """
    text, lower = _cleaned(paragraphs(full_text), paragraphs)
    if not text:
        return episode
    found = _pull_requests(text, repo, lower, normalised=True, prs=prs)
    named = {ref.number for ref in found}
    rest = "\n\n".join(part for part in (episode.summary, episode.transcript) if part)
    found += [ref for ref in _pull_requests(rest, repo, prs=prs) if ref.number not in named]
    summary_text = episode.summary or lead(text)
    count = _named_past_cap(found, text + "\n\n" + rest if rest else text, repo, prs)
    return episode.model_copy(
        update={
            "transcript": text,
            "pull_requests": tuple(found),
            "summary": summary_text,
            "pull_requests_named": count,
        }
    )
