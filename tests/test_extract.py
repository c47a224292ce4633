"""Extraction: pure functions, tested as tables."""

from __future__ import annotations

import email.utils
import random
import re
from datetime import UTC, datetime

import isodate
import pytest

from digests.extract import episodes, prs, sentences
from digests.extract.durations import duration_seconds
from digests.extract.episodes import build_episodes
from digests.extract.headline import headline
from digests.extract.prs import pull_requests
from digests.extract.summary import lead, nearby, summary, transcript
from digests.models import UNKNOWN_DATE, ParsedSource, PullRequestRef, RawEntry
from digests.parse.dates import published_at

REPO = "pytorch/pytorch"


def pr_url(n: int, repo: str = REPO) -> str:
    return f"https://github.com/{repo}/pull/{n}"


@pytest.mark.parametrize(
    ("title", "show", "expected"),
    [
        ("PyTorch: All-Gather Showdown", "PyTorch", "All-Gather Showdown"),
        ("pytorch:  All-Gather Showdown", "PyTorch", "All-Gather Showdown"),
        ("PyTorch - Compiler Parity Push", "PyTorch", "Compiler Parity Push"),
        ("PyTorch | Compiler Parity Push", "PyTorch", "Compiler Parity Push"),
        ("Weekly Recap - FSDP Contracts", "PyTorch", "Weekly Recap - FSDP Contracts"),
        ("PyTorch 2.5: what is new", "PyTorch", "PyTorch 2.5: what is new"),
        ("PyTorchLightning: other show", "PyTorch", "PyTorchLightning: other show"),
        ("PyTorch:", "PyTorch", "PyTorch:"),
        ("  Spaced   out  ", "PyTorch", "Spaced out"),
        ("JAX: Sharding", "PyTorch", "JAX: Sharding"),
    ],
)
def test_headline(title: str, show: str, expected: str) -> None:
    assert headline(title, show) == expected


