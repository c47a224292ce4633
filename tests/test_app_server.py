"""``serve()`` in the caller's loop, and the app with no bot token or no signing secret."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from bot.listeners.app import build_app
from bot.server.asgi import build_asgi, serve
from bot.server.listen import listen
from config.settings import Settings
from digests.models import Episode
from digests.render.renderer import Renderer
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


def test_the_server_is_the_only_signature_check_and_fails_closed(
    app_settings: Settings, seeded_store: tuple[Store, list[Episode]], slack_fake: SlackFake
) -> None:
    # Bolt does not verify again (build_app), so an app whose secret the server cannot read
    # must get nothing through: every request refused, signed or not.
    store, _ = seeded_store
    app = build_app(app_settings, store, Renderer())
    assert not any(
        type(m).__name__ == "AsyncRequestVerification" for m in app._async_middleware_list
    )
    app.signing_secret = ""  # what the server reads; blank reads as no secret at all
    server = AppServer(app_settings, build_asgi(app, store)).start()
    sender = SlackSender(server.url, slack_fake)
    try:
        assert sender.slash("recent").status_code == 401
        assert (
            sender.post(
                sender.slash_body("recent"), "application/x-www-form-urlencoded", signed=False
            ).status_code
            == 401
        )
    finally:
        sender.close()
        server.stop()


# TCP_NODELAY ------------------------------------------------------------------------------


def test_listen_makes_a_tcp_socket_with_nodelay_that_accepted_sockets_inherit() -> None:
    sock = listen("127.0.0.1", 0)
    try:
        sock.listen()
        assert sock.proto == socket.IPPROTO_TCP  # what asyncio checks before setting it
        with socket.create_connection(sock.getsockname()) as _client:
            conn, _ = sock.accept()
            with conn:
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()


async def test_connections_served_from_listen_have_nodelay() -> None:
    # uvicorn serves through loop.create_server(sock=...): check the transport's socket.
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future[int] = loop.create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            conn = transport.get_extra_info("socket")
            accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await loop.create_server(Probe, sock=listen("127.0.0.1", 0))
    try:
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await accepted != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


# /healthz checks the schema ---------------------------------------------------------------


async def _healthz(store: Store, settings: Settings) -> httpx.Response:
    asgi = build_asgi(build_app(settings, store, Renderer()), store)
    transport = httpx.ASGITransport(app=asgi)
    async with httpx.AsyncClient(transport=transport, base_url="http://digestbot") as client:
        return await client.get("/healthz")


async def test_healthz_503_when_the_sqlite_file_is_deleted(
    app_settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "digestbot.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    try:
        assert (await _healthz(store, app_settings)).status_code == 200
        path.unlink()  # pooled connections still answer from the deleted file
        response = await _healthz(store, app_settings)
        assert response.status_code == 503
        assert response.json() == {"ok": False}
    finally:
        store.close()


async def test_healthz_503_when_the_schema_is_gone(app_settings: Settings, store: Store) -> None:
    assert (await _healthz(store, app_settings)).status_code == 200
    cascade = "" if store.engine.dialect.name == "sqlite" else " CASCADE"
    with store.engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE shows{cascade}"))
    assert (await _healthz(store, app_settings)).status_code == 503
