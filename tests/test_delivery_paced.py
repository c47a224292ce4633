"""bot.delivery.paced: retries, Retry-After, look-before-repost and the bound, around any outbox."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.outbox import Category, Outbox, PostFailure, SlackOutbox, metadata_for
from bot.delivery.paced import Meter, PacedOutbox, Policy
from config.settings import Settings
from digests.store import Store
from tests.fixtures.delivery import digest, slack_outbox
from tests.slackfake import SlackFake

TEAM = "T1"
META = metadata_for("PyTorch:g1", "episode", "digest")


class Scripted:
    """An outbox double: each call first takes the next scripted failure of its method."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.failures: dict[str, list[PostFailure]] = {}
        # A timed-out post that still landed: posted, and then the failure raised.
        self.land_anyway = False
        self.posted: dict[str, dict[str, str]] = {}  # channel → part → ts
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate: asyncio.Event | None = None

    def fail(self, method: str, category: Category, *, retry_after: float | None = None) -> None:
        error = "ratelimited" if category == "ratelimited" else f"{category}_error"
        failure = PostFailure(method, error, category, retry_after)
        self.failures.setdefault(method, []).append(failure)

    async def _enter(self, method: str, channel: str) -> None:
        self.calls.append((method, channel))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
        finally:
            self.in_flight -= 1

    def _scripted(self, method: str) -> PostFailure | None:
        queue = self.failures.get(method)
        return queue.pop(0) if queue else None

    async def post(
        self,
        channel: str,
        message: Mapping[str, Any],
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        await self._enter("post", channel)
        failure = self._scripted("post")
        if failure is not None and not (failure.category == "timeout" and self.land_anyway):
            raise failure
        ts = f"{len(self.calls)}.0001"
        self.posted.setdefault(channel, {})[metadata["event_payload"]["part"]] = ts
        if failure is not None:
            raise failure
        return ts

    async def update(
        self, channel: str, ts: str, message: Mapping[str, Any], *, metadata: object = None
    ) -> None:
        await self._enter("update", channel)
        failure = self._scripted("update")
        if failure is not None:
            raise failure

    async def delete(self, channel: str, ts: str) -> None:
        await self._enter("delete", channel)

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        await self._enter("find", channel)
        failure = self._scripted("find")
        if failure is not None:
            raise failure
        return dict(self.posted.get(channel, {}))

    async def join(self, channel: str) -> bool:
        return True

    async def close(self) -> None:
        return None


def paced(inner: Outbox, **policy: Any) -> tuple[PacedOutbox, Meter]:
    meter = Meter()
    base = {"interval": 0.0, "backoff": 0.001, **policy}
    return PacedOutbox(inner, Policy(**base)).metered(meter), meter


def posts(inner: Scripted) -> int:
    return sum(1 for method, _ in inner.calls if method == "post")


async def test_a_retry_after_longer_than_the_bound_fails_fast_and_quiets_the_channel() -> None:
    inner = Scripted()
    inner.fail("post", "ratelimited", retry_after=3600)
    outbox, meter = paced(inner, max_wait=60)

    with pytest.raises(PostFailure) as failed:
        await outbox.post("C1", digest("a"), metadata=META)
    assert failed.value.category == "ratelimited" and meter.retries == 0
    # Slack asked for an hour of quiet in C1: nothing goes there meanwhile, not even a retry.
    with pytest.raises(PostFailure) as again:
        await outbox.update("C1", "1.0", digest("a"))
    assert again.value.category == "ratelimited"
    assert inner.calls == [("post", "C1")]
    # Other channels are not held up.
    assert await outbox.post("C2", digest("b"), metadata=META)
    assert inner.calls[-1] == ("post", "C2")


async def test_a_short_retry_after_is_waited_out() -> None:
    inner = Scripted()
    inner.fail("post", "ratelimited", retry_after=0.01)
    inner.fail("post", "server")
    outbox, meter = paced(inner, max_wait=60)

    assert await outbox.post("C1", digest("a"), metadata=META)
    assert posts(inner) == 3 and meter.retries == 2 and meter.calls == 3


@pytest.mark.parametrize("method", ["update", "find"])
async def test_calls_safe_to_repeat_give_up_after_max_attempts(method: str) -> None:
    inner = Scripted()
    for _ in range(5):
        inner.fail(method, "server")
    outbox, meter = paced(inner, max_attempts=3)

    with pytest.raises(PostFailure):
        if method == "update":
            await outbox.update("C1", "1.0", digest("a"))
        else:
            await outbox.find("C1", "PyTorch:g1", oldest=None)
    assert len(inner.calls) == 3 and meter.retries == 2


async def test_a_timed_out_post_that_landed_is_found_not_posted_again() -> None:
    inner = Scripted()
    inner.land_anyway = True
    inner.fail("post", "timeout")
    outbox, meter = paced(inner)

    ts = await outbox.post("C1", digest("a"), metadata=META)
    assert ts == inner.posted["C1"]["digest"]
    assert inner.calls == [("post", "C1"), ("find", "C1")] and meter.retries == 1


async def test_a_timed_out_post_that_did_not_land_is_posted_again() -> None:
    inner = Scripted()
    inner.fail("post", "timeout")
    outbox, _ = paced(inner)

    assert await outbox.post("C1", digest("a"), metadata=META)
    assert inner.calls == [("post", "C1"), ("find", "C1"), ("post", "C1")]


async def test_when_the_lookup_fails_the_post_may_have_landed() -> None:
    inner = Scripted()
    inner.fail("post", "timeout")
    inner.fail("find", "server")
    outbox, _ = paced(inner)

    with pytest.raises(PostFailure) as failed:
        await outbox.post("C1", digest("a"), metadata=META)
    assert failed.value.category == "timeout" and failed.value.maybe_posted
    assert posts(inner) == 1  # never re-posted blind


async def test_every_view_shares_one_bound_on_calls_in_flight() -> None:
    inner = Scripted()
    inner.gate = asyncio.Event()
    shared = PacedOutbox(inner, Policy(interval=0.0, concurrency=2))
    views = [shared.metered(Meter()) for _ in range(3)]
    tasks = [
        asyncio.create_task(view.post(f"C{n}{m}", digest("a"), metadata=META))
        for n, view in enumerate(views)
        for m in range(2)
    ]
    while len(inner.calls) < 2:  # the first two are in; the rest wait for a slot
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert inner.in_flight == 2
    inner.gate.set()
    await asyncio.gather(*tasks)
    assert inner.most_in_flight == 2 and len(inner.calls) == 6


async def test_a_deliverer_defers_a_post_slack_wants_an_hour_for(
    store: Store, slack_fake: SlackFake
) -> None:
    """The delivery path: no hour-long sleep inside a poll."""
    slack_fake.fail_next("chat.postMessage", status=429, retry_after=3600)
    outbox = slack_outbox(slack_fake)
    d = Deliverer(store, outbox, per_channel_interval=0.0, backoff=0.01)
    items = [
        Delivery(TEAM, "C1", "episode", f"PyTorch:g{n}", digest(f"g{n}"), content_hash="v1")
        for n in (1, 2)
    ]
    try:
        report = await d.deliver(items)
    finally:
        await d.aclose()
        await outbox.close()
    assert sorted(report.deferred) == sorted(i.ident for i in items)
    assert set(report.failed.values()) == {"ratelimited"} and report.retries == 0
    assert len(slack_fake.calls_to("chat.postMessage")) == 1
    assert slack_fake.messages("C1") == []


async def test_the_production_outbox_leaves_a_long_retry_after_to_the_pacer(
    slack_fake: SlackFake,
) -> None:
    """slack_sdk's rate-limit handler would sleep Retry-After (an hour) inside a history read."""
    settings = Settings(slack_bot_token=slack_fake.token, slack_api_url=slack_fake.api_url)
    slack_fake.fail_next("conversations.history", status=429, retry_after=3600)
    inner = SlackOutbox.from_settings(settings)
    outbox, _ = paced(inner, max_wait=60)
    try:
        with pytest.raises(PostFailure) as failed:
            # The bound only keeps a regression from hanging the suite.
            await asyncio.wait_for(outbox.find("C1", "PyTorch:g1", oldest=None), 60)
    finally:
        await outbox.close()
    assert failed.value.category == "ratelimited" and failed.value.retry_after == 3600
    assert len(slack_fake.calls_to("conversations.history")) == 1