def test_headline_strips_an_alias_of_the_show() -> None:
    assert headline("PyTorch Daily: Kernels", "PyTorch", "PyTorch Daily") == "Kernels"


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("  One   sentence.\n\nTwo\tsentences. ", "One sentence. Two sentences."),
        (
            "Real news. This episode is a short developer briefing from PyTorch. "
            "It explains recent repository work in plain language.",
            "Real news.",
        ),
        (
            "This excerpt keeps the crawler page concise. Listen to the episode or use the "
            "RSS feed for the full update. Welcome back.",
            "Welcome back.",
        ),
        ("this excerpt keeps the crawler page concise. Hi.", "Hi."),
        ("Nothing to strip about episodes.", "Nothing to strip about episodes."),
        ("", ""),
        ("<!channel> & <b>", "<!channel> & <b>"),
    ],
)
def test_summary(description: str, expected: str) -> None:
    assert summary(description) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "This excerpt keeps the crawler page concise. Listen to the episode or use the "
            "RSS feed for the full update.\n\nHello   there.\n\n\n  Second  para…",
            "Hello there.\n\nSecond para…",
        ),
        ("one line", "one line"),
        ("a\nwrapped\nline", "a wrapped line"),
        ("", ""),
    ],
)
def test_transcript(text: str, expected: str) -> None:
    assert transcript(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT4M11S", 251),
        ("PT1H2M3S", 3723),
        ("pt2m31s", 151),
        ("PT151S", 151),
        ("PT2M30.6S", 151),
        ("P0DT0H4M11S", 251),
        ("PT0S", 0),
        ("4:11", 251),
        ("04:11", 251),
        ("00:04:11", 251),
        ("1:02:03", 3723),
        ("90:00", 5400),
        ("4:11.4", 251),
        ("251", 251),
        ("251.0", 251),
        ("250.5", 251),
        ("  251  ", 251),
        ("4m 11s", 251),
        ("1h 2m 3s", 3723),
        ("4 min", 240),
        ("", None),
        (None, None),
        ("junk", None),
        ("P1M", None),
        ("P1Y", None),
        ("PT", None),
        ("4:75", None),
        ("1:60:00", None),
        ("-5", None),
        ("nan", None),
        ("inf", None),
        ("99999999", None),
        ("1:2:3:4", None),
        ("PT4M11S trailing", None),
        ("x" * 1000, None),
    ],
)
def test_duration_seconds(text: str | None, expected: int | None) -> None:
    assert duration_seconds(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mon, 05 Oct 2026 13:00:40 GMT", datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)),
        ("Mon, 05 Oct 2026 13:00:40 +0200", datetime(2026, 10, 5, 11, 0, 40, tzinfo=UTC)),
        ("Mon, 05 Oct 2026 13:00:40 -0430", datetime(2026, 10, 5, 17, 30, 40, tzinfo=UTC)),
        ("5 Oct 2026 13:00 GMT", datetime(2026, 10, 5, 13, 0, tzinfo=UTC)),
        ("Mon, 05 Oct 2026 13:00:40 EST", datetime(2026, 10, 5, 18, 0, 40, tzinfo=UTC)),
        ("Mon, 05 Oct 2026 13:00:40", datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)),
        ("2026-10-05T13:00:40Z", datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)),
        ("2026-10-05T15:00:40+02:00", datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)),
        ("2026-10-05T13:00:40.123456Z", datetime(2026, 10, 5, 13, 0, 40, 123456, tzinfo=UTC)),
        ("2026-10-05 13:00:40", datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)),
        ("2026-10-05", datetime(2026, 10, 5, tzinfo=UTC)),
        ("20261005T130040Z", datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)),
        ("", None),
        (None, None),
        ("yesterday", None),
        ("Mon, 45 Oct 2026 13:00:40 GMT", None),
        ("2026-13-05", None),
        ("9" * 500, None),
    ],
)
def test_published_at(text: str | None, expected: datetime | None) -> None:
    got = published_at(text)
    assert got == expected
    if got is not None:
        assert got.utcoffset() is not None
        assert got.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Paired with PR 199687, which posts…", [199687]),
        ("Three drafts, PRs 199720, 199721 and 199726, lay out options.", [199720, 199721, 199726]),
        (
            "A series, including PRs 199714 for merging, 199716 for rebasing, and 199715 for "
            "reverting, lets the bot land stacks.",
            [199714, 199716, 199715],
        ),
        ("PR #123 fixes it.", [123]),
        ("PR#123 fixes it.", [123]),
        ("pr 77 and Pr 78 are lower-case.", [77, 78]),
        ("The headline fix is pull request 31044.", [31044]),
        ("See pull requests 1 and 2.", [1, 2]),
        ("See pull requests #1, #2, and #3 today.", [1, 2, 3]),
        ("PRs: 10, 11 or 12.", [10, 11, 12]),
        ("PR number 42 landed.", [42]),
        ("PRs 199720,199721 landed.", [199720, 199721]),
        ("Fixed in #199610 and PR #199611.", [199611]),
        ("March 15th brought us 17 commits in 2026.", []),
        ("PRs 5 and 6 landed, 17 commits in all.", [5, 6]),
        ("PRs 5 and 6 from last week, 17 commits in all.", [5, 6]),
        ("PRs 3, 4 and 17 commits", [3, 4]),
        ("PR 5 and 12 other changes.", [5]),
        ("PR 199687 again and PR 199687 once more.", [199687]),
        ("APR 2026 and SPRs 5 are not PR mentions.", []),
        ("PR 2.5 is a version, not a PR.", []),
        ("prepare 12 things", []),
        ("https://github.com/pytorch/pytorch/pull/199530 changes timeouts.", [199530]),
        ("Open github.com/pytorch/pytorch/pull/7?diff=split now.", [7]),
        ("PR 9, then https://github.com/pytorch/pytorch/pull/9 again.", [9]),
        ("See www.github.com/pytorch/pytorch/pull/11.", [11]),
        ("Not https://notgithub.com/pytorch/pytorch/pull/12 at all.", []),
        # hyphenated, glued, and "#a/#b" lists after a head
        ("PR-199001 lands today.", [199001]),
        ("pr199002 lands today.", [199002]),
        ("PRs #199003/#199004 both land.", [199003, 199004]),
        ("PRs #199003 / #199004 and #199005.", [199003, 199004, 199005]),
        ("PR #199003/#199004 is one change in two parts.", [199003, 199004]),
        ("PR-#199006 and pull-request-199007.", [199006, 199007]),
        ("APR-2026 and SPR-5 are no PRs, nor is spr199001.", []),
        ("PR-2026-10-05 and pr2026-10-05 are dates.", []),
        ("The PR2 robot and pr42 are names, not PRs.", []),
        ("PRs 10/11 or #12/13: only a '#' makes a slash list.", [10]),
        ("Fixed in #199610/#199611, no head.", []),
        ("prefix123 and pr_199 and pr.199 are not PRs.", []),
        ("", []),
    ],
)
def test_pull_request_numbers(text: str, numbers: list[int]) -> None:
    refs = pull_requests(text, REPO)
    assert [r.number for r in refs] == numbers
    assert all(r.url == pr_url(r.number) for r in refs)


