"""``serve()`` in the caller's loop, and the app with no bot token or no signing secret."""

from __future__ import annotations

import asyncio
import signal
import socket

import httpx
import pytest

from bot.app import build_app
from bot.server import build_asgi, serve
from config.settings import Settings
from digests.models import Episode
from digests.render import Renderer
from digests.store import Store
from tests.fixtures.app import AppServer, SlackSender, assert_valid_message
from tests.slackfake import SlackFake


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_serve_runs_in_our_loop_without_signal_handlers(
    app_settings: Settings, seeded_store: tuple[Store, list[Episode]]
) -> None:
    store, _ = seeded_store
    port = _free_port()
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    asgi = build_asgi(build_app(app_settings, store, Renderer()), store)
    task = asyncio.create_task(serve(app_settings, asgi, host="127.0.0.1", port=port))
    url = f"http://127.0.0.1:{port}/healthz"
    async with httpx.AsyncClient(verify=False, timeout=5) as client:
        for _ in range(500):
            try:
                response = await client.get(url)
                break
            except httpx.TransportError:
                await asyncio.sleep(0.01)
        else:
            raise AssertionError("serve() never answered")
        assert response.json() == {"ok": True}
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Shut down for real: the port no longer answers.
        with pytest.raises(httpx.TransportError):
            await client.get(url)


def test_without_a_bot_token_commands_still_answer(
    app_settings: Settings, seeded_store: tuple[Store, list[Episode]], slack_fake: SlackFake
) -> None:
    store, episodes = seeded_store
    settings = app_settings.model_copy(update={"slack_bot_token": None})
    app = build_app(settings, store, Renderer())
    server = AppServer(settings, build_asgi(app, store)).start()
    sender = SlackSender(server.url, slack_fake)
    try:
        response = sender.slash("recent 1")
        assert response.status_code == 200
        assert_valid_message(response.json())
        assert f"{episodes[0].url}|" in response.text
        assert slack_fake.calls == []  # no token: no auth.test, nothing sent to Slack
    finally:
        sender.close()
        server.stop()


def test_without_a_signing_secret_every_http_request_is_refused(
    app_settings: Settings, seeded_store: tuple[Store, list[Episode]], slack_fake: SlackFake
) -> None:
    store, _ = seeded_store
    settings = app_settings.model_copy(update={"slack_signing_secret": None})
    server = AppServer(settings, build_asgi(build_app(settings, store, Renderer()), store)).start()
    sender = SlackSender(server.url, slack_fake, secret="")
    try:
        # Signed with the empty key an attacker would try: still refused.
        assert sender.slash("recent").status_code == 401
    finally:
        sender.close()
        server.stop()
