"""What a feed links to is a stranger's URL, whatever the feed's own policy.

A feed read from a local file (as the bundled example is) or a show with ``allow_private``
may itself be private, but its ``<podcast:transcript>`` links are fetched as links users
add: http(s) only, never a file (``file:`` URLs, bare or relative paths, ``~``, symlinks),
a private address only at the feed's own origin (scheme, host, port), and every redirect
hop checked again. Before this, a feed could make the bot read ``/proc/self/environ`` and
post the bot's tokens in the digest's transcript thread.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from digests.extract.episodes import build_episodes
from digests.linked.transcripts import linked_documents_phase
from digests.models import guid_key
from digests.parse import parse_bytes
from digests.sources.fetch import PrivateOrigin, PrivatePolicy, link_policy, make_http_client
from digests.store import Store
from digests.store.transcripts import TranscriptStore
from tests.feedserver import FeedServer
from tests.fixtures.cli import run_cli_process
from tests.slackfake import SlackFake
from tests.test_feeds_transcripts import VTT

NOW = datetime(2026, 10, 6, 9, 0, tzinfo=UTC)
SHOW, REPO = "PyTorch", "pytorch/pytorch"
SECRET = "xoxb-LEAKED-0123456789-do-not-post"
EXCERPT = "Paired with PR 199734, which posts…"


def feed(transcript_url: str) -> bytes:
    return (
        '<?xml version="1.0"?><rss version="2.0" '
        'xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel><title>PyTorch</title>'
        "<item><guid>ep-1</guid><title>Autotune day</title>"
        "<link>https://example.invalid/ep-1</link>"
        "<pubDate>Mon, 05 Oct 2026 13:00:00 GMT</pubDate>"
        f"<description>{EXCERPT}</description>"
        f'<podcast:transcript url="{transcript_url}" type="text/plain"/>'
        "</item></channel></rss>"
    ).encode()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with make_http_client(timeout=5.0) as c:
        yield c


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(f"SLACK_BOT_TOKEN={SECRET}\n")
    return path


async def phase(
    store: Store,
    client: httpx.AsyncClient,
    feed_location: str,
    feed_policy: PrivatePolicy,
    transcript_url: str,
) -> str | None:
    """The transcript phase for one episode linking ``transcript_url``; the stored error
    (None when the transcript was read)."""
    store.ensure_show(SHOW, "", REPO)
    episodes = build_episodes(parse_bytes(feed(transcript_url), feed_location), SHOW, REPO)
    (episode,) = await linked_documents_phase(
        store, client, episodes, show=SHOW, repo=REPO, now=NOW,
        feed_location=feed_location, feed_policy=feed_policy,
    )  # fmt: skip
    stored = TranscriptStore(store).get(SHOW, [guid_key("ep-1")])[guid_key("ep-1")]
    assert SECRET not in episode.transcript and SECRET not in stored.text
    if stored.status == "ok":
        return None
    assert episode.transcript == episodes[0].transcript  # the feed's excerpt, kept
    return stored.error


def test_link_policy_never_allows_files_and_keeps_private_to_the_feeds_origin() -> None:
    loopback = PrivateOrigin("net", "127.0.0.1", 8000)
    assert link_policy("feeds/pytorch.xml", PrivateOrigin("file")) is False
    assert link_policy("file:///srv/feed.xml", True) is False
    assert link_policy("/srv/feed.xml", True) is False
    assert link_policy("https://feeds.example.com/f.xml", False) is False
    assert link_policy("http://127.0.0.1:8000/f.xml", loopback) == PrivateOrigin(
        "net", "127.0.0.1", 8000, "http"
    )
    # allow_private trusts the operator's host, not every host the feed names.
    assert link_policy("https://feeds.internal/f.xml", True) == PrivateOrigin(
        "net", "feeds.internal", 443, "https"
    )
    assert link_policy("http://127.0.0.1:8000/f.xml", PrivateOrigin("net", "10.0.0.5", 80)) is False


@pytest.mark.parametrize(
    "policy", [PrivateOrigin("file"), True], ids=["local-file", "allow-private"]
)
@pytest.mark.parametrize("route", ["file-url", "bare-path", "relative-path", "home", "symlink"])
async def test_a_local_file_feed_never_reads_a_file_it_links(
    route: str,
    policy: PrivatePolicy,
    tmp_path: Path,
    secret_file: Path,
    store: Store,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    link = tmp_path / "link.txt"
    link.symlink_to(secret_file)
    url = {
        "file-url": secret_file.as_uri(),
        "bare-path": str(secret_file),
        "relative-path": "secret.txt",
        "home": "~/secret.txt",
        "symlink": link.as_uri(),
    }[route]
    feed_path = tmp_path / "feed.xml"
    feed_path.write_bytes(feed(url))
    error = await phase(store, client, str(feed_path), policy, url)
    assert error is not None and "local files are not allowed" in error


async def test_proc_self_environ_is_never_read(store: Store, client: httpx.AsyncClient) -> None:
    error = await phase(store, client, "config/example-feed.xml", True, "file:///proc/self/environ")
    assert error is not None and "local files are not allowed" in error


@pytest.mark.parametrize(
    "policy",
    [PrivateOrigin("net", "127.0.0.1", 0), True],
    ids=["loopback-feed", "allow-private"],
)
async def test_loopback_on_another_port_is_refused_and_the_feeds_origin_allowed(
    policy: PrivatePolicy,
    feed_server: FeedServer,
    store: Store,
    client: httpx.AsyncClient,
) -> None:
    if isinstance(policy, PrivateOrigin):
        policy = PrivateOrigin("net", "127.0.0.1", feed_server.port)
    feed_url = feed_server.url("/feed.xml")
    with FeedServer() as other:
        other.route("/secret.txt", f"token {SECRET}", content_type="text/plain")
        error = await phase(store, client, feed_url, policy, other.url("/secret.txt"))
        assert error is not None and "private address" in error
        assert other.requests_to("/secret.txt") == []

    # The feed's own origin still serves its transcripts (a new episode's link).
    feed_server.route("/t.vtt", VTT, content_type="text/vtt")
    with store.engine.begin() as conn:  # forget the refusal so the link is due again
        conn.exec_driver_sql("DELETE FROM episode_transcripts")
    assert await phase(store, client, feed_url, policy, feed_server.url("/t.vtt")) is None


def _recording_client(seen: list[str], redirects: dict[str, str]) -> httpx.AsyncClient:
    """A client whose transport answers without a network: the feed's origin redirects as
    told; any request that reaches the transport is recorded (and must not happen for a
    refused address)."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        target = redirects.get(request.url.path)
        if target is not None:
            return httpx.Response(302, headers={"Location": target})
        return httpx.Response(200, text=f"metadata {SECRET}")

    return httpx.AsyncClient(transport=httpx.MockTransport(answer), follow_redirects=False)


