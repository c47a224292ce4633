"""The fast paths of parsing and extraction give what the general ones give.

Each shortcut (whitespace already normalised, sentences found per paragraph, the usual
RFC 822 date read by position, entries and episodes validated in bulk) is checked
against the slow, obviously right form on tables and on generated text; the records
parsers build without validation are checked against strict validation.
"""

from __future__ import annotations

import dataclasses
import email.utils
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from digests import extract
from digests.extract import build_episodes, published_at, pull_requests, summary, transcript
from digests.models import Episode, ParsedSource, PullRequestRef, RawEntry
from digests.parse import parse_bytes
from digests.parse import text as t
from tests.benchmarks.bench_parse import make_feed

DATA = Path(__file__).parent / "data"
REPO = "pytorch/pytorch"

# Pieces that stress whitespace: every kind str.split() knows, lines of spaces, blanks.
_WS_PIECES = [
    "word", "B.", " ", "  ", "\n", "\n\n", "\n\n\n", " \n ", "\n \n", "\n  \n", "\t", "\r",
    "\r\n", "\xa0", "\u2028", "\u2029", "\u3000", "\x1c", "\x85", "\x0b", "\u200b", "é", "…",
]  # fmt: skip


def _split_join(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("already squashed", "already squashed"),
        ("  lead and trail  ", "lead and trail"),
        ("double  space", "double space"),
        ("tab\there", "tab here"),
        ("nbsp\xa0here", "nbsp here"),
        ("line\u2028sep", "line sep"),
        ("zero\u200bwidth", "zero\u200bwidth"),  # not whitespace: kept
        ("", ""),
        (" ", ""),
    ],
)
def test_squash(text: str, expected: str) -> None:
    assert t.squash(text) == expected == _split_join(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("one\n\ntwo", "one\n\ntwo"),
        ("one\ntwo", "one two"),
        ("one\n \ntwo", "one\n\ntwo"),  # a line of spaces is a blank line
        ("one\n\n\n\n\ntwo\n", "one\n\ntwo"),
        ("\n\n  one  \n\n", "one"),
        ("one \n\n two", "one\n\ntwo"),
        ("one\r\n\r\ntwo", "one\n\ntwo"),
        ("one\n\t\ntwo", "one\n\ntwo"),
        ("one\u2029two", "one two"),  # only \n makes a paragraph
        ("a  b\n\nc\td", "a b\n\nc d"),
        ("\n", ""),
    ],
)
def test_paragraphs(text: str, expected: str) -> None:
    assert t.paragraphs(text) == expected == t._paragraphs_general(text)


# ASCII text takes a path of its own (memchr for each whitespace character).
_ASCII_PIECES = [
    "word", "B.", " ", "  ", "\n", "\n\n", " \n ", "\n \n", "\t", "\r\n", "\x0b", "\x0c",
    "\x1c", "\x1d", "\x1e", "\x1f", "\x01", "\x7f", "x" * 45,
]  # fmt: skip


@pytest.mark.parametrize("pieces", [_WS_PIECES, _ASCII_PIECES], ids=["unicode", "ascii"])
def test_whitespace_fast_paths_equal_the_general_forms_on_generated_text(
    pieces: list[str],
) -> None:
    rng = random.Random(20261130)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert t.squash(text) == _split_join(text), repr(text)
        assert t.paragraphs(text) == t._paragraphs_general(text), repr(text)


_PR_PIECES = [
    "PR", "PRs", "pr", "pull request", "pull requests", "#", "12", "345", "2.5", ",",
    " and ", " or ", " for merging", " commits", ".", "!", "?", "…", '"', "'", ")", "(",
    " ", "\n", "\n\n", "e.g.", "No.", "The", "see", "https://github.com/pytorch/vision/pull/",
    "github.com/o/r/pull/", "notgithub.com/a/b/pull/", "İ", "word",
]  # fmt: skip


def test_sentences_found_per_paragraph_equal_a_scan_of_the_whole_text() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(20_000):
        raw = "".join(rng.choice(_PR_PIECES) for _ in range(rng.randint(1, 30)))
        for text in (summary(raw), transcript(raw)):
            general = extract._pull_requests(text, REPO)
            fast = extract._pull_requests(text, REPO, text.lower(), normalised=True)
            assert fast == general, repr(text)
            checked += bool(general)
    assert checked > 1000  # the generator does name PRs


