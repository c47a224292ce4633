"""OAuth mode, a workspace leaving and a token Slack refuses, for real: two
workspaces installed through the install flow over HTTP (uvicorn on loopback), subscribing
by signed slash commands, episodes polled from a local feed server and fanned out by the
clock's deliverer to the Slack fake, which checks every call carries the token of the team
whose channel it touches. SQLite and PostgreSQL (``store``/``db_url``)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.slack import make_web_client
from bot.delivery.tokens import NOT_INSTALLED, TeamOutbox, team_outbox
from bot.jobs.pipeline import run_once
from bot.jobs.recap import post_recaps
from bot.jobs.sweeper import Sweeper
from bot.listeners.app import build_app
from bot.messages.subscriptions import LIST_EMPTY
from bot.runtime import sync_config_channels
from bot.server.asgi import build_asgi
from config.settings import ShowConfig
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from tests.feedserver import FeedServer
from tests.fixtures.app import APP_NOW, AppServer, SlackSender, wait_for
from tests.fixtures.delivery import keys_in
from tests.slackfake import SlackFake
from tests.test_oauth import C1, C2, T1, T2, Served, bots, oauth_settings
from tests.test_shows_scenario import Item, daily, feed

C1_CONFIG = "C0ALPHACF1"  # in the config file, naming T1
U1, U2 = "U0ALPHAUSR", "U0BRAVOUSR"
START = datetime(2026, 10, 1, 13, 0, tzinfo=UTC)
ARCHIVE = daily("PyTorch", START, 5)


def episode(n: int) -> Item:
    day = START + timedelta(days=10 + n)
    return Item("PyTorch", f"pytorch-new-{n}", day, f"New Episode {n}", "Something new.")


@dataclass
class World(Served):
    feeds: FeedServer
    sender: SlackSender

    def serve(self, *items: Item) -> None:
        self.feeds.route("/pytorch.xml", feed("PyTorch", [*ARCHIVE, *items]))

    def slash(self, team: str, channel: str, user: str, text: str) -> dict[str, Any]:
        answer = self.sender.slash(text, team=team, channel=channel, user=user)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json() if answer.content else {}
        return body

    def posted(self, channel: str) -> list[str]:
        return keys_in(self.fake.messages(channel))

    def tokens_used(self) -> set[str]:
        return {c.token for c in self.fake.calls if c.token}


@pytest.fixture
def world(
    store: Store,
    db_url: str,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[World]:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    url = feed_server.route("/pytorch.xml", feed("PyTorch", ARCHIVE))
    settings = oauth_settings(
        slack_fake,
        db_url,
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        channels=[{"id": C1_CONFIG, "team": T1, "shows": ["PyTorch"]}],
        thread_replies=False,
    )
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    for team, channel in ((T1, C1), (T1, C1_CONFIG), (T2, C2)):
        slack_fake.add_team_channel(team, channel)
    app = build_app(
        settings,
        store,
        Renderer.of(settings),
        client=make_web_client(settings),
        now=lambda: APP_NOW,
        reply_cache_ttl=0,
    )
    server = AppServer(settings, build_asgi(app, store)).start()
    sender = SlackSender(server.url, slack_fake)
    try:
        yield World(settings, store, slack_fake, server, feed_server, sender)
    finally:
        sender.close()
        server.stop()


@pytest.fixture
async def clock(world: World) -> AsyncIterator[Deliverer]:
    """The clock's deliverer over the OAuth outbox, alive across the test's polls."""
    outbox = team_outbox(world.settings, world.store)
    deliverer = Deliverer(world.store, outbox, per_channel_interval=0, backoff=0)
    try:
        yield deliverer
    finally:
        await deliverer.aclose()
        await outbox.close()


async def poll(world: World, deliverer: Deliverer, http: httpx.AsyncClient, minute: int) -> Any:
    now = datetime.now(UTC) + timedelta(minutes=minute)
    return await run_once(world.settings, world.store, deliverer.outbox, http, now,
                          deliverer=deliverer)  # fmt: skip


def team_traces(store: Store, team: str, user: str) -> list[Any]:
    """Whatever the store still holds of ``team`` or ``user``."""
    subs = store.subscriptions(team_id=team, include_unsubscribed=True)
    rows = Ledger.for_store(store).all_rows()
    return [
        *subs,
        *(s for s in store.subscriptions(include_unsubscribed=True) if s.created_by == user),
        *(r for r in rows if r.team_id == team or r.channel_id == user),
    ]


async def test_a_workspace_that_uninstalls_gets_nothing_more_and_comes_back_clean(
    world: World, clock: Deliverer, http: httpx.AsyncClient
) -> None:
    fake, store = world.fake, world.store
    for team in (T1, T2):
        assert (await asyncio.to_thread(world.install, team)).status_code == 200
    # The config file's channel of T1 was subscribed by the install.
    assert [s.channel_id for s in store.subscriptions(team_id=T1)] == [C1_CONFIG]
    await asyncio.to_thread(world.slash, T1, C1, U1, "subscribe PyTorch")
    await asyncio.to_thread(world.slash, T2, C2, U2, "subscribe PyTorch")
    first = await poll(world, clock, http, 1)
    assert not first.delivery.failed, first.delivery
    newest = "PyTorch:" + ARCHIVE[-1].slug
    assert world.posted(C1) == world.posted(C2) == world.posted(C1_CONFIG) == [newest]
    old_t1 = set(fake.team_tokens(T1))

    # T1 leaves: Slack revokes its tokens and sends the signed event.
    fake.revoke_team(T1, "token_revoked")
    answer = await asyncio.to_thread(world.sender.event, {"type": "app_uninstalled"}, team=T1)
    assert answer.status_code == 200
    await asyncio.to_thread(
        wait_for, lambda: T1 not in bots(world.settings) or None, what="T1's installation gone"
    )
    await asyncio.to_thread(
        wait_for, lambda: not team_traces(store, T1, U1) or None, what="T1 forgotten"
    )
    assert T2 in await asyncio.to_thread(bots, world.settings)
    assert store.subscriptions(team_id=T2)

    # The next episode reaches T2 only, and not one call goes out with T1's old tokens.
    calls_before = len(fake.calls)
    world.serve(episode(1))
    second = await poll(world, clock, http, 20)
    assert not second.delivery.failed, second.delivery
    assert world.posted(C2) == [newest, "PyTorch:pytorch-new-1"]
    assert world.posted(C1) == world.posted(C1_CONFIG) == [newest]
    assert not {c.token for c in fake.calls[calls_before:]} & old_t1
    assert not team_traces(store, T1, U1)

    # T1 installs again: nothing of before comes back but the config file's channel.
    assert (await asyncio.to_thread(world.install, T1, "code-again")).status_code == 200
    subs = store.subscriptions(team_id=T1)
    assert [(s.channel_id, s.source, s.created_by) for s in subs] == [(C1_CONFIG, "config", None)]
    listed = await asyncio.to_thread(world.slash, T1, C1, U1, "list")
    assert LIST_EMPTY in json.dumps(listed, ensure_ascii=False)
    await asyncio.to_thread(world.slash, T1, C1, U1, "subscribe PyTorch")
    world.serve(episode(1), episode(2))
    third = await poll(world, clock, http, 40)
    assert not third.delivery.failed, third.delivery
    # A fresh start: both of T1's channels are served as new ones (what the polls saw
    # first after the subscription, with the new token); nothing of before decides.
    assert world.posted(C1)[0] == world.posted(C1_CONFIG)[0] == newest
    assert world.posted(C1)[1:] == world.posted(C1_CONFIG)[1:]
    assert world.posted(C1)[-1] == world.posted(C2)[-1] == "PyTorch:pytorch-new-2"
    new_tokens = {
        c.token for c in fake.calls_to("chat.postMessage") if c.params["channel"] == C1
    } - old_t1
    assert new_tokens and new_tokens <= set(fake.team_tokens(T1))


def _notice(team: str, channel: str, key: str, kind: str = "notice") -> Delivery:
    message = {"text": f"{kind} {key} for {team}"}
    return Delivery(team, channel, kind, key, message, content_hash=key)


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked", "account_inactive"])
async def test_a_refused_token_stops_its_team_only_in_every_scheduled_path(
    world: World, clock: Deliverer, http: httpx.AsyncClient, error: str
) -> None:
    fake, store = world.fake, world.store
    for team in (T1, T2):
        assert (await asyncio.to_thread(world.install, team)).status_code == 200
    await asyncio.to_thread(world.slash, T1, C1, U1, "subscribe PyTorch")
    await asyncio.to_thread(world.slash, T2, C2, U2, "subscribe PyTorch")
    fake.revoke_team(T1, error)
    dead = set(fake.team_tokens(T1))

    def refused_calls() -> int:
        return sum(1 for c in fake.calls if c.token in dead and not c.ok)

    # Poll deliveries: T2 gets its digest, T1 is stopped by the refusal (its two channels'
    # first posts may both be on their way when the first answer comes back).
    first = await poll(world, clock, http, 1)
    assert world.posted(C2) and not world.posted(C1) and not world.posted(C1_CONFIG)
    assert first.delivery.stopped_teams == {T1: error}
    refused = refused_calls()
    assert 1 <= refused <= 2
    # Recaps, notices and DMs: T2's go out; not one more call with T1's refused token.
    recap = await post_recaps(world.settings, store, clock, Renderer.of(world.settings),
                              datetime.now(UTC), week=(2026, 40))  # fmt: skip
    assert {i[1] for i in recap.posted} == {C2} and recap.stopped_teams == {T1: error}
    notices = await clock.deliver(
        [_notice(T1, C1, "n1"), _notice(T1, U1, "dm1"), _notice(T2, C2, "n2")]
    )
    assert [i[1] for i in notices.posted] == [C2]
    # A pause DM: T2's channel is archived, its subscriber is told with T2's token.
    fake.channel_error(C2, "is_archived")
    paused = await clock.deliver([_notice(T2, C2, "n3"), _notice(T1, C1, "n4")])
    assert paused.paused == {(T2, C2): "is_archived"}
    assert len(fake.messages(U2)) == 1  # the pause DM
    assert {c.token for c in fake.calls_to("chat.postMessage") if c.params["channel"] == U2} <= set(
        fake.team_tokens(T2)
    )
    fake.channel_error(C2, None)
    # The sweeper: rows a dead deliverer left in both teams; T2's are finished, T1's held.
    store.subscribe(T2, C2, "PyTorch", created_by=U2)  # resumed after the archive
    world.serve(episode(1))
    await orphan(world, clock, http)
    swept = await Sweeper(world.settings, store, clock).sweep()
    assert (T2, C2, "episode", "PyTorch:pytorch-new-1") in swept.posted
    assert not any(i[0] == T1 for i in swept.posted)
    assert refused_calls() == refused  # the first refusal was the last call with it

    # T1 installs again (a new token): the same deliverer serves it (a refused team is
    # read again every few seconds; at once here).
    assert (await asyncio.to_thread(world.install, T1, "code-again")).status_code == 200
    assert isinstance(clock.outbox, TeamOutbox)
    clock.outbox.tokens.recheck = 0
    after = await clock.deliver([_notice(T1, C1, "n5")])
    assert [i[1] for i in after.posted] == [C1]
    assert refused_calls() == refused


async def orphan(world: World, clock: Deliverer, http: httpx.AsyncClient) -> None:
    """A poll by another deliverer (the clock's outbox) that dies before anything lands:
    Slack fails T2's post, T1's is refused; its rows are left pending, its owner gone."""
    gone = f"{socket.gethostname()}:999999999:gone"
    dead = Deliverer(world.store, clock.outbox, owner=gone, max_attempts=1,
                     per_channel_interval=0, backoff=0)  # fmt: skip
    world.fake.fail_next("chat.postMessage", status=500)
    try:
        await poll(world, dead, http, 60)
    finally:
        await dead.aclose()
    left = [r for r in Ledger.for_store(world.store).all_rows() if r.owner == gone]
    assert {(r.team_id, r.state) for r in left} == {(T1, "pending"), (T2, "pending")}


async def test_a_refused_token_stops_requests_of_that_team_only(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    fake = world.fake
    for team in (T1, T2):
        assert world.install(team).status_code == 200
    fake.revoke_team(T1)
    dead = set(fake.team_tokens(T1))

    def home(team: str, user: str) -> None:
        opened = {"type": "app_home_opened", "user": user, "tab": "home"}
        assert world.sender.event(opened, team=team).status_code == 200

    def refused() -> int:
        return sum(1 for c in fake.calls if c.token in dead and not c.ok)

    home(T1, U1)
    wait_for(lambda: refused() or None, what="T1's refusal")
    # The fake records the call before the bot reads its answer: wait for the bot to have
    # stopped the team, not only for Slack to have refused.
    wait_for(lambda: "stopping that team" in caplog.text or None, what="T1 stopped")
    home(T1, U1)
    home(T2, U2)
    view = wait_for(lambda: fake.home_view(U2), what="T2's home")
    assert refused() == 1
    # The Home and help of a new workspace say how to start.
    assert "/episodes subscribe" in json.dumps(view["blocks"][1], ensure_ascii=False)
    helped = world.slash(T2, C2, U2, "help")
    assert "type `/episodes subscribe` there" in json.dumps(helped["blocks"][0])
    # A re-install brings T1's requests back.
    assert world.install(T1, "code-again").status_code == 200
    home(T1, U1)
    wait_for(lambda: fake.home_view(U1), what="T1's home with its new token")


def test_the_config_sync_for_one_team_leaves_the_others_alone(world: World) -> None:
    store = world.store
    assert sync_config_channels(world.settings, store, "T0OTHER", only_team=T2) == 0
    assert not store.subscriptions()
    assert sync_config_channels(world.settings, store, "T0OTHER", only_team=T1) == 1
    assert [s.channel_id for s in store.subscriptions(team_id=T1)] == [C1_CONFIG]


async def test_config_channels_paused_before_the_install_go_on_when_it_comes(
    world: World, clock: Deliverer
) -> None:
    store = world.store
    # The clock starts before T1 installs: its config channel is subscribed, and paused
    # at the first delivery for want of an installation.
    assert sync_config_channels(world.settings, store, world.settings.team_id) == 1
    report = await clock.deliver([_notice(T1, C1_CONFIG, "n1")])
    assert report.stopped_teams == {T1: NOT_INSTALLED}
    assert [s.paused_reason for s in store.subscriptions(team_id=T1)] == [NOT_INSTALLED]
    assert (await asyncio.to_thread(world.install, T1)).status_code == 200
    (sub,) = store.subscriptions(team_id=T1)
    assert (sub.channel_id, sub.paused_reason, sub.source) == (C1_CONFIG, None, "config")
    after = await clock.deliver([_notice(T1, C1_CONFIG, "n1")])
    assert after.posted == [(T1, C1_CONFIG, "notice", "n1")]
