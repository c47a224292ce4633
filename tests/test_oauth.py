"""OAuth mode for real: the install flow over HTTP on loopback (uvicorn, the Slack fake
answering oauth.v2.access and auth.test), every act with its team's own token, leaving,
and token rotation by one of two clocks. SQLite and PostgreSQL (``store``/``db_url``)."""

from __future__ import annotations

import asyncio
import html
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import yaml

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.slack import make_web_client
from bot.delivery.tokens import NOT_INSTALLED, TeamTokens, team_outbox
from bot.listeners.app import build_app
from bot.server.asgi import REDIRECT_PATH, build_asgi
from config.settings import DEFAULT_BOT_SCOPES, Settings, bundled_path
from digests.errors import ConfigError
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.installations import Installations
from tests.fixtures.app import APP_NOW, AppServer, SlackSender, make_settings, wait_for
from tests.slackfake import CLIENT_ID, CLIENT_SECRET, SlackFake

T1, T2 = "T0ALPHA001", "T0BRAVO002"
C1, C2 = "C0ALPHA001", "C0BRAVO002"


def oauth_settings(fake: SlackFake, db_url: str, **extra: Any) -> Settings:
    return make_settings(
        fake.api_url,
        token=None,  # type: ignore[arg-type]
        slack_client_id=CLIENT_ID,
        slack_client_secret=CLIENT_SECRET,
        slack_authorize_url=f"{fake.base_url}/oauth/v2/authorize",
        database_url=db_url,
        **extra,
    )


@dataclass
class Served:
    settings: Settings
    store: Store
    fake: SlackFake
    server: AppServer

    def install_page(self, http: httpx.Client) -> tuple[httpx.Response, str]:
        page = http.get("/slack/install")
        found = re.search(r'id="add-to-slack" href="([^"]+)"', page.text)
        assert found, page.text
        # The state cookie is Secure (Slack's redirect is https): a browser there sends it
        # back; over loopback http the test does.
        name, _, value = page.headers["set-cookie"].split(";")[0].partition("=")
        http.cookies.set(name, value)
        return page, html.unescape(found.group(1))

    def install(self, team: str, code: str | None = None) -> httpx.Response:
        """The whole flow as a browser does it: the page, Slack's redirect with its state."""
        code = code or f"code-{team}"
        self.fake.add_install_code(code, team)
        with httpx.Client(base_url=self.server.url, timeout=30) as http:
            _, link = self.install_page(http)
            state = parse_qs(urlsplit(link).query)["state"][0]
            return http.get("/slack/oauth_redirect", params={"code": code, "state": state})


def bots(settings: Settings) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        installations = Installations(settings.database_url, CLIENT_ID)
        try:
            return await installations.all_bots()
        finally:
            await installations.close()

    return asyncio.run(read())


