"""Weekly recap aggregation: one ISO week of episodes → a ``WeeklyRecap``. Pure: no I/O.

Weeks are ISO weeks (Monday–Sunday) *in the configured timezone*: an episode published at
23:30 on Sunday in New York (03:30 on Monday in UTC) belongs to that Sunday's week there,
and one published at 23:30 UTC on Sunday belongs to the next week in Berlin (where it is
already Monday). The bounds are local midnights converted to UTC, so a week that contains
a DST change is 167 or 169 hours long, and weeks tile time with no gap or overlap.

Recurring subjects — method and why
-----------------------------------
Each episode is one document: its headline plus its summary. Candidates are word n-grams
(1–3 words) that never cross punctuation and contain no stopword: the English list of the
``stop-words`` package (function words and fillers such as "side" or "whereas", maintained
upstream rather than by us), the show names, and briefing boilerplate no general list has
("fixes", "update", "today", "notes", "dominates"). Words are
compared case-folded with a light plural fold ("kernels" = "kernel", "fixes" = "fix").
A candidate's score is its *document frequency*: in how many of the week's episodes it
appears. Only candidates in at least two episodes are kept — a subject is something that
*comes back* during the week, which is exactly what document frequency measures.

A phrase is preferred over its words: a shorter n-gram is dropped when a longer one that
contains it appears in just as many episodes (it only ever came as part of the phrase), so
the recap says "all-gather contract", not "all-gather", "contract" and the phrase. A word
that also recurs on its own (in more episodes than the phrase) stays.

Ranking: more episodes first, then more headlines (the show put it in a title, so it
mattered), then longer phrases, then the earliest appearance in the week.

Why not TF-IDF, TextRank or embeddings: a week is 1–50 short texts, too few for IDF or a
co-occurrence graph to mean anything, and a team reading the recap should be able to tell
why a subject is listed ("it came up in 3 episodes"). Document frequency over n-grams is
deterministic, needs no model or background corpus, costs microseconds, and is easy to
table-test. A week with a single episode has no recurring subjects, by definition.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from stop_words import get_stop_words

from digests.decide.deliveries import matches
from digests.errors import DigestError
from digests.filters import Filter
from digests.models import Episode, PrInfo, RecapEpisode, RecapPullRequest, WeeklyRecap
from digests.pulls import state_tier

__all__ = [
    "InvalidWeek",
    "aggregate",
    "parse_week",
    "previous_week",
    "subjects",
    "week_bounds",
    "week_of",
]

MAX_SUBJECTS = 8


class InvalidWeek(DigestError):
    """A week that is not an ISO week (``2026-W54``, ``W41`` without a year, …)."""


# -- weeks ------------------------------------------------------------------------------------


def _monday(year: int, week: int) -> date:
    try:
        return date.fromisocalendar(year, week, 1)
    except ValueError as exc:
        raise InvalidWeek(f"{year}-W{week:02d} is not an ISO week") from exc


def _local_midnight_utc(day: date, tz: ZoneInfo) -> datetime:
    # fold=0 on a midnight that does not exist (DST at 00:00) maps to the first real instant
    # of that day, and the previous week's end is computed the same way: no gap, no overlap.
    return datetime.combine(day, time(0), tzinfo=tz).astimezone(UTC)


def week_bounds(year: int, week: int, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """``[start, end)`` in UTC of ISO week ``year``-W``week`` in ``tz``."""
    monday = _monday(year, week)
    return _local_midnight_utc(monday, tz), _local_midnight_utc(monday + timedelta(days=7), tz)


def week_of(when: date | datetime, tz: ZoneInfo) -> tuple[int, int]:
    """ISO ``(year, week)`` of a day, or of an instant as seen in ``tz`` (naive = UTC)."""
    if isinstance(when, datetime):
        aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        day = aware.astimezone(tz).date()
    else:
        day = when
    iso = day.isocalendar()
    return iso.year, iso.week


def previous_week(when: date | datetime, tz: ZoneInfo) -> tuple[int, int]:
    """The ISO week before the one ``when`` falls in: what a Monday recap covers."""
    year, week = week_of(when, tz)
    return week_of(_monday(year, week) - timedelta(days=7), tz)


_WEEK_RE = re.compile(r"^\s*(\d{4})-?W(\d{1,2})\s*$", re.IGNORECASE)


def parse_week(text: str) -> tuple[int, int]:
    """``"2026-W41"`` (or ``2026W41``, ``2026-w41``) → ``(2026, 41)``; InvalidWeek otherwise."""
    match = _WEEK_RE.match(text)
    if not match:
        raise InvalidWeek(f"{text.strip()!r} is not a week; write it like 2026-W41")
    year, week = int(match.group(1)), int(match.group(2))
    _monday(year, week)
    return year, week


# -- subjects ---------------------------------------------------------------------------------

# Briefing boilerplate and transcript filler no general stop list has: words every episode
# of such a show uses whatever it covers.
_BOILERPLATE = """
    via per vs versus across among get gets got make makes made one two three first second
    third finally next new way ways still yet back plus lot lots much many well
    today day days week weeks daily morning episode episodes briefing show podcast update
    updates fix fixes fixed change changes changed work works improvement improvements
    support supports round rounds push pushes land lands landed bring brings brought
    pr prs pull request requests commit commits repository repo weekly recap
    note notes side sides dominate dominates dominated cover covers covered
    talk talks discuss discusses mention mentions mentioned