METADATA = "http://169.254.169.254/latest/meta-data/iam"


@pytest.mark.parametrize("policy", [PrivateOrigin("net", "127.0.0.1", 8000), True])
async def test_cloud_metadata_is_refused_before_any_connection(
    policy: PrivatePolicy, store: Store
) -> None:
    seen: list[str] = []
    async with _recording_client(seen, {}) as client:
        error = await phase(store, client, "http://127.0.0.1:8000/feed.xml", policy, METADATA)
    assert error is not None and "private address 169.254.169.254" in error
    assert seen == []


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("file:///proc/self/environ", "unsupported URL scheme 'file'"),
        (METADATA, "private address 169.254.169.254"),
        ("http://127.0.0.1:9999/secret", "private address 127.0.0.1"),
        ("https://127.0.0.1:8000/secret", "private address 127.0.0.1"),  # another scheme
    ],
    ids=["file", "metadata", "loopback-other-port", "other-scheme"],
)
async def test_a_redirect_from_the_feeds_origin_is_checked_again(
    target: str, reason: str, store: Store
) -> None:
    seen: list[str] = []
    async with _recording_client(seen, {"/t.txt": target}) as client:
        error = await phase(
            store, client, "http://127.0.0.1:8000/feed.xml", True, "http://127.0.0.1:8000/t.txt"
        )
    assert error is not None and reason in error
    assert seen == ["http://127.0.0.1:8000/t.txt"]  # only the feed's origin was asked


def test_run_once_posts_no_token_from_a_linked_local_file(
    tmp_path: Path, secret_file: Path, slack_fake: SlackFake, db_url: str
) -> None:
    """The reported attack end to end: a local-file feed linking /proc/self/environ and a
    file, polled by a real process holding real-looking tokens, posting to the Slack fake."""
    items = "".join(
        f"<item><guid>ep-{i}</guid><title>Autotune day {i}</title>"
        f"<pubDate>Mon, 0{5 - i} Oct 2026 13:00:00 GMT</pubDate>"
        f"<description>{EXCERPT}</description>"
        f'<podcast:transcript url="{url}" type="text/plain"/></item>'
        for i, url in enumerate(["file:///proc/self/environ", str(secret_file)])
    )
    feed_path = tmp_path / "feed.xml"
    feed_path.write_text(
        '<?xml version="1.0"?><rss version="2.0" '
        'xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel><title>PyTorch</title>'
        f"{items}</channel></rss>"
    )
    config = tmp_path / "digestbot.toml"
    config.write_text(
        f'timezone = "UTC"\nbackfill = 2\n\n[[shows]]\nname = "PyTorch"\nfeed = "{feed_path}"\n'
        'repo = "pytorch/pytorch"\n\n[[channels]]\nid = "C0LEAK0001"\nshows = ["PyTorch"]\n'
    )
    env = {
        "DIGESTBOT_CONFIG": str(config),
        "DATABASE_URL": db_url,
        "SLACK_BOT_TOKEN": SECRET,
        "SLACK_SIGNING_SECRET": "signing-" + SECRET,
        "SLACK_API_URL": slack_fake.api_url,
    }
    slack_fake.tokens.add(SECRET)
    done = run_cli_process("run", "--once", env={**os.environ, **env}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    posts = slack_fake.messages("C0LEAK0001")
    assert [p["text"] for p in posts if not p.get("thread_ts")], "the digests were posted"
    sent = [call.params for call in slack_fake.calls]  # what was posted, not the auth
    assert len(sent) > 2 and SECRET not in json.dumps(sent, default=str)
    assert EXCERPT.rstrip("…") in json.dumps(posts, ensure_ascii=False)