@pytest.fixture
def served(
    store: Store, db_url: str, slack_fake: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = oauth_settings(slack_fake, db_url)
    app = build_app(
        settings,
        store,
        Renderer(tz=settings.tz),
        client=make_web_client(settings),
        now=lambda: APP_NOW,
    )
    server = AppServer(settings, build_asgi(app, store)).start()
    try:
        yield Served(settings, store, slack_fake, server)
    finally:
        server.stop()


def test_settings_choose_the_mode() -> None:
    single = make_settings("http://127.0.0.1:9/api/", slack_client_id="1", slack_client_secret="s")
    assert not single.oauth_mode  # a bot token wins: one workspace, as before
    many = make_settings(
        "http://127.0.0.1:9/api/",
        token=None,
        slack_client_id="1",  # type: ignore[arg-type]
        slack_client_secret="s",
    )
    assert many.oauth_mode
    with pytest.raises(ValueError, match="needs a team"):
        make_settings(
            "http://127.0.0.1:9/api/",
            token=None,
            slack_client_id="1",  # type: ignore[arg-type]
            slack_client_secret="s",
            channels=[{"id": "C0AAAAAA01"}],
        )


def test_the_install_page_shows_the_button_the_scopes_and_what_it_does(served: Served) -> None:
    with httpx.Client(base_url=served.server.url, timeout=30) as http:
        page, link = served.install_page(http)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "Add to Slack" in page.text and "digest of every new" in page.text
    for scope in served.settings.slack_scopes:
        assert f"<code>{scope}</code>" in page.text
    parts = urlsplit(link)
    query = parse_qs(parts.query)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == served.settings.slack_authorize_url
    assert query["client_id"] == [CLIENT_ID]
    assert set(query["scope"][0].split(",")) == set(served.settings.slack_scopes)
    assert query["state"][0] in page.headers["set-cookie"]  # the state is bound to the browser


def test_two_workspaces_install_each_with_its_own_token(served: Served) -> None:
    for team in (T1, T2):
        done = served.install(team)
        assert done.status_code == 200, done.text
        assert "/episodes subscribe" in done.text and f"Team {team}" in done.text
    stored = bots(served.settings)
    assert set(stored) == {T1, T2}
    assert stored[T1].bot_token in served.fake.team_tokens(T1)
    assert stored[T2].bot_token in served.fake.team_tokens(T2)
    assert len(served.fake.calls_to("oauth.v2.access")) == 2


@pytest.mark.parametrize("case", ["forged", "replayed", "missing_code", "slack_error", "denied"])
def test_a_bad_redirect_gets_a_failure_page_and_stores_nothing(served: Served, case: str) -> None:
    if case == "replayed":
        assert served.install(T1).status_code == 200
    served.fake.add_install_code("good-code", T2)
    with httpx.Client(base_url=served.server.url, timeout=30) as http:
        _, link = served.install_page(http)
        state = parse_qs(urlsplit(link).query)["state"][0]
        params = {
            "forged": {"code": "good-code", "state": "not-a-state-we-issued"},
            "replayed": {"code": "good-code", "state": state},
            "missing_code": {"state": state},
            "slack_error": {"code": "a-code-slack-never-issued", "state": state},
            "denied": {"error": "access_denied", "state": state},
        }[case]
        if case == "replayed":
            http.get("/slack/oauth_redirect", params={"code": "x", "state": state})
        answer = http.get("/slack/oauth_redirect", params=params)
    assert answer.status_code >= 200 and "digestbot was not installed" in answer.text
    assert 'href="/slack/install"' in answer.text
    expected = {
        "forged": "expired or was already used",
        "replayed": "expired or was already used",
        "missing_code": "did not send the installation code",
        "slack_error": "Slack refused",
        "denied": "cancelled",
    }[case]
    assert expected in answer.text
    assert set(bots(served.settings)) == ({T1} if case == "replayed" else set())


def _item(team: str, channel: str, key: str) -> Delivery:
    return Delivery(
        team_id=team,
        channel_id=channel,
        kind="notice",
        key=key,
        message={"text": f"hello {team}"},
        content_hash=key,
    )


def deliver(settings: Settings, store: Store, items: list[Delivery]) -> Any:
    async def run() -> Any:
        outbox = team_outbox(settings, store)
        deliverer = Deliverer(store, outbox, per_channel_interval=0, backoff=0)
        try:
            return await deliverer.deliver(items)
        finally:
            await deliverer.aclose()
            await outbox.close()

    return asyncio.run(run())


def test_two_teams_post_and_answer_with_their_own_tokens(served: Served) -> None:
    fake, store = served.fake, served.store
    served.install(T1)
    served.install(T2)
    fake.add_team_channel(T1, C1)
    fake.add_team_channel(T2, C2)
    report = deliver(served.settings, store, [_item(T1, C1, "k1"), _item(T2, C2, "k2")])
    assert len(report.posted) == 2, report
    tokens = {c.params["channel"]: c.token for c in fake.calls_to("chat.postMessage")}
    assert tokens[C1] in fake.team_tokens(T1) and tokens[C2] in fake.team_tokens(T2)
    # Requests: each team's App Home is published with that team's token (Bolt's authorize).
    sender = SlackSender(served.server.url, fake)
    try:
        for team in (T1, T2):
            sender.event({"type": "app_home_opened", "user": f"U0{team}", "tab": "home"}, team=team)
        views = wait_for(
            lambda: len(fake.calls_to("views.publish")) == 2 or None, what="both homes published"
        )
        assert views
        by_user = {c.params["user_id"]: c.token for c in fake.calls_to("views.publish")}
        assert by_user[f"U0{T1}"] in fake.team_tokens(T1)
        assert by_user[f"U0{T2}"] in fake.team_tokens(T2)
    finally:
        sender.close()


def test_a_team_without_installation_is_skipped_and_paused(served: Served) -> None:
    store = served.store
    store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")
    served.install(T2)
    store.subscribe(T1, C1, "PyTorch", source="config")
    store.subscribe(T2, C2, "PyTorch", source="config")
    report = deliver(served.settings, store, [_item(T1, C1, "k1"), _item(T2, C2, "k2")])
    assert report.stopped_teams == {T1: NOT_INSTALLED}
    assert [c.params["channel"] for c in served.fake.calls_to("chat.postMessage")] == [C2]
    paused = store.subscriptions(team_id=T1)
    assert [s.paused_reason for s in paused] == [NOT_INSTALLED]
    assert store.subscriptions(team_id=T2, include_paused=False)


def test_an_uninstall_deletes_the_installation_and_stops_the_team(served: Served) -> None:
    fake, store = served.fake, served.store
    store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")
    served.install(T1)
    served.install(T2)
    store.subscribe(T1, C1, "PyTorch", source="config")
    store.subscribe(T2, C2, "PyTorch", source="config")
    sender = SlackSender(served.server.url, fake)
    try:
        answer = sender.event({"type": "app_uninstalled"}, team=T1)
        assert answer.status_code == 200
    finally:
        sender.close()
    wait_for(lambda: T1 not in bots(served.settings) or None, what="the installation deleted")
    wait_for(
        lambda: not store.subscriptions(team_id=T1, include_paused=False) or None,
        what="T1 paused",
    )
    fake.revoke_team(T1)
    report = deliver(served.settings, store, [_item(T1, C1, "k1"), _item(T2, C2, "k2")])
    assert [c.params["channel"] for c in fake.calls_to("chat.postMessage")] == [C2]
    assert report.stopped_teams == {T1: NOT_INSTALLED}
    assert store.subscriptions(team_id=T2, include_paused=False)


def test_a_rotating_token_is_refreshed_once_by_one_of_two_clocks(served: Served) -> None:
    fake = served.fake
    fake.rotation_expires_in = 60  # inside the refresh window: due at once
    served.install(T1)
    fake.rotation_expires_in = 12 * 3600
    fake.latency = 0.3  # a refresh takes a while: both clocks find the token due meanwhile
    first = bots(served.settings)[T1].bot_token
    results: list[str | None] = []
    start = threading.Barrier(2)

    def clock() -> None:
        async def run() -> str | None:
            installations = Installations(served.settings.database_url, CLIENT_ID)
            tokens = TeamTokens.from_settings(served.settings, installations)
            try:
                start.wait()
                bot = await tokens.bot(T1)
                return bot.bot_token if bot else None
            finally:
                await installations.close()

        results.append(asyncio.run(run()))

    threads = [threading.Thread(target=clock) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    refreshes = [
        c for c in fake.calls_to("oauth.v2.access") if c.params.get("grant_type") == "refresh_token"
    ]
    assert len(refreshes) == 1 and all(c.ok for c in refreshes)
    assert len(results) == 2 and results[0] == results[1] != first
    assert bots(served.settings)[T1].bot_token == results[0]
    assert results[0] in fake.tokens


def test_config_channels_need_a_team_in_oauth_mode(slack_fake: SlackFake) -> None:
    with pytest.raises((ValueError, ConfigError)):
        oauth_settings(slack_fake, "sqlite://", channels=[{"id": C1}])
    settings = oauth_settings(slack_fake, "sqlite://", channels=[{"id": C1, "team": T1}])
    assert settings.channels[0].team == T1
    assert datetime.now(UTC)  # settings built without touching Slack


def test_the_oauth_manifest_has_the_redirect_the_leaving_events_and_rotation() -> None:
    manifest = yaml.safe_load(bundled_path("slack-manifest-oauth.yml").read_text())
    oauth = manifest["oauth_config"]
    assert [urlsplit(u).path for u in oauth["redirect_urls"]] == [REDIRECT_PATH]
    assert set(oauth["scopes"]["bot"]) == set(DEFAULT_BOT_SCOPES)
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert {"app_uninstalled", "tokens_revoked"} <= events
    assert manifest["settings"]["token_rotation_enabled"] is True
    assert manifest["settings"]["socket_mode_enabled"] is False


def test_a_team_that_installs_after_being_skipped_is_served_by_the_same_deliverer(
    served: Served,
) -> None:
    store = served.store
    store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")
    store.subscribe(T1, C1, "PyTorch", source="config")

    async def run() -> tuple[Any, Any]:
        outbox = team_outbox(served.settings, store)
        deliverer = Deliverer(store, outbox, per_channel_interval=0, backoff=0)
        try:
            before = await deliverer.deliver([_item(T1, C1, "k1")])
            await asyncio.to_thread(served.install, T1)
            store.subscribe(T1, C1, "PyTorch", source="config")  # un-pauses it
            outbox.tokens.max_age = 0  # the clock re-reads installations (a minute, live)
            after = await deliverer.deliver([_item(T1, C1, "k1")])
            return before, after
        finally:
            await deliverer.aclose()
            await outbox.close()

    before, after = asyncio.run(run())
    assert before.stopped_teams == {T1: NOT_INSTALLED} and not before.posted
    assert len(after.posted) == 1, after
    assert [c.token for c in served.fake.calls_to("chat.postMessage")] == served.fake.team_tokens(
        T1
    )
