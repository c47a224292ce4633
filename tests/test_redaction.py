"""Feed URLs with credentials or tokens: fetched with them, never shown with them.

A failing feed's error becomes the "feed is failing" notice in Slack, the status reply and
the CLI's error line, so every error built from a feed URL shows it redacted.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from digests.errors import DigestError, FeedHTTPError, FeedParseError, FeedUnavailable, FetchError
from digests.parse import parse_bytes
from digests.redact import redact_text, redact_url, without_userinfo
from digests.sources.fetch import fetch, make_http_client, redirect_target
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.cli import one_line_error, run_cli, run_cli_process
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake
from tests.test_poll import NOW, settings_for, subscribe

PASSWORD = "s3cretpw"
TOKEN = "PRIVATETOKEN123"
SECRETS = (PASSWORD, TOKEN, "user:")
RSS = b'<?xml version="1.0"?><rss version="2.0"><channel><title>PyTorch</title></channel></rss>'
PAGE = b"""PyTorch: Stack-Aware Merges

A short look at merges.

Published: 2026-10-05T13:00:40Z
Duration: PT2M31S
"""


def secret_url(base: str, path: str = "/feed.xml") -> str:
    """``base`` (``http://host:port``) with credentials in front and a token behind."""
    return base.replace("://", f"://user:{PASSWORD}@", 1) + f"{path}?auth={TOKEN}"


def assert_redacted(err: DigestError) -> None:
    shown = [str(err), err.format_message(), getattr(err, "url", ""), getattr(err, "source", "")]
    shown.append(getattr(err, "reason", ""))
    for text in shown:
        for secret in SECRETS:
            assert secret not in text, text


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with make_http_client(timeout=5.0) as c:
        yield c


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# the helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            f"http://user:{PASSWORD}@127.0.0.1:9/feed.xml?auth={TOKEN}",
            "http://127.0.0.1:9/feed.xml?…",
        ),
        ("https://user@example.com/feed", "https://example.com/feed"),
        ("https://:pw@example.com", "https://example.com"),
        ("https://example.com/feed.xml", "https://example.com/feed.xml"),
        ("https://example.com/feed#frag", "https://example.com/feed#…"),
        ("https://example.com?key=x#frag", "https://example.com?…"),
        ("https://u:p@[::1]:8080/f?k=v", "https://[::1]:8080/f?…"),
        ("https://u:p@host:notaport/f", "https://host:notaport/f"),  # broken URLs too
        ("https://a@b@host/f", "https://host/f"),  # the last "@" ends the userinfo
        ("https://host/@someone/feed", "https://host/@someone/feed"),  # "@" in a path is fine
        ("file:///tmp/feed.xml", "file:///tmp/feed.xml"),
        ("/tmp/feed?.xml", "/tmp/feed?.xml"),  # a path is shown as it is
        ("", ""),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_removes_the_url_and_its_secrets() -> None:
    url = f"http://user:{PASSWORD}@host/feed.xml?auth={TOKEN}&page=2"
    text = f"bad {url}; auth={TOKEN} for user:{PASSWORD} page=2"
    out = redact_text(text, url)
    assert PASSWORD not in out and TOKEN not in out
    assert "http://host/feed.xml?…" in out
    assert "page=2" in out  # a piece too short to be a secret is left alone


def test_without_userinfo_keeps_the_query() -> None:
    assert without_userinfo("https://u:p@host/ep?id=5") == "https://host/ep?id=5"
    assert without_userinfo("https://host/ep?id=5") == "https://host/ep?id=5"


# fetch errors ------------------------------------------------------------------------------