def test_pull_request_link_to_another_repo_keeps_that_repo() -> None:
    text = "PR 5 here, and https://github.com/pytorch/vision/pull/5 there. Also PR 6."
    refs = pull_requests(text, REPO)
    assert [(r.number, r.url) for r in refs] == [
        (5, pr_url(5)),
        (5, pr_url(5, "pytorch/vision")),
        (6, pr_url(6)),
    ]


def test_pull_request_order_is_first_mention_across_forms() -> None:
    text = "First github.com/pytorch/pytorch/pull/30 then PR 10 and pull request 20."
    assert [r.number for r in pull_requests(text, REPO)] == [30, 10, 20]


@pytest.mark.parametrize(
    ("text", "contexts"),
    [
        (
            "First, a design fork. Three drafts, PRs 1, 2 and 3, compete. Two fixes…",
            ["Three drafts, PRs 1, 2 and 3, compete."] * 3,
        ),
        ("Intro.\n\nPaired with PR 199734, which posts…", ["Paired with PR 199734, which posts…"]),
        ("See e.g. PR 4 for details. Next.", ["See e.g. PR 4 for details."]),
        ("PR No. 8 is here. Then more.", ["PR No. 8 is here."]),
        ('He said "PR 9 is done." Then left.', ['He said "PR 9 is done."']),
        ("Line one has PR 1\n\nline two has PR 2", ["Line one has PR 1", "line two has PR 2"]),
        ("Version 2.5 ships PR 3 today! Great.", ["Version 2.5 ships PR 3 today!"]),
        ("  Spaced\n  out PR 5  sentence. ", ["Spaced out PR 5 sentence."]),
    ],
)
def test_pull_request_context_is_the_sentence(text: str, contexts: list[str]) -> None:
    assert [r.context for r in pull_requests(text, REPO)] == contexts


def test_pull_request_context_of_a_huge_sentence_is_clipped_around_the_mention() -> None:
    text = "word " * 500 + "PR 77 here " + "word " * 500 + "."
    (ref,) = pull_requests(text, REPO)
    assert ref.number == 77
    assert "PR 77" in ref.context
    assert ref.context.startswith("…") and ref.context.endswith("…")
    assert len(ref.context) <= sentences.MAX_CONTEXT + 2


def test_pull_requests_in_text_with_length_changing_lowercase() -> None:
    # "İ".lower() is two characters; offsets must still point at the right sentence.
    text = "İİİİ news. PRs 12 and 13 landed."
    refs = pull_requests(text, REPO)
    assert [r.number for r in refs] == [12, 13]
    assert refs[0].context == "PRs 12 and 13 landed."


def test_pull_requests_are_capped() -> None:
    text = " ".join(f"PR {n}." for n in range(1, 1000))
    assert len(pull_requests(text, REPO)) == prs.MAX_PULL_REQUESTS


@pytest.mark.parametrize(
    ("titles", "expected"),
    [
        (["1. One", "2) Two", "- Three", "• Four"], ("One", "Two", "Three", "Four")),
        (["Same", "same", " Same "], ("Same",)),
        (["", "  "], ()),
        (["Weekly Recap - FSDP"], ("Weekly Recap - FSDP",)),
    ],
)
def test_nearby(titles: list[str], expected: tuple[str, ...]) -> None:
    assert nearby(titles) == expected


def entry(**kw: object) -> RawEntry:
    base: dict[str, object] = {"guid": "g1", "title": "PyTorch: One", "published": "2026-10-01"}
    base.update(kw)
    return RawEntry(**base)  # type: ignore[arg-type]


