"""Socket Mode against a local stand-in for Slack's side: ``apps.connections.open`` over HTTP
and the WebSocket it hands out, both on 127.0.0.1 (aiohttp). The tests/slackfake Web API
fake does not answer ``apps.connections.open``, so the stand-in serves it."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack import make_web_client
from bot.listeners.app import build_app
from bot.server.socket_mode import start_socket_mode
from config.settings import Settings
from digests.models import Episode
from digests.render.renderer import Renderer
from digests.store import Store
from tests.fixtures.app import CHANNEL, TEAM, USER, assert_valid_message, wait_for
from tests.slackfake import SlackFake

APP_TOKEN = "xapp-1-A0TEST-1-test"


@dataclass
class SocketStandIn:
    """Slack's Socket Mode side: hands out a ws:// URL, then speaks envelopes over it."""

    port: int = 0
    opened_with: list[str] = field(default_factory=list)
    received: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    sockets: list[web.WebSocketResponse] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    async def connections_open(self, request: web.Request) -> web.Response:
        self.opened_with.append(request.headers.get("Authorization", ""))
        return web.json_response({"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?t=1"})

    async def link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.sockets.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "connection_info": {"app_id": "A0TEST"},
                "debug_info": {"host": "standin", "approximate_connection_time": 3600},
            }
        )
        self.connected.set()
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                await self.received.put(json.loads(message.data))
        return ws

    async def send(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Send one envelope and wait for the app's acknowledgement of it."""
        await self.sockets[-1].send_json(envelope)
        while True:
            answer = await asyncio.wait_for(self.received.get(), timeout=10)
            if answer.get("envelope_id") == envelope["envelope_id"]:
                return answer


@pytest.fixture
async def standin() -> AsyncIterator[SocketStandIn]:
    stand = SocketStandIn()
    app = web.Application()
    app.router.add_post("/api/apps.connections.open", stand.connections_open)
    app.router.add_get("/link/", stand.link)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    stand.port = int(sock.getsockname()[1])
    await web.SockSite(runner, sock).start()
    try:
        yield stand
    finally:
        for ws in stand.sockets:
            await ws.close()
        await runner.cleanup()


def slash_envelope(text: str) -> dict[str, Any]:
    return {
        "envelope_id": "env-slash-1",
        "type": "slash_commands",
        "accepts_response_payload": True,
        "payload": {
            "token": "legacy",
            "team_id": TEAM,
            "team_domain": "digestbot-test",
            "channel_id": CHANNEL,
            "channel_name": "podcasts",
            "user_id": USER,
            "user_name": "ada",
            "command": "/episodes",
            "text": text,
            "api_app_id": "A0TEST",
            "is_enterprise_install": "false",
            "response_url": "http://127.0.0.1:9/unused",
            "trigger_id": "1.2.3",
        },
    }


async def test_socket_mode_connects_and_answers_a_command(
    standin: SocketStandIn,
    app_settings: Settings,
    seeded_store: tuple[Store, list[Episode]],
    slack_fake: SlackFake,
) -> None:
    store, episodes = seeded_store
    # No signing secret: Socket Mode is not signed, and HTTP must then refuse everything.
    settings = app_settings.model_copy(update={"slack_signing_secret": None})
    app = build_app(settings, store, Renderer(), client=make_web_client(settings))
    handler = await start_socket_mode(
        app, APP_TOKEN, web_client=AsyncWebClient(base_url=standin.api_url)
    )
    try:
        await asyncio.wait_for(standin.connected.wait(), timeout=10)
        assert standin.opened_with == [f"Bearer {APP_TOKEN}"]

        answer = await standin.send(slash_envelope("recent 2"))
        payload = answer["payload"]
        assert payload["response_type"] == "ephemeral"
        assert_valid_message(payload)
        listed = json.dumps(payload["blocks"])
        assert all(f"{e.url}|" in listed for e in episodes[:2])
        assert f"{episodes[2].url}|" not in listed

        bad = await standin.send({**slash_envelope("pr abc"), "envelope_id": "env-2"})
        assert "is not a pull-request number" in bad["payload"]["blocks"][0]["text"]["text"]

        # Events arrive the same way; the lazy listener then calls the Web API (the fake).
        event = {
            "envelope_id": "env-3",
            "type": "events_api",
            "accepts_response_payload": False,
            "payload": {
                "team_id": TEAM,
                "api_app_id": "A0TEST",
                "type": "event_callback",
                "event_id": "Ev1",
                "event_time": 1,
                "event": {"type": "app_home_opened", "user": USER, "tab": "home"},
            },
        }
        acked = await standin.send(event)
        assert "payload" not in acked or not acked["payload"]
        view = await asyncio.to_thread(wait_for, lambda: slack_fake.home_view(USER))
        assert view["type"] == "home"
    finally:
        await handler.close_async()
