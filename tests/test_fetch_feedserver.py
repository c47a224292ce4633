"""The feed server itself, checked with a plain httpx client (what other tests rely on)."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.feedserver import FeedServer


@pytest.mark.parametrize(
    ("sent", "status"),
    [('"v1"', 304), ('"v0", "v1"', 304), ("*", 304), ('"v2"', 200), (None, 200)],
)
def test_if_none_match(feed_server: FeedServer, sent: str | None, status: int) -> None:
    url = feed_server.route("/feed.xml", b"<rss/>", etag='"v1"')
    headers = {"If-None-Match": sent} if sent else {}
    response = httpx.get(url, headers=headers)
    assert response.status_code == status
    assert response.content == (b"" if status == 304 else b"<rss/>")
    assert response.headers["ETag"] == '"v1"'


def test_if_modified_since(feed_server: FeedServer) -> None:
    stamp = "Mon, 05 Oct 2026 13:00:40 GMT"
    url = feed_server.route("/feed.xml", "<rss/>", last_modified=stamp)
    assert httpx.get(url, headers={"If-Modified-Since": stamp}).status_code == 304
    other = "Sun, 04 Oct 2026 13:00:40 GMT"
    assert httpx.get(url, headers={"If-Modified-Since": other}).status_code == 200


def test_route_replaced_between_polls_and_requests_recorded(feed_server: FeedServer) -> None:
    url = feed_server.route("/feed.xml", b"one")
    assert httpx.get(url + "?x=1").content == b"one"
    feed_server.route("/feed.xml", b"two", status=500, headers={"X-Why": "broken"})
    second = httpx.get(url, headers={"X-Test": "yes"})
    assert (second.status_code, second.content, second.headers["X-Why"]) == (500, b"two", "broken")
    recorded = feed_server.requests_to("/feed.xml")
    assert [r.path for r in recorded] == ["/feed.xml?x=1", "/feed.xml"]
    assert recorded[1].header("x-test") == "yes"
    feed_server.clear_requests()
    assert feed_server.requests == []


@pytest.mark.parametrize("declare_length", [True, False])
def test_huge_streams_every_byte(feed_server: FeedServer, declare_length: bool) -> None:
    size = 3 * 1024 * 1024 + 7
    url = feed_server.huge("/huge", size, declare_length=declare_length)
    with httpx.stream("GET", url) as response:
        total = sum(len(chunk) for chunk in response.iter_raw())
        chunked = response.headers.get("Transfer-Encoding") == "chunked"
    assert total == size
    assert chunked is not declare_length


def test_drip_and_redirect(feed_server: FeedServer) -> None:
    feed_server.drip("/slow", b"abc", every=0.01)
    feed_server.redirect("/old", "/slow", status=301)
    response = httpx.get(feed_server.url("/old"), follow_redirects=True)
    assert response.content == b"abc"
    assert [r.path for r in feed_server.requests] == ["/old", "/slow"]


def test_unknown_path_and_head(feed_server: FeedServer) -> None:
    assert httpx.get(feed_server.url("/nope")).status_code == 404
    url = feed_server.route("/feed.xml", b"12345")
    head = httpx.head(url)
    assert head.headers["Content-Length"] == "5"
    assert head.content == b""


def test_delay_does_not_block_other_requests(feed_server: FeedServer) -> None:
    slow = feed_server.route("/slow", b"late", delay=0.5)
    fast = feed_server.route("/fast", b"now")
    done: list[bytes] = []
    thread = threading.Thread(target=lambda: done.append(httpx.get(slow, timeout=5).content))
    thread.start()
    assert httpx.get(fast).content == b"now"
    assert done == []  # the slow one is still waiting: the server is not serialised
    thread.join()
    assert done == [b"late"]


def test_stop_ends_pending_delays() -> None:
    server = FeedServer().start()
    url = server.route("/slow", b"x", delay=30.0)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            httpx.get(url, timeout=10)
        except httpx.HTTPError as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    while not server.requests:
        threading.Event().wait(0.01)
    server.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(errors) == 1