def test_build_episodes_newest_first_and_fields() -> None:
    parsed = ParsedSource(
        kind="rss",
        show_title="PyTorch",
        entries=(
            entry(guid="old", title="PyTorch: Old", published="Thu, 01 Oct 2026 13:00:05 GMT"),
            entry(
                guid="new",
                title="PyTorch:  New   one",
                published="2026-10-05T15:00:40+02:00",
                description=(
                    "Summary names PR 3.  It explains recent repository work in plain language."
                ),
                transcript="Transcript names PR 4 and PR 3.\n\nThen PRs 5 and 6.",
                duration="PT2M31S",
                link="https://briefings.example/new",
                audio_url="https://briefings.example/new.mp3",
                nearby=("1. Old",),
            ),
        ),
    )
    episodes = build_episodes(parsed, "PyTorch", REPO)
    assert [e.guid for e in episodes] == ["new", "old"]
    new = episodes[0]
    assert new.show == "PyTorch"
    assert new.title == "PyTorch: New one"
    assert new.headline == "New one"
    assert new.summary == "Summary names PR 3."
    assert new.published_at == datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)
    assert new.duration_seconds == 151
    assert new.url == "https://briefings.example/new"
    assert new.audio_url == "https://briefings.example/new.mp3"
    assert new.nearby == ("Old",)
    assert [r.number for r in new.pull_requests] == [3, 4, 5, 6]
    assert new.pull_requests[0] == PullRequestRef(
        number=3, url=pr_url(3), context="Summary names PR 3."
    )
    assert new.transcript == "Transcript names PR 4 and PR 3.\n\nThen PRs 5 and 6."
    payload = new.to_json()
    assert payload["published_at"] == "2026-10-05T13:00:40Z"
    assert payload["pull_requests"][0] == {  # type: ignore[index]
        "number": 3,
        "url": pr_url(3),
        "context": "Summary names PR 3.",
    }


LONG_SENTENCE = "This sentence about compiled autograd is one of many in the opening. "


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Short opening. PR 5 lands.\n\nSecond paragraph.", "Short opening. PR 5 lands."),
        ("", ""),
        ("x" * 500, "x" * 500),  # exactly the limit: not cut
        # Whole sentences that fit; the last full stop gives way to the mark.
        (LONG_SENTENCE * 10, (LONG_SENTENCE * 7).rstrip()[:-1] + "…"),
        # One sentence longer than the limit: cut at a word.
        ("word " * 150 + "end.", ("word " * 100).rstrip() + "…"),
        ("y" * 900, "y" * 499 + "…"),  # no word boundary at all
    ],
)
def test_lead(text: str, expected: str) -> None:
    got = lead(text)
    assert got == expected
    assert len(got) <= 500


def test_content_only_items_get_a_summary_from_the_transcript() -> None:
    opening = "Compiled autograd grows up. PR 199001 adds the cache, PR 199002 the guard."
    parsed = ParsedSource(
        kind="rss",
        entries=(
            entry(
                guid="c",
                description="",
                transcript=f"{opening}\n\nLater, PR 199001 again and PRs 199003 and 199002.",
            ),
            entry(guid="long", description="", transcript=LONG_SENTENCE * 20),
            entry(guid="none", description="", transcript=""),
            entry(guid="d", description="Its own summary.", transcript="Other text. PR 7."),
        ),
    )
    by_guid = {e.guid: e for e in build_episodes(parsed, "PyTorch", REPO)}
    content_only = by_guid["c"]
    assert content_only.summary == opening
    # The summary came from the transcript: its PRs are counted once, with their first
    # sentence, in order of first mention.
    assert [r.number for r in content_only.pull_requests] == [199001, 199002, 199003]
    assert len({r.url for r in content_only.pull_requests}) == 3
    assert content_only.pull_requests[0].context == "PR 199001 adds the cache, PR 199002 the guard."
    assert by_guid["long"].summary.endswith("…") and len(by_guid["long"].summary) <= 500
    assert by_guid["none"].summary == ""
    assert by_guid["d"].summary == "Its own summary."
    # summary() itself stays the description, cleaned: nothing derived.
    assert summary("") == ""


