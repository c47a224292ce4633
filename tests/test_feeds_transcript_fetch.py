"""The transcript phase on loopback: each of the five types fetched once, stored (SQLite and
PostgreSQL), its PRs read with their whole sentence; a 404, one over its cap and one that
redirects to a private address fall back to the feed's excerpt."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

import digests.sources.fetch
from digests.extract.episodes import build_episodes
from digests.linked.documents import MAX_ATTEMPTS
from digests.linked.transcripts import (
    TranscriptReport,
    attach_transcripts,
    choose_link,
    decode_transcript,
)
from digests.models import Episode, TranscriptLink, guid_key
from digests.parse import parse_bytes
from digests.sources.fetch import make_http_client
from digests.store import Store
from digests.store.transcripts import TranscriptStore
from tests.feedserver import FeedServer
from tests.test_feeds_transcripts import HTML, JSON, PLAIN, SRT, VTT

NOW = datetime(2026, 10, 6, 9, 0, tzinfo=UTC)
REPO = "pytorch/pytorch"
SHOW = "PyTorch"
CUT = "Paired with PR 199734, which posts…"
SENTENCE = "Paired with PR 199734, which posts the autotune results."
BODIES = {
    "text/vtt": VTT,
    "application/x-subrip": SRT,
    "application/json": JSON,
    "text/html": HTML,
    "text/plain": PLAIN,
}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with make_http_client(timeout=5.0) as c:
        yield c


def feed(transcripts: str, *, guid: str = "ep-1") -> bytes:
    return (
        '<?xml version="1.0"?><rss version="2.0" '
        'xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel><title>PyTorch</title>'
        f"<item><guid>{guid}</guid><title>Autotune day</title>"
        "<pubDate>Mon, 05 Oct 2026 13:00:00 GMT</pubDate>"
        f"<description>{CUT} Also PR 42.</description>{transcripts}</item>"
        "</channel></rss>"
    ).encode()


def episodes_linking(server: FeedServer, path: str, kind: str, **kw: str) -> list[Episode]:
    link = f'<podcast:transcript url="{path.lstrip("/")}" type="{kind}"/>'
    parsed = parse_bytes(feed(link, **kw), server.url("/feed.xml"))
    return build_episodes(parsed, SHOW, REPO)


async def attach(
    episodes: list[Episode],
    client: httpx.AsyncClient,
    store: Store,
    **kw: object,
) -> tuple[tuple[Episode, ...], TranscriptReport]:
    return await attach_transcripts(
        episodes,
        show=SHOW,
        repo=REPO,
        client=client,
        transcripts=TranscriptStore(store),
        now=NOW,
        allow_private=True,  # a configured show on loopback; the guard has its own test
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("kind", sorted(BODIES))
async def test_each_type_is_fetched_once_and_its_prs_read_whole(
    kind: str, feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    feed_server.route("/t/ep-1", BODIES[kind], content_type=f"{kind}; charset=utf-8")
    before = episodes_linking(feed_server, "/t/ep-1", kind)
    assert before[0].pull_requests[0].context == CUT  # the feed's excerpt, cut at the PR

    (episode,), report = await attach(before, client, store)
    assert report == TranscriptReport(linked=1, used=1, fetched=1, failed=0)
    assert (
        episode.transcript
        == "Paired with PR 199734, which posts the autotune results.\n\nGreat, thanks."
    )
    assert [(r.number, r.context) for r in episode.pull_requests] == [
        (199734, SENTENCE),
        (42, before[0].pull_requests[1].context),  # named only in the feed: kept as it was
    ]
    assert episode.summary == before[0].summary
    assert episode.content_hash() != before[0].content_hash()  # the posted digest is edited

    # The next poll reads it back: no second fetch, the same episode.
    (again,), report = await attach(episodes_linking(feed_server, "/t/ep-1", kind), client, store)
    assert (again, report.fetched, report.used) == (episode, 0, 1)
    assert len(feed_server.requests_to("/t/ep-1")) == 1
    stored = TranscriptStore(store).get(SHOW, [guid_key("ep-1")])[guid_key("ep-1")]
    assert (stored.status, stored.url) == ("ok", feed_server.url("/t/ep-1"))


async def test_a_transcript_that_404s_keeps_the_excerpt_and_is_not_asked_again(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    before = episodes_linking(feed_server, "/gone.vtt", "text/vtt")
    (episode,), report = await attach(before, client, store)
    assert episode == before[0]
    assert (report.fetched, report.failed, report.used) == (1, 1, 0)
    await attach(episodes_linking(feed_server, "/gone.vtt", "text/vtt"), client, store)
    assert len(feed_server.requests_to("/gone.vtt")) == 1
    stored = TranscriptStore(store).get(SHOW, [guid_key("ep-1")])[guid_key("ep-1")]
    assert stored.status == "failed"
    assert stored.error is not None and "HTTP 404" in stored.error
    assert stored.attempts == MAX_ATTEMPTS


async def test_a_transcript_over_its_cap_keeps_the_excerpt(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    feed_server.huge("/big.txt", 200_000, content_type="text/plain")
    before = episodes_linking(feed_server, "/big.txt", "text/plain")
    (episode,), report = await attach(before, client, store, max_bytes=64 * 1024)
    assert episode == before[0]
    assert report.failed == 1
    stored = TranscriptStore(store).get(SHOW, [guid_key("ep-1")])[guid_key("ep-1")]
    assert stored.error is not None and "larger than 64 KB" in stored.error


async def test_a_redirect_to_a_private_address_is_refused_for_a_user_added_show(
    feed_server: FeedServer,
    client: httpx.AsyncClient,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 127.0.0.1 plays a public host here; the redirect's target is a private one.
    public = digests.sources.fetch.is_public_address
    monkeypatch.setattr(
        digests.sources.fetch, "is_public_address", lambda a: a == "127.0.0.1" or public(a)
    )
    feed_server.route("/private.vtt", VTT, content_type="text/vtt")
    feed_server.redirect("/t.vtt", f"http://10.0.0.1:{feed_server.port}/private.vtt")
    before = episodes_linking(feed_server, "/t.vtt", "text/vtt")
    (episode,), report = await attach_transcripts(
        before,
        show=SHOW,
        repo=REPO,
        client=client,
        transcripts=TranscriptStore(store),
        now=NOW,
        allow_private=False,
    )
    assert episode == before[0]
    assert report.failed == 1
    assert len(feed_server.requests_to("/t.vtt")) == 1  # the public hop was asked
    assert feed_server.requests_to("/private.vtt") == []
    stored = TranscriptStore(store).get(SHOW, [guid_key("ep-1")])[guid_key("ep-1")]
    assert stored.error is not None and "private address 10.0.0.1" in stored.error


async def test_a_user_added_show_never_reaches_loopback(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    feed_server.route("/t.vtt", VTT, content_type="text/vtt")
    before = episodes_linking(feed_server, "/t.vtt", "text/vtt")
    (episode,), _ = await attach_transcripts(
        before,
        show=SHOW,
        repo=REPO,
        client=client,
        transcripts=TranscriptStore(store),
        now=NOW,
    )
    assert episode == before[0]
    assert feed_server.requests_to("/t.vtt") == []


async def test_a_server_error_is_tried_again_a_few_times_then_left(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    feed_server.route("/t.vtt", b"busy", status=500, content_type="text/plain")
    for _ in range(MAX_ATTEMPTS + 2):
        await attach(episodes_linking(feed_server, "/t.vtt", "text/vtt"), client, store)
    assert len(feed_server.requests_to("/t.vtt")) == MAX_ATTEMPTS


async def test_a_changed_link_is_fetched_again(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    feed_server.route("/a.vtt", "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nOld words.\n")
    feed_server.route("/b.vtt", VTT)
    await attach(episodes_linking(feed_server, "/a.vtt", "text/vtt"), client, store)
    (episode,), report = await attach(
        episodes_linking(feed_server, "/b.vtt", "text/vtt"), client, store
    )
    assert report.fetched == 1
    assert episode.pull_requests[0].context == SENTENCE


async def test_a_few_new_fetches_per_poll_newest_first(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    items = "".join(
        f"<item><guid>g{n}</guid><title>Ep {n}</title>"
        f"<pubDate>Mon, {n:02d} Oct 2026 13:00:00 GMT</pubDate>"
        f'<podcast:transcript url="t/{n}.vtt" type="text/vtt"/></item>'
        for n in range(1, 6)
    )
    for n in range(1, 6):
        feed_server.route(f"/t/{n}.vtt", VTT, content_type="text/vtt")
    data = (
        '<rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0">'
        f"<channel><title>S</title>{items}</channel></rss>"
    ).encode()
    episodes = build_episodes(parse_bytes(data, feed_server.url("/feed.xml")), SHOW, REPO)
    _, report = await attach(episodes, client, store, per_poll=2)
    assert (report.linked, report.fetched) == (5, 2)
    asked = {r.path for r in feed_server.requests}
    assert asked == {"/t/5.vtt", "/t/4.vtt"}


async def test_episodes_without_links_pass_through_untouched(
    client: httpx.AsyncClient, store: Store
) -> None:
    episodes = build_episodes(parse_bytes(feed(""), "https://x.example/f"), SHOW, REPO)
    out, report = await attach(episodes, client, store)
    assert out == tuple(episodes)
    assert report == TranscriptReport()


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        ([], None),
        ([("a", "text/html"), ("b", "text/vtt")], "b"),
        ([("a", "text/plain"), ("b", "application/srt")], "b"),
        ([("a", "application/pdf"), ("b", "text/plain")], "b"),
        ([("a", "application/pdf")], "a"),
    ],
)
def test_choose_link(links: list[tuple[str, str]], expected: str | None) -> None:
    chosen = choose_link([TranscriptLink(url=u, type=t) for u, t in links])
    assert (chosen.url if chosen else None) == expected


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        ("é".encode(), None, "é"),
        ("é".encode("latin-1"), "text/plain; charset=ISO-8859-1", "é"),
        ("\ufeffé".encode(), "text/plain; charset=latin-1", "é"),
        ("é".encode("utf-16"), None, "é"),
        (b"\xff", "text/plain; charset=nonsense", "\ufffd"),
    ],
)
def test_decode_transcript(content: bytes, content_type: str | None, expected: str) -> None:
    assert decode_transcript(content, content_type) == expected


async def test_the_poll_stores_episodes_read_with_their_transcripts(
    feed_server: FeedServer, client: httpx.AsyncClient, store: Store
) -> None:
    from bot.jobs.pipeline import poll_show
    from config.settings import ScheduleConfig, Settings, ShowConfig

    feed_server.route("/t/ep-1.vtt", VTT, content_type="text/vtt")
    url = feed_server.route(
        "/feed.xml", feed('<podcast:transcript url="t/ep-1.vtt" type="text/vtt"/>')
    )
    settings = Settings(
        shows=[ShowConfig(name=SHOW, feed=url, repo=REPO)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id="T1",
        slack_bot_token=None,
    )
    store.ensure_show(SHOW, "", REPO)
    first = await poll_show(settings, store, client, settings.shows[0], NOW)
    (episode,) = first.episodes
    assert episode.pull_requests[0].context == SENTENCE
    assert "Great, thanks." in episode.transcript

    # The feed changes (a new etag-less body), the transcript is read back, not fetched.
    feed_server.route(
        "/feed.xml", feed('<podcast:transcript url="t/ep-1.vtt" type="text/vtt"/>') + b"\n"
    )
    second = await poll_show(settings, store, client, settings.shows[0], NOW)
    assert second.changed == () and second.episodes[0].pull_requests[0].context == SENTENCE
    assert len(feed_server.requests_to("/t/ep-1.vtt")) == 1