def test_pull_requests_across_paragraphs_keep_their_own_sentences() -> None:
    text = transcript(
        "Intro without numbers. More words here!\n\n"
        "First, PR 10 lands. Then e.g. PR 11 follows? Sure.\n\n"
        "Nothing here.\n\n"
        "Last: pull request #12…"
    )
    refs = pull_requests(text, REPO)
    assert [(r.number, r.context) for r in refs] == [
        (10, "First, PR 10 lands."),
        (11, "Then e.g. PR 11 follows?"),
        (12, "Last: pull request #12…"),
    ]


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 05 Oct 2026 13:00:40 GMT",
        "Mon, 05 Oct 2026 13:00:40 UTC",
        "Mon, 05 Oct 2026 13:00:40 +0000",
        "Mon, 05 Oct 2026 13:00:40 -0000",
        "Mon, 05 Oct 2026 13:00:40 +0530",
        "Mon, 05 Oct 2026 23:59:59 -1200",
        "Thu, 29 Feb 2024 00:00:00 GMT",
        "thu, 29 feb 2024 00:00:00 GMT",
    ],
)
def test_usual_rfc822_dates_agree_with_email_utils(value: str) -> None:
    fast = extract._rfc822_usual(value)
    expected = email.utils.parsedate_to_datetime(value).astimezone(UTC)
    assert fast == expected
    assert published_at(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 05 Oct 2026 13:00:40 EST",  # named zones: the general path
        "Mon, 05 Oct 2026 13:00:40 gmt",
        "Mon, 45 Oct 2026 13:00:40 GMT",
        "Mon, 05 Foo 2026 13:00:40 GMT",
        "Mon, 05 Oct 2026 13:00:40 +05:30",
        "Mön, 05 Oct 2026 13:00:40 GMT",
        "Mon, ٠٥ Oct 2026 13:00:40 GMT",
        "2026-10-05T13:00:40+00:00 GMT",
    ],
)
def test_unusual_dates_are_left_to_the_general_path(value: str) -> None:
    assert extract._rfc822_usual(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 01 Jan 0001 00:00:00 +0100",
        "01 Jan 0001 00:00 +0100",
        "Fri, 31 Dec 9999 23:59:59 -0100",
        "31 Dec 9999 23:59 -0100",
    ],
)
def test_dates_moved_out_of_range_by_their_offset_are_unknown(value: str) -> None:
    assert published_at(value) is None


def _feeds() -> list[tuple[str, bytes]]:
    return [
        ("generated", make_feed(300, seed=11)),
        ("feed-rss.xml", (DATA / "feed-rss.xml").read_bytes()),
        ("feed-atom.xml", (DATA / "feed-atom.xml").read_bytes()),
        ("page-bullets.txt", (DATA / "page-bullets.txt").read_bytes()),
        ("page-jsonld.html", (DATA / "page-jsonld.html").read_bytes()),
    ]


@pytest.mark.parametrize(("name", "data"), _feeds())
def test_build_episodes_output_is_its_own_validated_form(name: str, data: bytes) -> None:
    episodes = build_episodes(parse_bytes(data, name), "PyTorch", REPO)
    assert episodes
    for episode in episodes:
        assert type(episode) is Episode
        assert Episode.model_validate(episode.model_dump()) == episode
        assert isinstance(episode.pull_requests, tuple)
        assert all(type(ref) is PullRequestRef for ref in episode.pull_requests)
        assert episode.published_at.utcoffset() is not None
        assert episode.published_at.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


@pytest.mark.parametrize(("name", "data"), _feeds())
def test_parsed_entries_are_their_own_validated_form(name: str, data: bytes) -> None:
    # Parsers build these records without validation; strict validation of what they
    # hold must give the same records back (no wrong types slip through).
    parsed = parse_bytes(data, name)
    assert TypeAdapter(ParsedSource).validate_python(dataclasses.asdict(parsed)) == parsed
    assert all(type(entry) is RawEntry for entry in parsed.entries)


def test_generated_feed_counts() -> None:
    episodes = build_episodes(parse_bytes(make_feed(200), "gen"), "PyTorch", REPO)
    assert len(episodes) == 200
    assert all(e.duration_seconds for e in episodes)
    assert sum(len(e.pull_requests) for e in episodes) > 600
    assert episodes == sorted(episodes, key=lambda e: e.published_at, reverse=True)
    newest = datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)
    assert episodes[0].guid == "pytorch-00000"
    assert newest - timedelta(minutes=90) <= episodes[0].published_at <= newest
