"""`/episodes why <episode>` over real signed HTTP, each reason produced by real polls (a feed
on loopback, the Slack fake, SQLite and PostgreSQL): posted (with its permalink), updated
(the episode changed and the digest was edited), skipped by the filter (which term), held by
a pause, before the subscription, Slack refusing it, Slack failing for now (500s: tried
again by the next poll), the channel archived, another show's episode (not
followed here), not yet polled, the feed failing, not in the feed; and the pure decision as
a table."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from config.settings import ShowConfig
from digests.decide.why import Delivered, Reason, explain
from digests.filters import Verdict
from digests.models import Episode
from digests.store import Store
from digests.store.ledger import Ledger
from digests.types import FetchState, LedgerState, Subscription
from tests.feedserver import FeedServer
from tests.fixtures.app import make_settings
from tests.fixtures.control import START, Clock, Rig, app_with_clock
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

CHANNEL = "C0TEST0001"


def link(day: int) -> str:
    return f"https://example.test/pytorch/2026-10-{day:02d}"


def said(lines: list[str]) -> str:
    """The answer under the episode's title line."""
    return lines[0].split("\n")[-1]


async def test_why_a_posted_digest_links_to_it(rig: Rig) -> None:
    rig.serve(1)
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    lines = rig.slash(f"why <{link(1)}>")
    assert lines[0].split("\n")[0] == "*Daily Briefing 1* (1 Oct 2026, PyTorch)"
    (posted,) = rig.fake.messages(CHANNEL)
    (call,) = rig.fake.calls_to("chat.getPermalink")
    assert call.params["channel"] == CHANNEL
    assert call.params["message_ts"] == posted["ts"]
    assert said(lines) == (
        "Posted here. "
        f"<https://fake.slack.test/archives/{CHANNEL}/p{posted['ts'].replace('.', '')}"
        "|See it in the channel.>"
    )


async def test_why_an_edited_digest_says_updated_and_when(rig: Rig) -> None:
    rig.serve(1)
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    ledger = Ledger.for_store(rig.store)
    (first,) = ledger.all_rows()
    assert first.edited_at is None

    # The feed rewrites the episode's description: the next poll edits the digest in place.
    rig.feed.route("/feed.xml", rss(rss_item(1, summary="A corrected account of day one.")))
    await rig.poll(START + timedelta(hours=1))
    (posted,) = rig.fake.messages(CHANNEL)
    assert "corrected account" in str(posted["blocks"])
    assert len(rig.fake.calls_to("chat.update")) == 1
    (row,) = ledger.all_rows()
    assert row.edited_at is not None and row.ts == posted["ts"]

    edited = row.edited_at.astimezone(UTC)
    expected = (
        f"Posted here, and updated {edited:%a} {edited.day} {edited:%b %Y %H:%M} UTC because "
        "the episode changed. "
        f"<https://fake.slack.test/archives/{CHANNEL}/p{posted['ts'].replace('.', '')}"
        "|See it in the channel.>"
    )
    assert said(rig.slash(f"why <{link(1)}>")) == expected
    assert said(rig.slash("why daily briefing 1")) == expected

    # An unchanged poll neither edits again nor moves the time `why` gives.
    await rig.poll(START + timedelta(hours=2))
    assert len(rig.fake.calls_to("chat.update")) == 1
    assert ledger.all_rows()[0].edited_at == row.edited_at


