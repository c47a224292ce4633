"""What peers read, we read: gPodder podcastparser's test feeds with the episodes it
expects, and feedparser's corpus entry by entry (both fetched by ``tests.feeds_corpus``).
``tests/test_feeds_peers.py`` asserts these comparisons; ``python -m tests.feeds_corpus``
prints their figures.

podcastparser: every expectation it states for title, duration, publication time, link and
the audio enclosure's URL, for every ``tests/data/*.rss``, holds — except the deliberate
differences in ``PODCASTPARSER_DIFFERENT``, each with its reason. Its tests read each feed
from ``file://tests/data/<name>``; we read it from ``https://tests/data/<name>`` (a
``file:`` base resolves nothing for us), so its ``file://`` URLs are compared as ``https://``.

feedparser: for every file from which feedparser reads at least one entry with a title, a
link or an enclosure, we read the same number of entries with the same titles (feedparser's
HTML titles compared as their text) and links, in order; at least 98% of those files not
in ``FEEDPARSER_DIFFERENT``. The figures are printed at the end of the run.
"""

from __future__ import annotations

import fnmatch
import html
import json
import re
from pathlib import Path
from typing import Any

import feedparser

from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.models import UNKNOWN_DATE, Episode
from digests.parse import parse_bytes
from tests.feeds_corpus import corpus_dir, corpus_files, podcastparser_files

PODCASTPARSER = podcastparser_files()
FEEDPARSER = corpus_files()

# (feed, field) → why we read it differently from podcastparser's expectation.
_BARE_ID = (
    "a guid not marked isPermaLink='true' and not a URL is no link: RSS says a guid is a "
    "permalink unless marked, but feeds write bare ids ('a', 'episode::x'), and a link "
    "made of one leads nowhere"
)
_UNTITLED = (
    "an item without a title keeps an empty title (its headline comes from its link or "
    "date); podcastparser titles it with its enclosure's file name"
)
PODCASTPARSER_DIFFERENT: dict[tuple[str, str], str] = {
    **{
        (name, "link"): _BARE_ID
        for name in (
            "chapters.rss",
            "duration.rss",
            "image_and_audio.rss",
            "itunes_duration.rss",
            "itunes_episode_image.rss",
            "itunes_no_xmlns.rss",
            "itunes_subtitle.rss",
            "itunes_xmlns.rss",
            "media_episode_thumbnail.rss",
            "media_episode_thumbnail_group.rss",
        )
    },
    ("no_guid.rss", "title"): _UNTITLED,
    ("no_title.rss", "title"): _UNTITLED,
}

# Files (glob patterns, relative to the corpus) → why our entries differ from feedparser's.
FEEDPARSER_DIFFERENT: dict[str, str] = {
    "wellformed/sanitize/entry_title_on*.xml": (
        "a title that is only an <img> has no text, and the entry no link, id or "
        "enclosure: no episode (feedparser keeps the sanitised markup as the title)"
    ),
    "wellformed/sanitize/entry_title_crazy.xml": "feedparser's HTML sanitising of titles",
    "wellformed/sanitize/entry_title_object.xml": "feedparser's HTML sanitising of titles",
    "illformed/chardet/shiftjis.xml": (
        "bytes Windows-1252 leaves undefined read as U+FFFD, not as C1 control characters"
    ),
    "http/*.xml": "<item> in an Atom <feed> is not an entry",
    "wellformed/atom10/entry_link_rel_enclosure.xml": (
        "an enclosure that is a web page (text/html) is no audio, and the entry has nothing else"
    ),
    "wellformed/rss/item_category_image.xml": (
        "the title and link inside an item's <category><image> are the image's"
    ),
    "wellformed/atom10/entry_id_with_attributes.xml": "an Atom id that is no URL is no link",
    "wellformed/base/http_entry_id_base_*.xml": "an Atom id that is no URL is no link",
    "wellformed/lang/http_content_language_entry_title_inherit_2.xml": (
        "an Atom id that is no URL is no link"
    ),
    "wellformed/node_precedence/atom10_id.xml": "an Atom id that is no URL is no link",
    "wellformed/cdf/*.xml": "CDF (Microsoft's 1997 channels) is no feed format podcasts use",
    "wellformed/base/cdf_*.xml": "CDF (Microsoft's 1997 channels) is no feed format",
}


def _https(url: str) -> str:
    return "https://" + url[len("file://") :] if url.startswith("file://") else url


def _audio(expected: dict[str, Any]) -> str | None:
    kinds = ("audio/", "video/", "application/octet-stream")
    urls = [e["url"] for e in expected["enclosures"] if e["mime_type"].startswith(kinds)]
    return _https(urls[0]) if urls else None


