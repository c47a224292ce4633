"""The pipeline's pure phases on their own: fetch state after a poll, the decision over a
``PlanState``, and rendering each due episode once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.jobs.ingest import FeedRead
from bot.jobs.plan import PlanState, decide_due, render_due
from bot.jobs.poll_state import failed_state, polled_state
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.decide.deliveries import episode_key
from digests.errors import FeedUnavailable, FetchError
from digests.models import Episode
from digests.render.renderer import Renderer
from digests.sources.fetch import FetchResult
from digests.types import Action, FetchState, LedgerEntry, LedgerState, Subscription

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
SETTINGS = Settings(
    shows=[ShowConfig(name="PyTorch", feed="feed.xml")],
    schedule=ScheduleConfig(poll_minutes=15, max_backoff_minutes=120),
    slack_bot_token=None,
)


def test_a_failed_poll_counts_and_backs_off_keeping_the_validators() -> None:
    before = FetchState(etag='"v1"', failures=2, failing_notified=True)
    after = failed_state(SETTINGS, before, FetchError("https://f.example/x", "HTTP 500"), NOW)
    assert (after.etag, after.failures, after.failing_notified) == ('"v1"', 3, True)
    assert after.last_polled_at == NOW and after.last_error is not None
    assert after.next_poll_at == NOW + timedelta(minutes=120)  # 15 × 2³, capped at 120


def test_a_failed_poll_waits_as_long_as_the_feed_asks() -> None:
    exc = FeedUnavailable("https://f.example/x", "HTTP 503", retry_after=3000)
    after = failed_state(SETTINGS, FetchState(), exc, NOW)
    assert after.next_poll_at == NOW + timedelta(seconds=3000)


@pytest.mark.parametrize(
    ("etag", "kept"),
    [('"v2"', '"v2"'), (None, '"v1"')],  # a 304 often re-sends no validators
)
def test_a_good_poll_ends_the_streak_but_not_the_notice_flag(etag: str | None, kept: str) -> None:
    before = FetchState(etag='"v1"', failures=4, last_error="x", failing_notified=True)
    read = FeedRead(FetchResult("not_modified", None, "u", etag=etag, max_age=3600))
    after = polled_state(SETTINGS, before, read, NOW)
    assert (after.etag, after.failures, after.last_error) == (kept, 0, None)
    assert after.last_success_at == NOW and after.next_poll_at == NOW + timedelta(hours=1)
    # Cleared only once the recovery notice is out.
    assert after.failing_notified


def episode(day: int) -> Episode:
    return Episode(
        guid=f"g{day}",
        show="PyTorch",
        title=f"PyTorch: Day {day}",
        headline=f"Day {day}",
        summary="A summary.",
        published_at=datetime(2026, 10, day, 13, 0, tzinfo=UTC),
    )


def test_the_decision_over_a_plan_state_posts_new_and_updates_changed() -> None:
    e1, e2, e3 = episode(1), episode(2), episode(3)
    subs = (Subscription("T1", "C1", "PyTorch"), Subscription("T1", "C2", "PyTorch"))
    entries = {
        ("T1", "C1"): {
            episode_key("PyTorch", "g1"): LedgerEntry(LedgerState.POSTED, e1.content_hash()),
            episode_key("PyTorch", "g2"): LedgerEntry(LedgerState.POSTED, "old"),
        },
    }
    state = PlanState("PyTorch", subs, (e1, e2, e3), {}, entries)
    due = {(d.channel_id, d.episode.guid, d.action) for d in decide_due(SETTINGS, state)}
    assert due == {
        ("C1", "g2", Action.UPDATE),  # changed since posted
        ("C1", "g3", Action.POST),  # newer than what C1 has
        ("C2", "g3", Action.POST),  # a new channel: the backfill newest only
    }


class CountingRenderer(Renderer):
    def __init__(self) -> None:
        super().__init__()
        self.digests: list[str] = []

    def digest(self, episode: Episode, *, buttons: bool = True) -> Any:
        self.digests.append(episode.guid)
        return super().digest(episode, buttons=buttons)


def test_each_due_episode_is_rendered_once_for_all_its_channels() -> None:
    e3 = episode(3)
    subs = tuple(Subscription("T1", f"C{n}", "PyTorch") for n in range(1, 4))
    state = PlanState("PyTorch", subs, (e3,), {}, {})
    renderer = CountingRenderer()
    items = render_due(SETTINGS, renderer, decide_due(SETTINGS, state))
    assert [i.channel_id for i in items] == ["C1", "C2", "C3"] and renderer.digests == ["g3"]
    assert all(i.message is items[0].message and i.metadata["show"] == "PyTorch" for i in items)
