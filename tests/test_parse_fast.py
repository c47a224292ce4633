"""The fast paths of parsing and extraction give what the general ones give.

Each shortcut (whitespace already normalised, sentences found per paragraph, the usual
RFC 822 date read by position, entries and episodes validated in bulk) is checked
against the slow, obviously right form on tables and on generated text; the records
parsers build without validation are checked against strict validation.
"""

from __future__ import annotations

import dataclasses
import email.utils
import html
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from digests.extract import prs, sentences
from digests.extract.episodes import build_episodes
from digests.extract.prs import pull_requests
from digests.extract.summary import summary, transcript
from digests.models import Episode, ParsedSource, PullRequestRef, RawEntry
from digests.parse import dates, parse_bytes
from digests.parse import text as t
from digests.parse.dates import published_at
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
            general = prs.scan_pull_requests(text, REPO)
            fast = prs.scan_pull_requests(text, REPO, text.lower(), normalised=True)
            assert fast == general, repr(text)
            checked += bool(general)
    assert checked > 1000  # the generator does name PRs


_SENTENCE_PIECES = [
    "Word", "word", "PR 12", "#7", " ", ". ", ".", "! ", "? ", "… ", '." ', ".) ", "e.g. ",
    "No. ", "vs. ", "Dr. ", "cf. ", "etc. ", "i.e. ", "no. ", "2.5", "github.com/o/r/pull/3",
    "\n\n", "Next", "(Aside", '"Quote', "[Note", "A. ",
]  # fmt: skip


def test_sentences_looked_up_near_a_mention_equal_those_of_a_full_scan() -> None:
    """Every position a mention can start at (no space, quote, bracket or full stop) in
    normalised text lies in the same sentence either way."""
    rng = random.Random(20261201)
    checked = 0
    for _ in range(3_000):
        text = transcript("".join(rng.choice(_SENTENCE_PIECES) for _ in range(rng.randint(1, 40))))
        near, scan = sentences.NormalisedSentences(text), sentences.SentenceList(text)
        for pos, char in enumerate(text):
            if char.isspace() or char in "\"'()[].":
                continue
            start, end = near(text, pos)
            s_start, s_end = scan(text, pos)
            assert (start, text[start:end].rstrip()) == (s_start, text[s_start:s_end].rstrip()), (
                repr(text),
                pos,
            )
            checked += 1
    assert checked > 50_000


def test_usual_rfc822_fast_path_agrees_with_email_utils_on_generated_dates() -> None:
    rng = random.Random(5)
    pieces = [
        "Mon", "mon", "Thu", "Foo", ", ", ",", " ", "  ", "05", "5", "29", "45", "Oct", "oct",
        "Feb", "Xyz", "2026", "2024", "1999", "9999", "13", "23", "59", "60", ":", "GMT", "UTC",
        "gmt", "EST", "+0000", "-0000", "+0530", "-1200", "+05:30", "+9999",
    ]  # fmt: skip
    fast_ones = 0
    for _ in range(20_000):
        if rng.random() < 0.5:
            value = (
                f"{rng.choice(['Mon', 'Tue', 'Sun'])}, {rng.randint(1, 31):02d} "
                f"{rng.choice(['Jan', 'Feb', 'Oct', 'Dec'])} {rng.randint(1000, 9999):04d} "
                f"{rng.randint(0, 24):02d}:{rng.randint(0, 60):02d}:{rng.randint(0, 60):02d} "
                f"{rng.choice(['GMT', 'UTC', '+0000', '-0000', '+0130', '-2359'])}"
            )
        else:
            value = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        fast = dates._rfc822_usual(value)
        if fast is None:
            continue
        fast_ones += 1
        try:
            expected = email.utils.parsedate_to_datetime(value).astimezone(UTC)
        except ValueError:  # a zone of a day or more ("+9999"): email.utils gives up
            assert abs(int(value[-4:-2]) * 60 + int(value[-2:])) >= 24 * 60, value
            continue
        assert fast == expected, value
    assert fast_ones > 5_000


def test_feed_text_is_not_normalised_again_and_gives_the_same_episodes() -> None:
    """A feed reader's entries say their text is normalised; extraction skips that work and
    gets what normalising again gets (also for text a cap cut, which it does normalise)."""
    parsed = parse_bytes(make_feed(200, seed=3), "generated")
    assert parsed.entries and all(entry.normalised for entry in parsed.entries)
    cut = dataclasses.replace(parsed.entries[0], transcript="x " * (t.MAX_TEXT // 2))
    entries = (*parsed.entries, dataclasses.replace(cut, guid="cut"))
    fresh = ParsedSource(parsed.kind, parsed.show_title, entries)
    again = ParsedSource(
        parsed.kind,
        parsed.show_title,
        tuple(dataclasses.replace(entry, normalised=False) for entry in entries),
    )
    trusted = build_episodes(fresh, "PyTorch", REPO)
    assert trusted == build_episodes(again, "PyTorch", REPO)
    cut_episode = next(e for e in trusted if e.guid == "cut")
    assert cut_episode.transcript == "x " * (t.MAX_TEXT // 2 - 1) + "x"


_MARKUP_PIECES = [
    "<p>", "</p>", "<em>", "</em>", "<li>", "<br>", "<br/>", '<a href="https://x.test">',
    '<a href="https://github.com/o/r/pull/5">', "</a>", "<div class=x>", "</div>", "<table>",
    "<@U123ABC>", "<#C12345|general>", "<!here>", "<!channel>", "<https://x.test|label>",
    "<http", "a < b", "<", ">", "&amp;", "&lt;p&gt;", "PR 12", "word", " ", "\n", "\n\n",
]  # fmt: skip


def _to_text_general(value: str) -> str:
    """``to_text`` as it reads markup without the simple-markup shortcut: Slack syntax kept
    first, then HTML → text."""
    value = t.cap(value, t.MAX_TEXT * 2)
    if "<" in value:
        kept = t._keep_slack_syntax(value)
        if t.looks_html(kept):
            return t.cap(t.html_to_text(kept))
    if "&" in value:
        value = html.unescape(value)
        if "<" in value:
            kept = t._keep_slack_syntax(value)
            if t.looks_html(kept):
                return t.cap(t.html_to_text(kept))
    return t.cap(t.paragraphs(value))


def test_simple_markup_needs_no_slack_syntax_kept_on_generated_markup() -> None:
    rng = random.Random(11)
    simple = 0
    for _ in range(10_000):
        value = "".join(rng.choice(_MARKUP_PIECES) for _ in range(rng.randint(1, 14)))
        assert t.to_text(value) == _to_text_general(value), repr(value)
        simple += "<" in value and t._NOT_SIMPLE.search(value) is None
    assert simple > 500


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
    fast = dates._rfc822_usual(value)
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
    assert dates._rfc822_usual(value) is None


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
        # Extraction makes episodes without validating them: strict validation of what
        # one holds must give the same record, field for field and in the same order,
        # with the same fields set (every field but pr_info, attached later).
        given = {k: v for k, v in episode.__dict__.items() if k != "pr_info"}
        again = Episode.model_validate(given, strict=True)
        assert list(again.__dict__.items()) == list(episode.__dict__.items())
        assert again.__pydantic_fields_set__ == episode.__pydantic_fields_set__
        assert again.__pydantic_extra__ is episode.__pydantic_extra__ is None
        assert again.__pydantic_private__ is episode.__pydantic_private__ is None
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