def match(expected: dict[str, Any], index: int, ours: list[Episode]) -> Episode | None:
    """Our episode for podcastparser's: same guid, else same title, else same audio, else
    the same place (podcastparser makes guids of links and enclosures as we do not)."""
    guid = _https(expected["guid"])
    for same in (
        lambda e: e.guid == guid,
        lambda e: bool(expected["title"]) and e.title == expected["title"],
        lambda e: e.audio_url == guid,
    ):
        found = next((e for e in ours if same(e)), None)
        if found is not None:
            return found
    return ours[index] if index < len(ours) else None


def our_fields(episode: Episode | None) -> dict[str, object]:
    if episode is None:
        return {}
    when = episode.published_at
    return {
        "title": episode.title,
        "duration": episode.duration_seconds or 0,
        "published": 0 if when == UNKNOWN_DATE else int(when.timestamp()),
        "link": episode.url or "",
        "enclosure": episode.audio_url,
    }


def expected_fields(expected: dict[str, Any]) -> dict[str, object]:
    return {
        "title": expected["title"],
        "duration": expected["total_time"],
        "published": expected["published"],
        "link": _https(expected["link"]),
        "enclosure": _audio(expected),
    }


def podcastparser_comparison(path: Path) -> tuple[int, list[str]]:
    """How many of ``path``'s expectations hold, and the ones that do not (deliberate
    differences left out of both)."""
    expected = json.loads(path.with_suffix(".json").read_text())
    try:
        parsed = parse_bytes(path.read_bytes(), "https://tests/data/" + path.name)
        ours = list(build_episodes(parsed, "Show", "pytorch/pytorch"))
    except FeedParseError:
        ours = []
    held, broken = 0, []
    for index, episode in enumerate(expected.get("episodes", [])):
        got = our_fields(match(episode, index, ours))
        for name, want in expected_fields(episode).items():
            if not want or (path.name, name) in PODCASTPARSER_DIFFERENT:
                continue
            if got.get(name) == want:
                held += 1
            else:
                broken.append(f"{path.name} #{index} {name}: {want!r} ≠ {got.get(name)!r}")
    return held, broken


def _name(path: Path) -> str:
    return path.relative_to(corpus_dir()).as_posix()


def _deliberate(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in FEEDPARSER_DIFFERENT)


def _text_title(entry: Any) -> str:
    title = entry.get("title") or ""
    if "html" in entry.get("title_detail", {}).get("type", "html"):
        title = html.unescape(re.sub(r"<[^>]*>", "", title))
    return " ".join(title.split())


def feedparser_parity(path: Path) -> str | None:
    """None when feedparser reads no entry worth comparing; else "same", or what differs."""
    data = path.read_bytes()
    source = "https://corpus.example/" + _name(path)
    theirs = [
        e
        for e in feedparser.parse(data, response_headers={"content-location": source}).entries
        if e.get("title") or e.get("link") or e.get("enclosures")
    ]
    if not theirs:
        return None
    try:
        ours = parse_bytes(data, source).entries
    except FeedParseError as err:
        return f"refused: {err.reason}"
    if len(ours) != len(theirs):
        return f"{len(ours)} entries, feedparser {len(theirs)}"
    for mine, their in zip(ours, theirs, strict=True):
        if " ".join(mine.title.split()) != _text_title(their):
            return f"title {mine.title!r}, feedparser {_text_title(their)!r}"
        if (mine.link or "") != (their.get("link") or ""):
            return f"link {mine.link!r}, feedparser {their.get('link')!r}"
    return "same"


def podcastparser_figures() -> tuple[str, list[str]]:
    """The agreement line, and the expectations that do not hold."""
    held, broken = 0, []
    for path in PODCASTPARSER:
        ok, bad = podcastparser_comparison(path)
        held += ok
        broken += bad
    line = (
        f"podcastparser's expectations: {held} of {held + len(broken)} hold "
        f"({len(PODCASTPARSER)} feeds; {len(PODCASTPARSER_DIFFERENT)} deliberate differences)"
    )
    return line, broken


def feedparser_figures() -> tuple[str, float, list[str]]:
    """The parity line, the share of files read alike (deliberate differences aside), and
    the files that differ."""
    outcomes = {_name(p): feedparser_parity(p) for p in FEEDPARSER}
    compared = {n: o for n, o in outcomes.items() if o is not None}
    same = sum(1 for o in compared.values() if o == "same")
    counted = {n: o for n, o in compared.items() if not _deliberate(n)}
    counted_same = sum(1 for o in counted.values() if o == "same")
    share = counted_same / len(counted) if counted else 0.0
    line = (
        f"feedparser corpus entry parity: {counted_same} of {len(counted)} files "
        f"({share:.1%}) beyond the deliberate differences; {same} of {len(compared)} "
        f"({same / max(len(compared), 1):.1%}) of all files where feedparser reads entries"
    )
    return line, share, sorted(f"{n}: {o}" for n, o in counted.items() if o != "same")