async def test_why_names_the_term_the_pause_and_the_subscription(rig: Rig) -> None:
    rig.serve(1, 2)
    rig.slash("subscribe PyTorch -rocm +fix")
    await rig.poll(START)  # the backfill: day 2 only
    assert rig.posted() == ["PyTorch:pytorch-2026-10-02"]
    assert said(rig.slash("why 2026-10-01")).startswith(
        "Not posted: it came out before this channel subscribed ("
    )

    rig.feed.route(
        "/feed.xml",
        rss(
            rss_item(4, headline="Quiet Day", prs="Nothing landed today."),
            rss_item(3, headline="ROCm Kernels Land"),
            rss_item(2),
            rss_item(1),
        ),
    )
    await rig.poll(datetime(2026, 10, 4, 14, 0, tzinfo=UTC))
    assert said(rig.slash("why ROCm Kernels")) == (
        "Skipped by this channel's filter: it mentions “rocm”, which is excluded."
    )
    assert said(rig.slash("why quiet day")) == (
        "Skipped by this channel's filter: it does not mention “fix”, which is required."
    )

    rig.clock.now = datetime(2026, 10, 4, 15, 0, tzinfo=UTC)
    rig.slash("pause")
    rig.serve(1, 2, 5)
    await rig.poll(datetime(2026, 10, 5, 14, 0, tzinfo=UTC))
    assert said(rig.slash("why 2026-10-05")) == (
        "Not posted: it arrived while *PyTorch* was paused here (until resumed)."
    )
    rig.clock.now = datetime(2026, 10, 5, 15, 0, tzinfo=UTC)
    rig.slash("resume")
    assert said(rig.slash("why 2026-10-05")) == (
        "Not posted: it arrived while *PyTorch* was paused here (until Mon 5 Oct 2026 15:00 UTC)."
    )


async def test_why_in_an_archived_channel(rig: Rig) -> None:
    rig.serve(1)
    rig.slash("subscribe PyTorch")
    rig.fake.channel_error(CHANNEL, "is_archived")
    await rig.poll(START)
    assert said(rig.slash(f"why {link(1)}")) == (
        "Not posted: posting here is paused because the channel is archived."
    )


async def test_why_a_digest_slack_refused(rig: Rig) -> None:
    rig.serve(1)
    rig.slash("subscribe PyTorch")
    rig.fake.fail_next("chat.postMessage", error="msg_too_long")
    await rig.poll(START)
    assert rig.posted() == []
    line = said(rig.slash(f"why {link(1)}"))
    assert line.startswith("Slack refused to post it here (`msg_too_long`, last tried "), line
    assert line.endswith("it is tried again only if the episode changes.")


async def test_why_a_digest_slack_failed_for_now_then_posted(rig: Rig) -> None:
    rig.serve(1)
    rig.slash("subscribe PyTorch")
    rig.fake.fail_next("chat.postMessage", status=500, times=50)  # every retry of this poll
    await rig.poll(START)
    assert rig.posted() == []
    line = said(rig.slash(f"why {link(1)}"))
    assert line.startswith("Not posted yet: Slack answered `internal_error` when it was tried ")
    assert line.endswith("; the next poll tries again (Thu 1 Oct 2026 14:15 UTC)."), line
    rig.fake.clear_faults()  # Slack is back
    await rig.poll(START + timedelta(hours=1))
    assert rig.posted() == ["PyTorch:pytorch-2026-10-01"]
    assert said(rig.slash(f"why {link(1)}")).startswith("Posted here.")