def test_build_episodes_uses_the_configured_show_and_repo() -> None:
    parsed = ParsedSource(
        kind="rss", show_title="Torch Daily", entries=(entry(title="Torch Daily: X. PR 1"),)
    )
    (episode,) = build_episodes(parsed, "PyTorch", "example/repo")
    assert episode.show == "PyTorch"
    assert episode.headline == "X. PR 1"
    assert episode.pull_requests == ()  # titles are not scanned


def test_build_episodes_dedupes_guids_and_fills_missing_ones() -> None:
    parsed = ParsedSource(
        kind="rss",
        entries=(
            entry(guid="dup", title="PyTorch: First"),
            entry(guid="dup", title="PyTorch: Second"),
            entry(guid=None, link="https://briefings.example/x", title="PyTorch: Linked"),
            entry(guid=None, link=None, title="PyTorch: Bare", published="2026-01-01"),
        ),
    )
    episodes = build_episodes(parsed, "PyTorch", REPO)
    guids = [e.guid for e in episodes]
    assert guids.count("dup") == 1
    assert next(e for e in episodes if e.guid == "dup").headline == "First"
    assert "https://briefings.example/x" in guids
    bare = next(e for e in episodes if e.headline == "Bare")
    assert bare.guid.startswith("sha1:")
    again = build_episodes(parsed, "PyTorch", REPO)
    assert bare.guid == next(e for e in again if e.headline == "Bare").guid


def test_build_episodes_unknown_date_sorts_last_and_is_stable() -> None:
    parsed = ParsedSource(
        kind="rss",
        entries=(entry(guid="a", published="not a date"), entry(guid="b", published=None)),
    )
    episodes = build_episodes(parsed, "PyTorch", REPO)
    assert [e.published_at for e in episodes] == [UNKNOWN_DATE, UNKNOWN_DATE]
    assert [e.guid for e in episodes] == ["a", "b"]


@pytest.mark.parametrize(
    "value", ["PT4M11S", "PT1H", "PT0.4S", "PT59M59.9S", "PT100S", "PT1H2M3.25S", "PT90M"]
)
def test_duration_fast_path_agrees_with_isodate(value: str) -> None:
    expected = int(isodate.parse_duration(value).total_seconds() + 0.5)
    assert duration_seconds(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 05 Oct 2026 13:00:40 GMT",
        "Mon, 05 Oct 2026 13:00:40 +0000",
        "Mon, 05 Oct 2026 13:00:40 -0000",
        "Mon,05 Oct 2026 13:00:40 +0530",
        "5 Oct 2026 23:59 -1200",
        "Thu, 29 Feb 2024 00:00:00 UT",
    ],
)
def test_rfc822_fast_path_agrees_with_email_utils(value: str) -> None:
    expected = email.utils.parsedate_to_datetime(value)
    if expected.tzinfo is None:
        expected = expected.replace(tzinfo=UTC)
    assert published_at(value) == expected.astimezone(UTC)


@pytest.mark.parametrize(
    ("link", "published", "expected"),
    [
        (
            "https://briefings.example/episodes/all-gather-showdown.html",
            None,
            "All gather showdown",
        ),
        ("https://briefings.example/e/flex_attention_lands/", None, "Flex attention lands"),
        (
            "https://briefings.example/p/12345",
            "2026-10-05T13:00:00Z",
            "Untitled episode of 5 Oct 2026",
        ),
        (
            "https://briefings.example/e/9f8a7b6c5d4e3f2a1b0c",
            "2026-10-05T13:00:00Z",
            "Untitled episode of 5 Oct 2026",
        ),
        (None, "Mon, 05 Oct 2026 13:00:40 GMT", "Untitled episode of 5 Oct 2026"),
        (None, None, "Untitled episode"),
    ],
)
def test_an_item_with_neither_title_nor_description_gets_a_readable_headline(
    link: str | None, published: str | None, expected: str
) -> None:
    parsed = ParsedSource(
        kind="rss",
        entries=(entry(guid="only-a-guid", title="", link=link or "", published=published),),
    )
    (episode,) = build_episodes(parsed, "PyTorch", REPO)
    assert episode.headline == expected
    assert episode.title == ""  # as published


def _both_scanned(text: str) -> list[PullRequestRef]:
    """The PRs of an item whose description and transcript are both ``text`` (normalised),
    found the general way: the description squashed, then the transcript, in one scan."""
    squashed = text.replace("\n\n", " ")
    return prs.scan_pull_requests(squashed + "\n\n" + text, "o/r", normalised=True)


