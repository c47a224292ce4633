"""Property: for generated RSS, Atom and JSON Feed items — any text,
lone surrogates and control characters included, dates real, odd and nonsense — parsing,
extracting and a store round trip raise nothing but ``FeedParseError`` (SQLite,
PostgreSQL). Seeded and bounded, so CI runs the same few examples every time."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.jobs.ingest import storable
from bot.jobs.pipeline import store_episodes
from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from digests.store import Store
from tests.fixtures.store import SAMPLE_NOW

Item = dict[str, str]

# Any code point, surrogates and controls included: what a hostile feed can spell.
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=60)


@st.composite
def _date(draw: st.DrawFn) -> str:
    when = draw(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
    hours = draw(st.integers(-99, 99))
    minutes = draw(st.integers(0, 59))
    sign = "-" if hours < 0 else "+"
    offset = f"{sign}{abs(hours):02d}:{minutes:02d}"
    return draw(
        st.sampled_from(
            [
                when.isoformat() + offset,
                when.strftime("%a, %d %b %Y %H:%M:%S ") + offset.replace(":", ""),
                when.strftime("%Y-%m-%d"),
                (when.replace(tzinfo=UTC) + timedelta(0)).isoformat(),
            ]
        )
    )


_ITEM = st.fixed_dictionaries(
    {
        "guid": _TEXT,
        "title": _TEXT,
        "summary": _TEXT,
        "content": _TEXT,
        "date": st.one_of(_date(), _TEXT),
        "link": st.one_of(st.just("https://example.test/e/1"), _TEXT),
    }
)
_ITEMS = st.lists(_ITEM, min_size=1, max_size=4)


def _xml(text: str) -> str:
    return escape(text)


def _encoded(document: str) -> bytes:
    # A lone surrogate goes out as the bytes it would be (invalid UTF-8), as a broken
    # encoder on the feed's side would write it.
    return document.encode("utf-8", "surrogatepass")


def rss(items: list[Item]) -> bytes:
    body = "".join(
        f"<item><guid>{_xml(i['guid'])}</guid><title>{_xml(i['title'])}</title>"
        f"<link>{_xml(i['link'])}</link><pubDate>{_xml(i['date'])}</pubDate>"
        f"<description>{_xml(i['summary'])}</description>"
        f"<content:encoded>{_xml(i['content'])}</content:encoded></item>"
        for i in items
    )
    return _encoded(
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" '
        'xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>S</title>'
        f"{body}</channel></rss>"
    )


def atom(items: list[Item]) -> bytes:
    body = "".join(
        f"<entry><id>{_xml(i['guid'])}</id><title>{_xml(i['title'])}</title>"
        f'<link href="{_xml(i["link"])}"/><published>{_xml(i["date"])}</published>'
        f"<summary>{_xml(i['summary'])}</summary>"
        f'<content type="html">{_xml(i["content"])}</content></entry>'
        for i in items
    )
    return _encoded(
        f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>S</title>{body}</feed>'
    )


def json_feed(items: list[Item]) -> bytes:
    entries = [
        {"id": i["guid"], "title": i["title"], "url": i["link"], "date_published": i["date"],
         "summary": i["summary"], "content_html": i["content"]}
        for i in items
    ]  # fmt: skip
    # ensure_ascii: every surrogate and control goes out as a \u escape, as JSON allows.
    return json.dumps({"version": "https://jsonfeed.org/version/1.1", "items": entries}).encode()


_shows = itertools.count()


@pytest.mark.parametrize("document", [rss, atom, json_feed])
def test_parse_extract_and_store_raise_only_feed_parse_errors(
    store: Store, document: Callable[[list[Item]], bytes]
) -> None:
    @settings(
        max_examples=25,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(_ITEMS)
    def round_trip(items: list[Item]) -> None:
        show = f"S{next(_shows)}"
        try:
            parsed = parse_bytes(document(items), "https://feeds.example/s")
        except FeedParseError:
            return
        episodes, _ = storable(show, build_episodes(parsed, show, "o/r"))
        store.ensure_show(show, "", "o/r")
        results = store_episodes(store, episodes, SAMPLE_NOW)
        for result in results:
            stored = store.episode(show, result.episode.guid)
            assert stored is not None and stored.title == result.episode.title.replace("\x00", "")

    round_trip()
