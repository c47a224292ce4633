"""JSON Feed 1.0 and 1.1, detected by content, read like RSS, with the XML limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.models import Episode
from digests.parse import parse_bytes
from digests.parse.text import MAX_ENTRIES, MAX_TEXT

SOURCE = "https://briefings.example/pytorch/feed.json"


def feed(items: list[Any], version: str = "https://jsonfeed.org/version/1.1", **top: Any) -> bytes:
    return json.dumps(
        {"version": version, "title": "PyTorch Daily", **top, "items": items}
    ).encode()


def episodes(data: bytes) -> list[Episode]:
    return build_episodes(parse_bytes(data, SOURCE), "PyTorch", "pytorch/pytorch")


@pytest.mark.parametrize(
    "version", ["https://jsonfeed.org/version/1", "https://jsonfeed.org/version/1.1"]
)
def test_json_feed_with_an_audio_attachment(version: str) -> None:
    data = feed(
        [
            {
                "id": "ep-42",
                "title": "Inductor news",
                "summary": "Paired with PR 199734, which posts the autotune results.",
                "content_html": "<p>Full notes. Also PR 199735.</p>",
                "url": "episodes/42",
                "date_published": "2026-10-05T13:00:40+02:00",
                "attachments": [
                    {"url": "https://cdn.example/cover.png", "mime_type": "image/png"},
                    {
                        "url": "audio/42.mp3",
                        "mime_type": "audio/mpeg",
                        "size_in_bytes": 1,
                        "duration_in_seconds": 1234,
                    },
                ],
                "_itunes": {"episode": 42, "duration": "broken"},
            }
        ],
        version=version,
        home_page_url="https://briefings.example/pytorch/",
        _itunes={"owner": {"name": "x"}},
    )
    parsed = parse_bytes(data, SOURCE, content_type="application/feed+json")
    assert parsed.kind == "json-feed"
    assert parsed.show_title == "PyTorch Daily"
    assert parsed.link == "https://briefings.example/pytorch/"
    (episode,) = episodes(data)
    assert episode.guid == "ep-42"
    assert episode.headline == "Inductor news"
    assert episode.summary.startswith("Paired with PR 199734")
    assert episode.url == "https://briefings.example/pytorch/episodes/42"
    assert episode.audio_url == "https://briefings.example/pytorch/audio/42.mp3"
    assert episode.duration_seconds == 1234
    assert episode.published_at == datetime(2026, 10, 5, 11, 0, 40, tzinfo=UTC)
    assert [r.number for r in episode.pull_requests] == [199734, 199735]
    assert "Also PR 199735." in episode.transcript


def test_detected_by_content_whatever_the_label() -> None:
    data = feed([{"id": "1", "title": "T", "content_text": "x"}])
    assert parse_bytes(data, "feed", content_type="text/plain").kind == "json-feed"


def test_content_text_without_summary_gives_the_lead_and_prs() -> None:
    (episode,) = episodes(
        feed([{"id": 7, "content_text": "Today PR 123 lands.\n\nMore words here."}])
    )
    assert episode.guid == "7"
    assert episode.summary.startswith("Today PR 123 lands.")
    assert [r.number for r in episode.pull_requests] == [123]
    assert episode.headline  # no title: a readable stand-in, never empty


def test_wrong_types_are_treated_as_absent() -> None:
    data = feed(
        [
            {"id": True, "title": ["x"], "url": 5, "content_text": "body", "attachments": "no"},
            "not an item",
            {
                "id": "2",
                "title": "Fine",
                "attachments": [1, {"url": None}, {"url": "a.mp3"}],
                "date_published": 20261005,
            },
            {},
        ]
    )
    parsed = parse_bytes(data, SOURCE)
    first, second = parsed.entries
    assert (first.title, first.link, first.audio_url) == ("", None, None)
    assert second.audio_url == "https://briefings.example/pytorch/a.mp3"
    assert second.published is None


def test_script_links_are_refused() -> None:
    (entry,) = parse_bytes(
        feed(
            [
                {
                    "id": "1",
                    "title": "T",
                    "url": "javascript:alert(1)",
                    "attachments": [
                        {"url": "data:audio/mpeg;base64,AA", "mime_type": "audio/mpeg"}
                    ],
                }
            ]
        ),
        SOURCE,
    ).entries
    assert (entry.link, entry.audio_url) == (None, None)


def test_sizes_are_capped_like_xml() -> None:
    big = "word " * (MAX_TEXT // 2)
    items = [
        {"id": str(i), "title": "t", "content_text": big if i == 0 else "x"}
        for i in range(MAX_ENTRIES + 5)
    ]
    parsed = parse_bytes(feed(items), SOURCE)
    assert len(parsed.entries) == MAX_ENTRIES
    assert len(parsed.entries[0].transcript) <= MAX_TEXT + 1


@pytest.mark.parametrize(
    "data",
    [
        b'{"version": "https://jsonfeed.org/version/1.1", "items": '
        + b"[" * 50_000
        + b"]" * 50_000
        + b"}",
        b'{"version": "https://jsonfeed.org/version/1", "items": [{"a": '
        + b'{"b": ' * 50_000
        + b"1"
        + b"}" * 50_001
        + b"]}",
        b'{"version": "https://jsonfeed.org/version/1", "items": [' + b"[" * 50_000,
    ],
)
def test_a_50k_deep_json_fails_with_one_clean_line(data: bytes) -> None:
    with pytest.raises(FeedParseError) as info:
        parse_bytes(data, SOURCE)
    assert "deeper than 256" in info.value.reason
    assert "\n" not in str(info.value)


def test_deep_json_that_is_no_json_feed_fails_cleanly_too() -> None:
    with pytest.raises(FeedParseError):
        parse_bytes(b'{"a": ' * 50_000 + b"1" + b"}" * 50_000, SOURCE)


def test_strings_holding_brackets_do_not_count_as_depth() -> None:
    text = "[{" * 400 + '\\"' + "[" * 10
    data = feed([{"id": "1", "title": text, "content_text": text}])
    (entry,) = parse_bytes(data, SOURCE).entries
    assert entry.title.startswith("[{[{")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"version": "https://jsonfeed.org/version/1", "items": [', "malformed JSON Feed"),
        (b'{"version": "https://jsonfeed.org/version/1", "items": {}}', "without an items list"),
        (b'{"version": "https://jsonfeed.org/version/1", "x": 1' + b"9" * 5000 + b"}", "JSON"),
        (b'{"episodes": []}', "not a feed or episode page"),
    ],
)
def test_bad_json_feeds_give_one_reason(data: bytes, reason: str) -> None:
    with pytest.raises(FeedParseError) as info:
        parse_bytes(data, SOURCE)
    assert reason in info.value.reason
    assert "\n" not in str(info.value)


def test_empty_items_is_a_feed_with_no_entries() -> None:
    parsed = parse_bytes(feed([]), SOURCE)
    assert (parsed.kind, parsed.entries) == ("json-feed", ())
