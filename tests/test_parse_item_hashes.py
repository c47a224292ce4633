"""Item hashes: a feed answered 200 again skips the text work of every
item whose bytes hash as before, and still finds the ones that changed.

The text work is counted through spies on the parser's item reader and the extractor's
per-entry function, never timed. Pure parses first, then polls through the store (both
databases) against a feed served without validators."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

import digests.extract.episodes
import digests.parse.feeds
from bot.jobs.pipeline import poll_show
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.decide.update import decide_upsert
from digests.extract.episodes import build_episodes
from digests.models import UNKNOWN_DATE, Episode, ParsedSource
from digests.parse import parse_bytes
from digests.parse.item_hashes import ItemHashes, item_spans
from digests.store import Store
from digests.store.schema import episodes
from digests.types import EpisodeStatus, StoredEpisode
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.fixtures.store import SAMPLE_NOW

SHOW, REPO = "PyTorch", "pytorch/pytorch"
SALT = f"{SHOW}\x00{REPO}"
FEED = rss(rss_item(5), rss_item(4), rss_item(3))


class Calls:
    """Counts calls of a module function, passing them on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
        self.count = 0
        real: Callable[..., Any] = getattr(module, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


@pytest.fixture
def text_work(monkeypatch: pytest.MonkeyPatch) -> tuple[Calls, Calls]:
    """(items the parser read, entries the extractor turned into episodes)."""
    return (
        Calls(monkeypatch, digests.parse.feeds, "_rss_item"),
        Calls(monkeypatch, digests.extract.episodes, "extract_entry"),
    )


def read(data: bytes, known: dict[str, str] | None = None, salt: str = SALT) -> ParsedSource:
    return parse_bytes(data, "https://example.test/feed.xml", items=ItemHashes(salt, known or {}))


def known_of(found: list[Episode]) -> dict[str, str]:
    return {e.raw_hash: e.guid for e in found if e.raw_hash is not None}


def test_a_reread_skips_every_unchanged_item_before_any_text_work(
    text_work: tuple[Calls, Calls],
) -> None:
    items, extracted = text_work
    first = build_episodes(read(FEED), SHOW, REPO)
    assert (items.count, extracted.count) == (3, 3)
    plain = build_episodes(parse_bytes(FEED, "https://example.test/feed.xml"), SHOW, REPO)
    # Hashing changes nothing an episode says.
    assert [e.content_hash() for e in first] == [e.content_hash() for e in plain]
    assert len(known_of(first)) == 3

    before = (items.count, extracted.count)
    again = read(FEED, known_of(first))
    assert again.entries == () and [g for _, g in again.skipped] == [e.guid for e in first]
    assert build_episodes(again, SHOW, REPO) == []
    assert (items.count, extracted.count) == before


def test_a_changed_item_is_read_again_and_only_it(text_work: tuple[Calls, Calls]) -> None:
    items, extracted = text_work
    known = known_of(build_episodes(read(FEED), SHOW, REPO))
    changed = rss(rss_item(5), rss_item(4, summary="A corrected summary."), rss_item(3))
    (episode,) = build_episodes(read(changed, known), SHOW, REPO)
    assert episode.guid == "pytorch-2026-10-04" and episode.summary == "A corrected summary."
    assert (items.count, extracted.count) == (4, 4)


@pytest.mark.parametrize(
    "salt", [f"{SHOW}\x00other/repo", f"Other\x00{REPO}"], ids=["repo", "show"]
)
def test_another_show_or_repo_reads_every_item_again(salt: str) -> None:
    known = known_of(build_episodes(read(FEED), SHOW, REPO))
    assert len(read(FEED, known, salt=salt).entries) == 3


def test_the_feed_head_outside_items_is_salt() -> None:
    known = known_of(build_episodes(read(FEED), SHOW, REPO))
    renamed = FEED.replace(b"<title>PyTorch</title>", b"<title>PyTorch Daily</title>", 1)
    assert len(read(renamed, known).entries) == 3  # headlines lose the show's name by it
    dated = FEED.replace(b"<description>Test feed", b"<lastBuildDate>now</lastBuildDate><x>", 1)
    assert read(dated.replace(b"</description>", b"</x>", 1), known).entries == ()


def test_undated_items_and_linked_transcripts_are_always_read() -> None:
    undated = rss_item(2).replace("<pubDate>Fri, 02 Oct 2026 13:00:00 GMT</pubDate>", "")
    linked = rss_item(1).replace(
        "</item>", '<podcast:transcript url="https://example.test/t.vtt" type="text/vtt"/></item>'
    )
    data = rss(rss_item(3), undated, linked).replace(
        b"<rss ", b'<rss xmlns:podcast="https://podcastindex.org/namespace/1.0" ', 1
    )
    found = {e.guid: e.raw_hash for e in build_episodes(read(data), SHOW, REPO)}
    assert found["pytorch-2026-10-03"] is not None
    assert found["pytorch-2026-10-02"] is None and found["pytorch-2026-10-01"] is None
    assert len(read(data, known_of(build_episodes(read(data), SHOW, REPO))).entries) == 2


def test_a_skipped_copy_of_a_guid_still_wins_over_a_later_one() -> None:
    second = rss_item(4, summary="A second copy under the same guid.")
    data = rss(rss_item(4), second)
    (first,) = build_episodes(read(data), SHOW, REPO)
    again = read(data, known_of([first]))
    assert len(again.entries) == 1  # the second copy, read: its hash is not stored
    assert build_episodes(again, SHOW, REPO) == []  # and dropped: the first copy comes first


@pytest.mark.parametrize(
    "trap",
    [
        "<!-- an old <item>draft</item> -->",
        "<podcast:x><![CDATA[<item>quoted</item>]]></podcast:x>",
        '<item><title>One</title><guid>e</guid></item><item a="1"/>',
    ],
    ids=["comment", "cdata", "self-closing"],
)
def test_items_that_do_not_line_up_are_read_without_hashes(trap: str) -> None:
    data = rss(trap, rss_item(5), rss_item(4)).replace(
        b"<rss ", b'<rss xmlns:podcast="https://podcastindex.org/namespace/1.0" ', 1
    )
    parsed = read(data)
    assert parsed.entries and all(e.raw_hash is None for e in parsed.entries)
    plain = parse_bytes(data, "https://example.test/feed.xml")
    assert build_episodes(parsed, SHOW, REPO) == build_episodes(plain, SHOW, REPO)


def test_spans_pair_start_and_end_tags_in_end_order() -> None:
    data = b"<rss><channel><item>a<item>b</item></item><item>c</item></channel></rss>"
    assert item_spans(data, "item", 100) == [(21, 35), (14, 42), (42, 56)]
    assert item_spans(data, "item", 3) is None  # the parse's cap: no hashes at all
    assert item_spans(b"<item><item></item>", "item", 100) is None


def test_skipped_items_mean_the_feed_is_not_read_for_the_first_time() -> None:
    """With every stored item skipped, a new undated one is news (dated now), not placed
    among the new dated ones as on a first read."""
    newer = Episode(
        guid="d1", show=SHOW, title="t", headline="h", published_at=SAMPLE_NOW - timedelta(days=1)
    )
    older = newer.model_copy(update={"guid": "d3", "published_at": SAMPLE_NOW - timedelta(days=3)})
    undated = newer.model_copy(update={"guid": "u", "published_at": UNKNOWN_DATE})
    first_read = decide_upsert({}, [newer, undated, older], SAMPLE_NOW)
    assert first_read.results[1].episode.published_at == SAMPLE_NOW - timedelta(days=2)
    later = decide_upsert({}, [newer, undated, older], SAMPLE_NOW, skipped=3)
    assert later.results[1].episode.published_at == SAMPLE_NOW


def test_an_unchanged_episode_from_bytes_that_hash_differently_is_rehashed() -> None:
    episode = Episode(guid="g", show=SHOW, title="t", headline="h", published_at=SAMPLE_NOW)
    row = StoredEpisode(7, episode.content_hash(), SAMPLE_NOW, SAMPLE_NOW, raw_hash="old")
    intents = decide_upsert(
        {(SHOW, "g"): row}, [episode.model_copy(update={"raw_hash": "new"})], SAMPLE_NOW
    )
    assert [r.status for r in intents.results] == [EpisodeStatus.UNCHANGED]
    assert [(r.id, r.raw_hash) for r in intents.rehashes] == [(7, "new")]
    assert not intents.updates and not intents.inserts
    same = episode.model_copy(update={"raw_hash": "old"})
    assert decide_upsert({(SHOW, "g"): row}, [same], SAMPLE_NOW).rehashes == ()


# -- through the store: polls of a feed answered 200 without validators ---------------------


def settings_for(url: str) -> Settings:
    return Settings(
        shows=[ShowConfig(name=SHOW, feed=url, repo=REPO)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id="T1",
        slack_bot_token=None,
    )


async def test_an_unchanged_200_does_no_text_work_and_a_changed_item_is_still_updated(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient, text_work: tuple[Calls, Calls]
) -> None:
    items, extracted = text_work
    settings = settings_for(feed_server.route("/feed.xml", FEED))
    store.ensure_show(SHOW, "", REPO)
    first = await poll_show(settings, store, http, settings.shows[0], SAMPLE_NOW)
    assert first.new == 3 and (items.count, extracted.count) == (3, 3)

    later = SAMPLE_NOW + timedelta(hours=1)
    second = await poll_show(settings, store, http, settings.shows[0], later)
    assert second.status == "ok" and second.unchanged and second.new == 0
    assert (items.count, extracted.count) == (3, 3)  # no item read, none extracted

    changed = rss(rss_item(5), rss_item(4, summary="A corrected summary."), rss_item(3))
    feed_server.route("/feed.xml", changed)
    third = await poll_show(settings, store, http, settings.shows[0], later + timedelta(hours=1))
    assert [e.guid for e in third.changed] == ["pytorch-2026-10-04"] and third.new == 0
    assert (items.count, extracted.count) == (4, 4)
    stored = {e.guid: e.summary for e in store.recent(3, [SHOW])}
    assert stored["pytorch-2026-10-04"] == "A corrected summary."

    # And the corrected item is skipped from now on.
    fourth = await poll_show(settings, store, http, settings.shows[0], later + timedelta(hours=2))
    assert fourth.unchanged and (items.count, extracted.count) == (4, 4)


async def test_episodes_stored_without_hashes_get_them_on_the_next_read(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient, text_work: tuple[Calls, Calls]
) -> None:
    """Rows from before item hashes (or bytes reformatted around the same episode) are
    read once more, found unchanged, and given the hash; the read after that skips them."""
    items, _ = text_work
    settings = settings_for(feed_server.route("/feed.xml", FEED))
    store.ensure_show(SHOW, "", REPO)
    await poll_show(settings, store, http, settings.shows[0], SAMPLE_NOW)
    with store.engine.begin() as conn:
        conn.execute(sa.update(episodes).values(raw_hash=None))

    second = await poll_show(settings, store, http, settings.shows[0], SAMPLE_NOW)
    assert second.unchanged and len(second.episodes) == 3 and items.count == 6
    assert len(store.item_hashes(SHOW)) == 3
    third = await poll_show(settings, store, http, settings.shows[0], SAMPLE_NOW)
    assert third.unchanged and third.episodes == () and items.count == 6


def atom(*summaries: str) -> bytes:
    entries = "".join(
        f"<entry><id>urn:e{n}</id><title>PyTorch: Entry {n}</title>"
        f"<updated>2026-10-0{n}T13:00:00Z</updated><summary>{text}</summary></entry>"
        for n, text in enumerate(summaries, start=1)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>PyTorch</title><id>urn:feed</id>{entries}</feed>"
    ).encode()


def test_atom_entries_are_hashed_and_skipped_the_same_way() -> None:
    data = atom("PR 1 lands.", "PR 2 lands.")
    known = known_of(build_episodes(read(data), SHOW, REPO))
    assert len(known) == 2
    assert read(data, known).entries == ()
    (entry,) = read(atom("PR 1 lands.", "PR 3 lands instead."), known).entries
    assert entry.guid == "urn:e2"