async def test_connection_refused_with_credentials(client: httpx.AsyncClient) -> None:
    url = secret_url(f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(FetchError, match="connection refused") as info:
        await fetch(client, url)
    assert_redacted(info.value)
    assert str(info.value).startswith("cannot fetch http://127.0.0.1:")
    assert "/feed.xml?…" in str(info.value)


@pytest.mark.parametrize(
    ("status", "kind"), [(404, FeedHTTPError), (500, FeedHTTPError), (429, FeedUnavailable)]
)
async def test_http_errors_with_credentials(
    client: httpx.AsyncClient, feed_server: FeedServer, status: int, kind: type[FetchError]
) -> None:
    feed_server.route("/feed.xml", b"", status=status)
    with pytest.raises(kind) as info:
        await fetch(client, secret_url(feed_server.base_url))
    assert_redacted(info.value)
    # The credentials were used: the server saw them (and the token).
    request = feed_server.requests[-1]
    assert request.header("Authorization") is not None
    assert TOKEN in request.path


async def test_credentials_follow_same_origin_redirects_only(
    client: httpx.AsyncClient, feed_server: FeedServer
) -> None:
    feed_server.route("/feed.xml", RSS)
    feed_server.redirect("/moved", "/feed.xml")  # absolute URL, same origin
    feed_server.route("/rel", b"", status=302, content_type=None, headers={"Location": "feed.xml"})
    elsewhere = feed_server.url("/feed.xml").replace("127.0.0.1", "localhost")
    feed_server.redirect("/away", elsewhere)
    for path in ("/moved", "/rel"):
        result = await fetch(client, secret_url(feed_server.base_url, path))
        assert result.content == RSS
        assert feed_server.requests[-1].header("Authorization") is not None
    await fetch(client, secret_url(feed_server.base_url, "/away"))
    assert feed_server.requests[-1].header("Authorization") is None


@pytest.mark.parametrize(
    ("url", "location", "target"),
    [
        ("http://u:p@h/a", "/b", "http://u:p@h/b"),
        ("http://u:p@h/a", "http://h:80/b", "http://u:p@h:80/b"),
        ("http://u:p@h/a", "https://h/b", "https://h/b"),  # another scheme: another origin
        ("https://u:p@h/a", "http://h/b", "http://h/b"),
        ("http://u:p@h/a", "http://h:81/b", "http://h:81/b"),
        ("http://u:p@h/a", "//evil.example/b", "http://evil.example/b"),
        ("http://u:p@h/a", "http://x:y@h/b", "http://x:y@h/b"),  # its own credentials
        ("http://h/a", "/b", "http://h/b"),
    ],
)
def test_redirect_target(url: str, location: str, target: str) -> None:
    assert redirect_target(url, location) == target


async def test_redirect_loop_through_a_target_with_credentials(
    client: httpx.AsyncClient, feed_server: FeedServer
) -> None:
    feed_server.redirect("/a", secret_url(feed_server.base_url, "/b"))
    feed_server.redirect("/b", "/a")
    with pytest.raises(FetchError, match="redirect loop") as info:
        await fetch(client, feed_server.url("/a"))
    assert_redacted(info.value)


async def test_timeout_and_bad_port_with_credentials(
    client: httpx.AsyncClient, feed_server: FeedServer
) -> None:
    feed_server.route("/feed.xml", RSS, delay=2.0)
    with pytest.raises(FetchError, match="timed out") as info:
        await fetch(client, secret_url(feed_server.base_url), total_timeout=0.2)
    assert_redacted(info.value)
    with pytest.raises(FetchError, match="invalid port") as info:
        await fetch(client, secret_url("http://127.0.0.1:99999999"))
    assert_redacted(info.value)


# parse errors and links --------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"<rss><channel><item><title>cut",  # malformed XML
        b"<opml><body/></opml>",  # XML but not a feed
        b"",  # empty
        b"\x89PNG\r\n\x1a\n\x00\x00",  # binary
        b"just some words, not an episode",
    ],
)
def test_parse_errors_with_credentials(body: bytes) -> None:
    with pytest.raises(FeedParseError) as info:
        parse_bytes(body, secret_url("https://feeds.example.com"))
    assert_redacted(info.value)
    assert str(info.value).startswith("cannot parse https://feeds.example.com/feed.xml?…: ")


def test_page_link_has_no_credentials() -> None:
    parsed = parse_bytes(PAGE, secret_url("https://pages.example.com", "/ep"))
    (entry,) = parsed.entries
    assert entry.link == f"https://pages.example.com/ep?auth={TOKEN}"
    assert PASSWORD not in (entry.guid or "")


def test_cli_error_line_has_no_credentials() -> None:
    line = one_line_error(run_cli("parse", secret_url(f"http://127.0.0.1:{closed_port()}")))
    assert "connection refused" in line
    for secret in SECRETS:
        assert secret not in line


# the whole way: a failing credentialed feed, told to a channel -----------------------------


async def test_failing_notice_and_stored_error_have_no_credentials(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    client: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    feed_server.route("/feed.xml", rss(rss_item(3)))
    url = secret_url(feed_server.base_url)
    settings = settings_for(url)
    subscribe(store, "C1")
    first = await run_once(settings, store, deliverer.outbox, client, NOW, deliverer=deliverer)
    assert first.polls[0].ok
    feed_server.route("/feed.xml", b"", status=500)
    for n in range(1, 5):
        when = NOW + timedelta(hours=n)
        report = await run_once(
            settings, store, deliverer.outbox, client, when, deliverer=deliverer
        )
        assert report.polls[0].status == "failed"
        for text in (report.polls[0].error or "", str(report.polls[0].notice)):
            assert not any(s in text for s in SECRETS), text
    state = store.fetch_state("PyTorch")
    assert state.last_error and "HTTP 500" in state.last_error and state.failing_notified
    assert not any(s in state.last_error for s in SECRETS)
    posted = json.dumps(slack_fake.messages("C1"))
    assert "is failing" in posted
    assert "HTTP 500" in posted and not any(s in posted for s in SECRETS), posted


def test_verbose_request_lines_have_no_credentials(feed_server: FeedServer) -> None:
    # -v logs every request httpx makes (INFO); the line stays, the secrets do not. A real
    # process: in this one pytest owns the root logger, so -v would log nowhere.
    url = feed_server.route("/feed.xml", rss(rss_item(3)))
    result = run_cli_process("-v", "parse", "--allow-private", secret_url(url.rsplit("/", 1)[0]))
    assert result.returncode == 0, result.stderr
    assert "HTTP Request: GET http://127.0.0.1:" in result.stderr
    assert "/feed.xml?… " in result.stderr
    for secret in SECRETS:
        assert secret not in result.stderr, result.stderr