def _one_item(text: str) -> RawEntry:
    return RawEntry(
        guid="g", title="T", description=text, transcript=text, published=None, normalised=True
    )


def test_a_transcript_repeating_the_description_names_the_prs_of_both() -> None:
    # A list ending one paragraph before a count word opening the next keeps its last
    # number in paragraphs, but not on one line: the transcript must be read too.
    text = "Fixed in PRs 12, 345\n\ncommits were squashed. See PR 7."
    episode = build_episodes(ParsedSource("rss", None, (_one_item(text),)), "S", "o/r")[0]
    assert [r.number for r in episode.pull_requests] == [12, 7, 345]
    assert episode.pull_requests == tuple(_both_scanned(text))


# What the fuzzed transcripts are made of: PR heads, numbers, lists, links and sentence ends.
_PR_PIECES = [
    "PR", "PRs", "pull requests", "#", "12", "345", "6789", ",", " and", "&", "commits",
    "times", "/", "/#7", ".", "!", "?", "…", "the", "fix", "for", "merging", "Rebasing",
    "https://github.com/o/r/pull/55", "github.com/x/y/pull/66", "-", ":", "No.", "pr-12",
    "PR2", "pr123",
]  # fmt: skip


def test_a_transcript_repeating_the_description_gives_what_scanning_both_gives() -> None:
    pieces = [*_PR_PIECES, "\n\n", "\n\n", "\n\n", "e.g.", "("]
    rng = random.Random(20261206)
    for _ in range(3000):
        text = transcript(" ".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))))
        if not text:
            continue
        if rng.random() < 0.05:
            text = text + "\n\nCommits " + text
        episode = build_episodes(ParsedSource("rss", None, (_one_item(text),)), "S", "o/r")[0]
        assert episode.transcript == text
        assert episode.pull_requests == tuple(_both_scanned(text)), text


def _led_item(first: str, rest: str) -> RawEntry:
    """An item whose transcript goes on, after a break, from its description."""
    return RawEntry(
        guid="g",
        title="T",
        description=first,
        transcript=first + "\n\n" + rest,
        published=None,
        normalised=True,
    )


def test_a_transcript_going_on_from_the_description_gives_what_scanning_both_gives() -> None:
    # The part of the transcript repeating the description is not scanned again: the
    # PRs, their sentences and the count past the cap must be the general scan's.
    pieces = [*_PR_PIECES, "\n\n", "\n\n", "e.g.", "(", "Commits"]
    rng = random.Random(20261207)
    led = 0
    for _ in range(3000):
        first, rest = (
            transcript(" ".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))))
            for _ in range(2)
        )
        if rng.random() < 0.1:  # near the cap on mentions, or past it
            first += ". PRs " + ", ".join(str(1000 + n) for n in range(rng.randint(40, 120)))
            rest += ". PRs " + ", ".join(str(5000 + n) for n in range(rng.randint(40, 120)))
        if not first or not rest:
            continue
        item = _led_item(first, rest)
        led += episodes._repeated_lead(item, item.transcript, item.transcript.lower(), True) > 0
        (episode,) = build_episodes(ParsedSource("rss", None, (item,)), "S", "o/r")
        both = first.replace("\n\n", " ") + "\n\n" + item.transcript
        general = prs.scan_pull_requests(both, "o/r", normalised=True)
        assert episode.pull_requests == tuple(general), (first, rest)
        assert episode.pull_requests_named == prs.named_past_cap(general, both, "o/r")
    assert led > 1000


def test_the_count_word_look_ahead_admits_each_first_letter_of_a_count_word() -> None:
    # breaks_a_list's look-ahead must let through every character a count word can
    # start with, case-insensitively as the regex engine compares them.
    words = prs._COUNT_WORD.removeprefix("(?i:").removesuffix(")\\b").split("|")
    firsts = re.compile("(?i:" + "|".join(re.escape(word[0]) for word in words) + ")")
    ahead = re.compile(prs._COUNT_FIRST)
    for code in range(0x10000):
        char = chr(code)
        assert (firsts.fullmatch(char) is None) == (ahead.fullmatch(char) is None), code