async def test_why_an_episode_the_archive_lacks(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    assert rig.slash(f"why {link(9)}") == [
        "*PyTorch* has not been polled yet (next poll: not scheduled yet); it is looked for then."
    ]
    rig.serve(1)
    await rig.poll(START)
    assert rig.slash(f"why {link(9)}") == [
        "No episode has that link, and the feeds read fine: it is not in the feed."
    ]
    rig.feed.route("/feed.xml", b"down for maintenance", status=500)
    await rig.poll(START + timedelta(hours=1))
    (line,) = rig.slash(f"why {link(9)}")
    assert line.startswith("Not in the archive: the feed of *PyTorch* is failing (`")
    assert " next try " in line


def jax_item(day: int, headline: str, prs: str = "") -> str:
    """An item of a second show, "JAX", with its own guid and link."""
    item = rss_item(day, headline=headline, prs=prs)
    return item.replace("PyTorch: ", "JAX: ").replace("pytorch", "jax")


@pytest.fixture
def two_shows(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> Iterator[Rig]:
    torch = feed_server.route("/feed.xml", rss(rss_item(1)))
    jax = feed_server.route(
        "/jax.xml",
        rss(
            jax_item(3, "Sharding Day", "PR 4242 shards the arrays."),
            jax_item(1, "Daily Briefing 1"),
        ),
    )
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        shows=[
            ShowConfig(name="PyTorch", feed=torch, repo="pytorch/pytorch"),
            ShowConfig(name="JAX", feed=jax, repo="jax-ml/jax"),
        ],
        thread_replies=False,
    )
    clock = Clock()
    with app_with_clock(settings, store, slack_fake, clock) as sender:
        yield Rig(settings, store, slack_fake, sender, clock, feed_server, http, deliverer)


async def test_why_of_a_show_not_followed_here_says_so(two_shows: Rig) -> None:
    rig = two_shows
    rig.slash("subscribe PyTorch")
    await rig.poll(START + timedelta(days=2))
    assert rig.posted() == ["PyTorch:pytorch-2026-10-01"]
    not_followed = (
        "This channel does not follow *JAX*; `/episodes subscribe JAX` would post its new "
        "episodes here, not this one."
    )
    for text in ("why sharding day", "why 2026-10-03", "why #4242"):
        lines = rig.slash(text)
        assert lines[0] == f"*Sharding Day* (3 Oct 2026, JAX)\n{not_followed}", text
    # The channel's own shows come first: day 1 of both is PyTorch's here.
    lines = rig.slash("why 2026-10-01")
    assert lines[0].startswith("*Daily Briefing 1* (1 Oct 2026, PyTorch)\nPosted here.")
    lines = rig.slash("why no such title words")
    assert lines[0] == (
        ":warning: No episode matches that; try an episode link, a date, words of its title or #PR."
    )
    assert lines[1].startswith("Usage: `/episodes why &lt;")


async def test_why_takes_a_show_first_as_nearby_does(two_shows: Rig) -> None:
    rig = two_shows
    rig.slash("subscribe PyTorch")
    await rig.poll(START + timedelta(days=2))
    # Day 1 of both shows: named first, it is JAX's, not the channel's own PyTorch one.
    for text in ("why JAX 2026-10-01", "why jax 2026-10-01", 'why "JAX" 2026-10-01'):
        lines = rig.slash(text)
        assert lines[0].startswith(
            "*Daily Briefing 1* (1 Oct 2026, JAX)\nThis channel does not follow *JAX*"
        ), text
    lines = rig.slash("why PyTorch 2026-10-01")
    assert lines[0].startswith("*Daily Briefing 1* (1 Oct 2026, PyTorch)\nPosted here.")
    assert rig.slash("why JAX #4242")[0].startswith("*Sharding Day* (3 Oct 2026, JAX)")
    # A show named is the only one looked in.
    assert rig.slash("why PyTorch #4242")[0].startswith(":warning: No episode matches that")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("why", "Why what? Give an episode link, a date, words of its title, or #PR."),
        (
            "why no such title words",
            "No episode matches that; try an episode link, a date, words of its title or #PR.",
        ),
    ],
)
async def test_why_with_nothing_to_go_on(rig: Rig, text: str, reason: str) -> None:
    rig.serve(1)
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    lines = rig.slash(text)
    assert lines[0] == f":warning: {reason}"
    assert lines[1].startswith("Usage: `/episodes why &lt;")


async def test_help_lists_why(rig: Rig) -> None:
    assert "`/episodes why &lt;episode link | date | words of a title | #PR&gt;`" in "\n".join(
        rig.slash("help")
    )


NOW = datetime(2026, 10, 6, 12, 0, tzinfo=UTC)
EPISODE = Episode(
    guid="g",
    show="PyTorch",
    title="PyTorch: Inductor and ROCm",
    headline="Inductor and ROCm",
    published_at=NOW - timedelta(hours=2),
)
SUB = Subscription("T", "C", "PyTorch", keywords=("inductor",), created_at=NOW - timedelta(days=9))
POLLED = FetchState(last_polled_at=NOW, last_success_at=NOW)


