"""OAuth mode during outages (the single-token ``SlackIdentity``'s counterpart):
the installations' database unreachable, Slack unreachable while a rotating token is due.
Requests get an answer, not a server error; the install flow a page that says what is
wrong. Over HTTP (uvicorn on loopback), SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.delivery.slack import make_web_client
from bot.delivery.tokens import TeamTokens
from bot.listeners.app import build_app
from bot.messages.subscriptions import LIST_EMPTY
from bot.server.asgi import build_asgi
from config.settings import Settings
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.installations import Installations
from tests.fixtures.app import APP_NOW, AppServer, SlackSender, wait_for
from tests.slackfake import CLIENT_ID, SlackFake
from tests.test_oauth import C1, T1, Served, oauth_settings

U1 = "U0ALPHAUSR"


def unreachable(db_url: str, tmp: Path) -> str:
    """A database URL of the same kind that cannot be reached."""
    if db_url.startswith("sqlite"):
        return f"sqlite:///{tmp}/no-such-directory/digestbot.sqlite3"
    return "postgresql+psycopg://postgres@127.0.0.1:1/test?connect_timeout=1"


def serve(settings: Settings, store: Store, fake: SlackFake, **options: Any) -> Iterator[Served]:
    app = build_app(
        settings,
        store,
        Renderer(tz=settings.tz),
        client=make_web_client(settings),
        now=lambda: APP_NOW,
        **options,
    )
    server = AppServer(settings, build_asgi(app, store)).start()
    try:
        yield Served(settings, store, fake, server)
    finally:
        server.stop()


@pytest.fixture
def settings(
    db_url: str, slack_fake: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    return oauth_settings(slack_fake, db_url)


@pytest.fixture
def down(
    settings: Settings, store: Store, db_url: str, slack_fake: SlackFake, tmp_path: Path
) -> Iterator[Served]:
    """The app with its installations on a database that does not answer."""
    installations = Installations(unreachable(db_url, tmp_path), CLIENT_ID)
    tokens = TeamTokens.from_settings(settings, installations)
    yield from serve(settings, store, slack_fake, installations=installations, tokens=tokens)


@pytest.fixture
def served(settings: Settings, store: Store, slack_fake: SlackFake) -> Iterator[Served]:
    yield from serve(settings, store, slack_fake)


def test_requests_are_answered_while_the_installations_cannot_be_read(down: Served) -> None:
    sender = SlackSender(down.server.url, down.fake)
    try:
        answer = sender.slash("list", team=T1, channel=C1, user=U1)
        opened = {"type": "app_home_opened", "user": U1, "tab": "home"}
        event = sender.event(opened, team=T1)
    finally:
        sender.close()
    assert answer.status_code == 200
    assert LIST_EMPTY in json.dumps(answer.json(), ensure_ascii=False)
    assert event.status_code == 200


def test_the_install_flow_says_it_cannot_reach_its_database(down: Served) -> None:
    with httpx.Client(base_url=down.server.url, timeout=30) as http:
        page = http.get("/slack/install")
        http.cookies.set("slack-app-oauth-state", "s")  # the browser's, for the state "s"
        back = http.get("/slack/oauth_redirect", params={"code": "c", "state": "s"})
    for answer in (page, back):
        assert answer.status_code == 503
        assert "cannot reach Slack or its database" in answer.text
        assert 'href="/slack/install"' in answer.text


@pytest.mark.parametrize("expires_in", [60, -60], ids=["due", "expired"])
def test_a_due_refresh_while_slack_is_out(served: Served, expires_in: int) -> None:
    fake = served.fake
    fake.rotation_expires_in = expires_in  # due at once; still good, or already expired
    assert served.install(T1).status_code == 200
    old = fake.team_tokens(T1)[0]
    fake.fail_next("oauth.v2.access", status=503, times=50)  # Slack cannot refresh it
    sender = SlackSender(served.server.url, fake)
    try:
        answer = sender.slash("list", team=T1, channel=C1, user=U1)
        assert answer.status_code == 200
        assert LIST_EMPTY in json.dumps(answer.json(), ensure_ascii=False)
        if expires_in > 0:  # the token is good until it expires: it is used
            opened = {"type": "app_home_opened", "user": U1, "tab": "home"}
            assert sender.event(opened, team=T1).status_code == 200
            wait_for(lambda: fake.home_view(U1), what="the home, with the old token")
            assert [c.token for c in fake.calls_to("views.publish")] == [old]
    finally:
        sender.close()