"""


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """English stop words (the ``stop-words`` package's list) plus briefing boilerplate.

    A maintained list of function words and fillers, so "side" or "whereas" never turns
    into a subject however often a week says it.
    """
    words = {w.casefold() for w in get_stop_words("en")} | set(_BOILERPLATE.split())
    return frozenset(words | {_fold(w) for w in words})

# A token: letters/digits with inner joiners, so "all-gather", "torch.compile", "C++" and
# "fp8" survive; a trailing sentence period is not part of the word.
_TOKEN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9'_.+#-]*[A-Za-z0-9+#])?|[^\sA-Za-z0-9]")
_BREAK = frozenset('.,;:!?()[]{}"“”‘’—–/|&')


@lru_cache(maxsize=1 << 14)
def _fold(word: str) -> str:
    """Case-fold and fold plurals, so headline and summary spellings count as one (cached:
    a week's documents repeat the same few hundred words)."""
    w = word.casefold().removesuffix("'s").removesuffix("’s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("s", "x", "ch", "sh")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _runs(
    text: str, stop: frozenset[str], folds: dict[str, str | None]
) -> list[tuple[list[str], list[str]]]:
    """Runs of content words, each with its words folded: broken at punctuation and at
    stopwords. ``folds``: each token seen → its folded form, or None for a break (a week's
    documents repeat the same words, so each is judged once per call of ``subjects``)."""
    runs: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    folded_words: list[str] = []
    for token in _TOKEN_RE.findall(text):
        folded = folds.get(token, "")  # "" never folds from a word: not judged yet
        if folded == "":
            folded = folds[token] = _judged(token, stop)
        if folded is None:
            if words:
                runs.append((words, folded_words))
                words, folded_words = [], []
            continue
        words.append(token)
        folded_words.append(folded)
    if words:
        runs.append((words, folded_words))
    return runs


def _judged(token: str, stop: frozenset[str]) -> str | None:
    """A token folded, or None when it breaks a run (punctuation, a stopword, a number)."""
    if token in _BREAK or not token[0].isalnum():
        return None
    folded = _fold(token)
    if folded in stop or token.casefold() in stop or folded.isdigit() or len(folded) < 2:
        return None
    return folded


@dataclass
class _Candidate:
    key: tuple[str, ...]
    docs: set[int] = field(default_factory=set)
    headline_docs: set[int] = field(default_factory=set)
    first: tuple[int, int] = (1 << 30, 0)
    forms: Counter[str] = field(default_factory=Counter)


def _covered(recurring: Sequence[_Candidate]) -> set[tuple[str, ...]]:
    """Keys only ever seen inside a longer recurring phrase (as many episodes as it).

    Each phrase names its own sub-phrases, so this is linear in the candidates rather than
    comparing every pair.
    """
    docs = {c.key: len(c.docs) for c in recurring}
    covered: set[tuple[str, ...]] = set()
    for c in recurring:
        n = len(c.key)
        for size in range(1, n):
            for i in range(n - size + 1):
                part = c.key[i : i + size]
                if docs.get(part) == docs[c.key]:
                    covered.add(part)
    return covered


def subjects(
    documents: Sequence[tuple[str, str]],
    *,
    extra_stopwords: Iterable[str] = (),
    limit: int = MAX_SUBJECTS,
    min_docs: int = 2,
    max_words: int = 3,
) -> tuple[str, ...]:
    """Recurring subjects of ``(headline, summary)`` documents (see the module docstring)."""
    stop = stopwords() | {_fold(w) for s in extra_stopwords for w in s.split()}
    # Each document's runs of content words, read once: (doc, part, position, run, folded).
    runs: list[tuple[int, int, int, list[str], list[str]]] = []
    folds: dict[str, str | None] = {}
    for doc, (headline, summary) in enumerate(documents):
        position = 0
        for part, text in enumerate((headline, summary)):
            for run, folded in _runs(text, stop, folds):
                runs.append((doc, part, position, run, folded))
                position += len(run)
    # Every n-gram of every run, keyed once: (doc, part, position, key, run, i, n).
    grams: list[tuple[int, int, int, tuple[str, ...], list[str], int, int]] = []
    for doc, part, position, run, folded in runs:
        for n in range(1, max_words + 1):
            for i in range(len(run) - n + 1):
                grams.append((doc, part, position + i, tuple(folded[i : i + n]), run, i, n))
    # How many documents say each phrase (documents come in order, so a phrase's last
    # document tells a new one): most phrases are said once and need nothing more.
    said: dict[tuple[str, ...], int] = {}
    last: dict[tuple[str, ...], int] = {}
    for doc, _, _, key, _, _, _ in grams:
        if last.get(key) != doc:
            last[key] = doc
            said[key] = said.get(key, 0) + 1
    candidates: dict[tuple[str, ...], _Candidate] = {}
    for doc, part, at, key, run, i, n in grams:
        if said[key] < min_docs:
            continue
        cand = candidates.get(key)
        if cand is None:
            # grams run in document and position order: the first one seen is the first.
            cand = candidates[key] = _Candidate(key, first=(doc, at))
        cand.docs.add(doc)
        if part == 0:
            cand.headline_docs.add(doc)
        # Summary spellings are sentence case: better than Title Case.
        cand.forms[" ".join(run[i : i + n])] += 1 if part == 0 else 2
    recurring = list(candidates.values())
    covered = _covered(recurring)
    kept = [c for c in recurring if c.key not in covered]
    kept.sort(key=lambda c: (-len(c.docs), -len(c.headline_docs), -len(c.key), c.first))
    return tuple(_display(c) for c in kept[:limit])


def _display(cand: _Candidate) -> str:
    best = max(cand.forms.items(), key=lambda kv: (kv[1], kv[0] != kv[0].title()))[0]
    # Lower-case ordinary words; keep acronyms and inner capitals (MoE, CUDA, FSDP).
    return " ".join(w if any(ch.isupper() for ch in w[1:]) else w.lower() for w in best.split())


# -- aggregation ------------------------------------------------------------------------------


def aggregate(
    episodes: Sequence[Episode],
    *,
    year: int,
    week: int,
    tz: ZoneInfo,
    shows: Sequence[str],
    keywords: Sequence[str] = (),
    max_subjects: int = MAX_SUBJECTS,
) -> WeeklyRecap:
    """The recap of ISO week ``year``-W``week`` in ``tz`` for ``shows`` (empty = every show).

    ``episodes`` may hold anything (other weeks, other shows, repeats): this picks the
    episodes published in the week, of those shows, that match ``keywords``; lists them
    oldest first; totals their listening time; gathers their PRs (one entry per PR URL,
    those named in more episodes first, then in order of first mention); and finds the
    recurring subjects.
    """
    start, end = week_bounds(year, week, tz)
    chosen = _week_episodes(episodes, start, end, shows, keywords)
    ordered = _gather_prs(chosen)
    recap_episodes = tuple(
        RecapEpisode(
            show=ep.show,
            guid=ep.guid,
            headline=ep.headline or ep.title,
            url=ep.url,
            published_at=ep.published_at,
            duration_seconds=ep.duration_seconds,
            pr_count=len({pr.url for pr in ep.pull_requests}),
        )
        for ep in chosen
    )
    show_names = tuple(shows) or tuple(dict.fromkeys(ep.show for ep in chosen))
    return WeeklyRecap(
        year=year,
        week=week,
        shows=show_names,
        timezone=tz.key,
        start=start,
        end=end,
        episodes=recap_episodes,
        total_seconds=sum(ep.duration_seconds or 0 for ep in chosen),
        untimed_episodes=sum(1 for ep in chosen if ep.duration_seconds is None),
        pull_requests=tuple(
            RecapPullRequest(
                number=a.number,
                url=a.url,
                episodes=tuple(a.headlines),
                guids=tuple(a.guids),
                context=a.context,
                **_from_github(a.info, start, end),
            )
            for a in ordered
        ),
        subjects=subjects(
            [(ep.headline or ep.title, ep.summary) for ep in chosen],
            extra_stopwords=[*show_names, *(ep.show for ep in chosen)],
            limit=max_subjects,
        ),
        keywords=tuple(k for k in keywords if k.strip()),
    )


@dataclass
class _PrAcc:
    number: int
    url: str
    first: tuple[int, int]
    headlines: list[str] = field(default_factory=list)
    guids: list[str] = field(default_factory=list)
    context: str = ""
    info: PrInfo | None = None  # from GitHub, when an episode carries it

    def key(self) -> tuple[int, int, int, tuple[int, int]]:
        """Ranked as the digest ranks (merged and open above closed, then labels), then by
        how many episodes name it and its first mention."""
        info = self.info
        tier = state_tier(info.state) if info is not None else 0
        weight = info.weight if info is not None else 0
        return (tier, -weight, -len(self.guids), self.first)


def _from_github(info: PrInfo | None, start: datetime, end: datetime) -> dict[str, Any]:
    if info is None or not info.title:
        return {}
    merged = info.merged_at is not None and start <= info.merged_at < end
    return {"title": info.title, "state": info.state, "area": info.area, "merged_this_week": merged}


def _week_episodes(
    episodes: Sequence[Episode],
    start: datetime,
    end: datetime,
    shows: Sequence[str],
    keywords: Sequence[str],
) -> list[Episode]:
    """The week's episodes of ``shows`` that match ``keywords``, oldest first, no repeats."""
    wanted = {s.casefold() for s in shows}
    chosen_filter = Filter.from_terms(keywords, strict=False)  # read once, not per episode
    seen: set[tuple[str, str]] = set()
    chosen: list[Episode] = []
    for ep in sorted(episodes, key=lambda e: (e.published_at, e.show, e.guid)):
        ident = (ep.show, ep.guid)
        if ident in seen or not (start <= ep.published_at < end):
            continue
        if wanted and ep.show.casefold() not in wanted:
            continue
        # The same test delivery applies, so the recap lists exactly what the channel got.
        if not matches(ep, chosen_filter):
            continue
        seen.add(ident)
        chosen.append(ep)
    return chosen


def _gather_prs(chosen: Sequence[Episode]) -> list[_PrAcc]:
    """One entry per PR URL: those named in more episodes first, then by first mention."""
    prs: dict[str, _PrAcc] = {}
    for ep_index, ep in enumerate(chosen):
        headline = ep.headline or ep.title
        infos = {i.number: i for i in ep.pr_info}
        for pr_index, pr in enumerate(ep.pull_requests):
            acc = prs.get(pr.url)
            if acc is None:
                acc = prs[pr.url] = _PrAcc(pr.number, pr.url, (ep_index, pr_index))
            if ep.guid not in acc.guids:
                acc.headlines.append(headline)
                acc.guids.append(ep.guid)
            if not acc.context and pr.context:
                acc.context = pr.context
            if acc.info is None or not acc.info.title:
                acc.info = infos.get(pr.number) or acc.info
    return sorted(prs.values(), key=_PrAcc.key)
