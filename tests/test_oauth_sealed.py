"""Slack tokens at rest: sealed with Fernet when DIGESTBOT_SECRET_KEY is
set — installed through the real flow, refreshed, read back — with key rotation (the new
key first, every token resealed at start-up, the old key dropped); plain with a warning at
start-up otherwise. SQLite and PostgreSQL (``store``/``db_url``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation

from bot.delivery.slack import make_web_client
from bot.listeners.app import build_app
from bot.runtime import tokens_at_rest
from bot.server.asgi import build_asgi
from digests.errors import ConfigError, StoreError
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.installations import Installations
from tests.fixtures.app import APP_NOW, AppServer
from tests.slackfake import CLIENT_ID, SlackFake
from tests.test_oauth import T1, Served, oauth_settings

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
BOT_TOKEN = "xoxe.xoxb-1-" + "b" * 140  # a rotating token: long enough to pass VARCHAR(200)
REFRESH = "xoxe-1-" + "r" * 140


def raw_tokens(db_url: str) -> list[str]:
    """Every token column of both tables as stored."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            found: list[str] = []
            for table, columns in (
                ("slack_installations", "bot_token, bot_refresh_token, user_token"),
                ("slack_bots", "bot_token, bot_refresh_token"),
            ):
                for row in conn.execute(sa.text(f"SELECT {columns} FROM {table}")):
                    found += [v for v in row if v is not None]
            return found
    finally:
        engine.dispose()


def installation(team: str = T1, token: str = BOT_TOKEN) -> Installation:
    return Installation(
        app_id="A0APP", team_id=team, user_id="U0INSTALLER", bot_token=token,
        bot_id="B0BOT", bot_user_id="U0BOT", bot_scopes=["chat:write"],
        bot_refresh_token=REFRESH, bot_token_expires_in=43200, user_token="xoxp-user-1",
        installed_at=APP_NOW.timestamp(),
    )  # fmt: skip


def run(db_url: str, key: str | None, work: Any) -> Any:
    async def go() -> Any:
        installations = Installations(db_url, CLIENT_ID, key)
        try:
            return await work(installations)
        finally:
            await installations.close()

    return asyncio.run(go())


def find(installations: Installations) -> Any:
    return installations.store.async_find_installation(enterprise_id=None, team_id=T1)


@pytest.fixture
def sealed_served(
    store: Store, db_url: str, slack_fake: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = oauth_settings(slack_fake, db_url, digestbot_secret_key=NEW)
    app = build_app(
        settings, store, Renderer(tz=settings.tz), client=make_web_client(settings),
        now=lambda: APP_NOW,
    )  # fmt: skip
    server = AppServer(settings, build_asgi(app, store)).start()
    try:
        yield Served(settings, store, slack_fake, server)
    finally:
        server.stop()


def test_an_installation_through_the_flow_is_stored_sealed(
    sealed_served: Served, db_url: str
) -> None:
    assert sealed_served.install(T1).status_code == 200
    stored = raw_tokens(db_url)
    assert stored and all(v.startswith("fernet:") for v in stored)
    assert not [v for v in stored if "xox" in v]
    bots = run(db_url, NEW, lambda i: i.all_bots())
    assert bots[T1].bot_token.startswith("xoxb-")
    with pytest.raises(StoreError, match="DIGESTBOT_SECRET_KEY is not set"):
        run(db_url, None, lambda i: i.all_bots())


def test_a_refreshed_token_is_stored_sealed_in_both_tables(store: Store, db_url: str) -> None:
    run(db_url, NEW, lambda i: i.store.async_save(installation()))

    async def rotate(bot: Bot) -> Bot:
        values = {**bot.to_dict(), "bot_token": "xoxe.xoxb-1-rotated", "bot_refresh_token": "r2"}
        values["bot_token_expires_at"] = datetime.now(UTC) + timedelta(hours=12)
        values.pop("installed_at", None)
        return Bot(**values, installed_at=bot.installed_at)

    rotated = run(db_url, NEW, lambda i: i.refresh(T1, rotate))
    assert rotated.bot_token == "xoxe.xoxb-1-rotated"
    assert not [v for v in raw_tokens(db_url) if not v.startswith("fernet:")]
    found = run(db_url, NEW, lambda i: find(i))
    assert found.bot_token == "xoxe.xoxb-1-rotated" and found.bot_refresh_token == "r2"


def test_a_key_is_rotated_by_putting_the_new_one_first_then_dropping_the_old(
    store: Store, db_url: str, slack_fake: SlackFake
) -> None:
    run(db_url, OLD, lambda i: i.store.async_save(installation()))
    settings = oauth_settings(slack_fake, db_url, digestbot_secret_key=f"{NEW},{OLD}")
    asyncio.run(tokens_at_rest(settings))  # what serve and clock do at start-up
    found = run(db_url, NEW, lambda i: find(i))
    assert found.bot_token == BOT_TOKEN and found.bot_refresh_token == REFRESH
    assert run(db_url, NEW, lambda i: i.all_bots())[T1].bot_token == BOT_TOKEN
    with pytest.raises(StoreError, match="does not open"):
        run(db_url, OLD, lambda i: i.all_bots())


def test_plain_tokens_are_sealed_once_a_key_is_set(
    store: Store, db_url: str, slack_fake: SlackFake, caplog: pytest.LogCaptureFixture
) -> None:
    plain = oauth_settings(slack_fake, db_url)
    with caplog.at_level(logging.WARNING, logger="bot.runtime"):
        asyncio.run(tokens_at_rest(plain))
    assert [r.getMessage() for r in caplog.records] == [
        "DIGESTBOT_SECRET_KEY is not set: Slack bot and refresh tokens are stored "
        "unencrypted in the database"
    ]
    run(db_url, None, lambda i: i.store.async_save(installation()))
    assert BOT_TOKEN in raw_tokens(db_url)
    asyncio.run(tokens_at_rest(oauth_settings(slack_fake, db_url, digestbot_secret_key=NEW)))
    assert all(v.startswith("fernet:") for v in raw_tokens(db_url))
    assert run(db_url, NEW, lambda i: i.all_bots())[T1].bot_token == BOT_TOKEN


def test_a_key_that_is_not_a_fernet_key_is_one_clear_error(db_url: str) -> None:
    with pytest.raises(ConfigError, match="Fernet keys"):
        Installations(db_url, CLIENT_ID, "not-a-key")