@pytest.mark.parametrize(
    ("episode", "sub", "row", "feed", "seen", "reason"),
    [
        (EPISODE, SUB, Delivered(LedgerState.POSTED, ts="1.2"), POLLED, None, Reason.POSTED),
        (
            EPISODE,
            SUB,
            Delivered(LedgerState.POSTED, ts="1.2", edited_at=NOW),
            POLLED,
            None,
            Reason.UPDATED,
        ),
        (EPISODE, SUB, Delivered(LedgerState.PENDING), POLLED, None, Reason.ON_ITS_WAY),
        (EPISODE, SUB, Delivered(LedgerState.POSTING), POLLED, None, Reason.ON_ITS_WAY),
        (EPISODE, SUB, Delivered(LedgerState.FAILED, error="x"), POLLED, None, Reason.FAILED),
        (EPISODE, SUB, Delivered(LedgerState.PENDING, error="x"), POLLED, None, Reason.RETRYING),
        (EPISODE, SUB, Delivered(LedgerState.PAUSED), POLLED, None, Reason.CHANNEL_PAUSED),
        (
            EPISODE,
            Subscription(
                "T", "C", "PyTorch", created_at=SUB.created_at, held_at=NOW - timedelta(hours=3)
            ),
            None,
            POLLED,
            NOW - timedelta(hours=1),
            Reason.HELD,
        ),
        (
            EPISODE,
            Subscription("T", "C", "PyTorch", keywords=("-rocm",), created_at=SUB.created_at),
            None,
            POLLED,
            None,
            Reason.FILTERED,
        ),
        (
            EPISODE,
            Subscription("T", "C", "PyTorch", created_at=NOW),
            None,
            POLLED,
            NOW - timedelta(hours=1),
            Reason.BEFORE_SUBSCRIPTION,
        ),
        (
            EPISODE,
            Subscription(
                "T", "C", "PyTorch", created_at=SUB.created_at, paused_reason="is_archived"
            ),
            None,
            POLLED,
            None,
            Reason.CHANNEL_PAUSED,
        ),
        (EPISODE, SUB, None, POLLED, None, Reason.PASSED_OVER),
        (EPISODE, None, None, POLLED, None, Reason.NOT_SUBSCRIBED),
        (None, SUB, None, FetchState(), None, Reason.NOT_YET_POLLED),
        (
            None,
            SUB,
            None,
            FetchState(last_polled_at=NOW, failures=2, last_error="HTTP 500"),
            None,
            Reason.FEED_FAILING,
        ),
        (None, SUB, None, POLLED, None, Reason.NOT_IN_FEED),
    ],
)
def test_explain(
    episode: Episode | None,
    sub: Subscription | None,
    row: Delivered | None,
    feed: FetchState,
    seen: datetime | None,
    reason: Reason,
) -> None:
    assert explain(episode, sub, row, feed, first_seen=seen).reason is reason


def test_explain_a_daily_catch_up_that_lists_the_episode() -> None:
    """It arrived in a pause (held), but the catch-up message of a daily channel lists it."""
    sub = Subscription(
        "T",
        "C",
        "PyTorch",
        created_at=SUB.created_at,
        daily_at="17:00",
        held_at=NOW - timedelta(hours=3),
        held_until=NOW,
    )
    seen = NOW - timedelta(hours=1)
    assert explain(EPISODE, sub, None, POLLED, first_seen=seen).reason is Reason.HELD
    posted = Delivered(LedgerState.POSTED, ts="1.2", updated_at=NOW)
    answer = explain(EPISODE, sub, None, POLLED, first_seen=seen, caught_up=posted)
    assert (answer.reason, answer.ts) == (Reason.CAUGHT_UP, "1.2")
    pending = Delivered(LedgerState.PENDING)
    answer = explain(EPISODE, sub, None, POLLED, first_seen=seen, caught_up=pending)
    assert answer.reason is Reason.ON_ITS_WAY


def test_explain_says_which_term() -> None:
    sub = Subscription("T", "C", "PyTorch", keywords=("+cuda", "inductor"))
    answer = explain(EPISODE, sub, None, POLLED)
    assert answer.check is not None
    assert (answer.check.verdict, answer.check.term) == (Verdict.MISSING_REQUIRED, "cuda")
