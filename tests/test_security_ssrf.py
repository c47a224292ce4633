"""No SSRF through the feeds an operator configured: polled feeds and the
CLI refuse redirect hops to non-public addresses; the first hop may be private only when the
config (or the command line) names a private host itself, or says ``allow_private``."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from bot.jobs.cycle import PollResult
from bot.jobs.pipeline import poll_show
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.errors import FetchError
from digests.sources.addresses import is_public_address, literal_ip, names_private_host
from digests.sources.fetch import PrivateOrigin, PrivatePolicy, fetch, private_policy
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.cli import ROOT, one_line_error, run_cli
from tests.fixtures.delivery import rss, rss_item

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
EXAMPLE_FEED = ROOT / "config" / "example-feed.xml"
SECRET = "/latest/meta-data/iam/security-credentials/"
PUBLIC = "http://93.184.216.34"
NAMED = "the start's own origin"


# what counts as public ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "192.0.0.8",  # Python 3.11 calls it global
        "192.0.0.9",
        "192.0.0.170",
        "100.64.0.1",
        "100.127.255.254",
        "198.18.0.1",
        "198.19.255.254",
        "0.1.2.3",
        "224.0.0.251",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "192.88.99.1",
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "2001::1",  # Teredo
        "::ffff:192.0.0.8",
        "ff02::1",
    ],
)
def test_non_public_whatever_pythons_table_says(address: str) -> None:
    assert is_public_address(address) is False


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111"])
def test_public_stays_public(address: str) -> None:
    assert is_public_address(address) is True


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("10.0.0.1.", "10.0.0.1"),
        ("feeds.example.com", None),
        ("deadbeef", None),  # a name made of hex letters is still a name
    ],
)
def test_literal_ip_reads_every_spelling(host: str, address: str | None) -> None:
    ip = literal_ip(host)
    assert (str(ip) if ip is not None else None) == address


@pytest.mark.parametrize(
    ("location", "named"),
    [
        ("http://127.0.0.1:8000/feed.xml", True),
        ("http://2130706433/feed.xml", True),
        ("http://localhost/feed.xml", True),
        ("http://feeds.localhost/feed.xml", True),
        ("http://[fd00::1]/feed.xml", True),
        ("http://192.0.0.8/feed.xml", True),
        ("file:///srv/feed.xml", True),
        ("feeds/pytorch.xml", True),
        ("https://feeds.example.com/feed.xml", False),
        ("http://8.8.8.8/feed.xml", False),
        ("http://intranet/feed.xml", False),  # resolves privately, but says so nowhere
    ],
)
def test_names_private_host(location: str, named: bool) -> None:
    assert names_private_host(location) is named


def test_private_policy() -> None:
    assert private_policy("https://feeds.example.com/feed.xml") is False
    assert private_policy("http://127.0.0.1/feed.xml") == PrivateOrigin("net", "127.0.0.1", 80)
    assert private_policy("https://LOCALHOST:8443/f") == PrivateOrigin("net", "localhost", 8443)
    assert private_policy("feeds/pytorch.xml") == PrivateOrigin("file")
    assert private_policy("file://elsewhere/feed.xml") is False  # fetch says why it cannot
    assert private_policy("https://feeds.example.com/feed.xml", allow_private=True) is True


# the policy over redirect hops (MockTransport: literal addresses, no DNS, no sockets) -------


def _mock(routes: dict[str, str]) -> tuple[httpx.AsyncClient, list[str]]:
    """A client answering ``routes`` (URL → redirect target; anything else: a feed)."""
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        target = routes.get(str(request.url))
        if target is not None:
            return httpx.Response(302, headers={"Location": target})
        return httpx.Response(200, content=b"<rss/>")

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), asked


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/",
        "http://192.0.0.8/",
        "http://100.64.0.1/",
        "http://198.18.0.1/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",  # httpx itself refuses the octal form: refused either way
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
    ],
)
@pytest.mark.parametrize("policy", [False, PrivateOrigin("net", "93.184.216.34", 80)])
async def test_redirect_to_a_non_public_address_is_refused(
    target: str, policy: PrivatePolicy
) -> None:
    client, asked = _mock({f"{PUBLIC}/feed.xml": target})
    async with client:
        with pytest.raises(FetchError, match=r"refusing private address|Invalid IPv4 address"):
            await fetch(client, f"{PUBLIC}/feed.xml", allow_private=policy)
    assert asked == [f"{PUBLIC}/feed.xml"]  # the private hop was never requested


@pytest.mark.parametrize(
    ("start", "routes", "policy", "ok"),
    [
        # Public to public: followed, whatever the policy.
        (f"{PUBLIC}/a", {f"{PUBLIC}/a": "http://8.8.8.8/b"}, False, True),
        # A private host the operator named: its own redirects stay allowed...
        ("http://10.0.0.5/a", {"http://10.0.0.5/a": "/b"}, NAMED, True),
        # ...and so does a move to a public host...
        ("http://10.0.0.5/a", {"http://10.0.0.5/a": f"{PUBLIC}/b"}, NAMED, True),
        # ...but not another port or another private host.
        ("http://10.0.0.5/a", {"http://10.0.0.5/a": "http://10.0.0.5:8080/b"}, NAMED, False),
        ("http://10.0.0.5/a", {"http://10.0.0.5/a": "http://10.0.0.6/b"}, NAMED, False),
        # Back to private after a public hop: refused.
        (
            "http://10.0.0.5/a",
            {"http://10.0.0.5/a": f"{PUBLIC}/b", f"{PUBLIC}/b": "http://10.0.0.5/c"},
            NAMED,
            True,  # the operator's own host, same host and port as the first hop
        ),
        (
            "http://10.0.0.5/a",
            {"http://10.0.0.5/a": f"{PUBLIC}/b", f"{PUBLIC}/b": "http://10.0.0.7/c"},
            NAMED,
            False,
        ),
        # Private first hop without the operator's say-so: refused before any request.
        ("http://10.0.0.5/a", {}, False, False),
        # allow_private: anything goes.
        ("http://10.0.0.5/a", {"http://10.0.0.5/a": "http://10.0.0.6/b"}, True, True),
    ],
)
async def test_redirect_policy_table(
    start: str, routes: dict[str, str], policy: PrivatePolicy | str, ok: bool
) -> None:
    if policy == NAMED:
        policy = private_policy(start)  # the start names a private host: its origin may be
    assert not isinstance(policy, str)
    client, _ = _mock(routes)
    async with client:
        if ok:
            assert (await fetch(client, start, allow_private=policy)).content == b"<rss/>"
        else:
            with pytest.raises(FetchError, match="refusing private address"):
                await fetch(client, start, allow_private=policy)


# polled feeds, end to end on loopback ------------------------------------------------------


def _settings(feed: str, **show: object) -> Settings:
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=feed, repo="pytorch/pytorch", **show)],  # type: ignore[arg-type]
        schedule=ScheduleConfig(poll_minutes=15),
        team_id="T1",
        slack_bot_token=None,
    )


async def _poll(settings: Settings, store: Store, http: httpx.AsyncClient) -> PollResult:
    return await poll_show(settings, store, http, settings.shows[0], NOW)


@pytest.fixture
def metadata(feed_server: FeedServer) -> str:
    """A loopback "metadata service" and a feed path that redirects to it by number."""
    feed_server.route(SECRET, "AKIA-SECRET", content_type="text/plain")
    return f"http://2130706433:{feed_server.port}{SECRET}"


async def test_polled_feed_redirect_to_loopback_is_refused(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient, metadata: str
) -> None:
    url = feed_server.redirect("/feed.xml", metadata)
    result = await _poll(_settings(url), store, http)
    assert result.status == "failed"
    assert "refusing private address 127.0.0.1" in (result.error or "")
    assert feed_server.requests_to(SECRET) == []
    assert "refusing private address" in (store.fetch_state("PyTorch").last_error or "")


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
async def test_polled_feed_on_a_named_private_host_and_its_own_redirects_work(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient, host: str
) -> None:
    feed_server.route("/feed.xml", rss(rss_item(1)))
    # A relative Location: the redirect stays on whatever host name the config used.
    feed_server.route("/old.xml", b"", status=301, headers={"Location": "/feed.xml"})
    url = feed_server.url("/old.xml").replace("127.0.0.1", host)
    result = await _poll(_settings(url), store, http)
    assert result.status == "ok", result.error


async def test_allow_private_on_the_show_lets_redirects_reach_private_hosts(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    feed_server.route("/feed.xml", rss(rss_item(1)))
    url = feed_server.redirect("/old.xml", f"http://2130706433:{feed_server.port}/feed.xml")
    result = await _poll(_settings(url, allow_private=True), store, http)
    assert result.status == "ok", result.error


def test_allow_private_is_a_show_setting() -> None:
    assert ShowConfig(name="X", feed="http://intranet/feed.xml").allow_private is False
    assert ShowConfig(name="X", feed="f", allow_private=True).allow_private is True


# the CLI -----------------------------------------------------------------------------------


def test_cli_refuses_a_redirect_to_loopback_unless_allowed(
    feed_server: FeedServer, metadata: str
) -> None:
    feed_server.route(SECRET, EXAMPLE_FEED.read_bytes())  # what --allow-private then reads
    url = feed_server.redirect("/feed.xml", metadata)
    line = one_line_error(run_cli("parse", url, "--json"))
    assert "refusing private address" in line
    assert feed_server.requests_to(SECRET) == []

    allowed = run_cli("parse", url, "--json", "--allow-private")
    assert allowed.returncode == 0, allowed.stderr
    assert len(feed_server.requests_to(SECRET)) == 1


@pytest.mark.parametrize("link", ["/etc/hostname", "file:///etc/hostname"])
async def test_a_private_host_named_for_a_feed_opens_no_local_files(link: str) -> None:
    # What a feed on the operator's private host links to (a transcript) may come from that
    # host, never from this machine's files.
    client, _ = _mock({})
    async with client:
        with pytest.raises(FetchError, match="local files are not allowed"):
            await fetch(client, link, allow_private=private_policy("http://10.0.0.5/feed.xml"))
