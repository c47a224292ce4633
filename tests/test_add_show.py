"""`/episodes add-show` and `remove-show`, through signed slash commands and
button clicks against the real app, the Slack fake (``users.info``) and a loopback feed
server, on SQLite and PostgreSQL.

The feed server is on 127.0.0.1, which the guard refuses: the tests that must reach it say
so with ``digests.sources.added_feeds.pretend_public`` (test-only, one host and port), never with a
setting."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from bot.delivery.deliverer import Deliverer
from bot.jobs.daily import daily_deliveries
from bot.jobs.enrichment import attach_details, enrich_shows, github_client, make_github_http
from bot.jobs.pipeline import run_once
from bot.jobs.recap import recap_deliveries
from bot.jobs.scheduler import Clock
from bot.listeners.commands.add_show import ADD_ACTION, CANCEL_ACTION, show_name
from bot.listeners.commands.model import CommandError
from bot.listeners.commands.shows_parse import AddShow, RemoveShow, head_word, parse_show_command
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import Episode, PullRequestRef
from digests.render.renderer import Renderer
from digests.sources.added_feeds import pretend_public, refusal
from digests.sources.fetch import make_http_client
from digests.store import Store
from digests.store.schema import subscriptions
from tests.feedserver import FeedServer
from tests.fixtures.app import CHANNEL, TEAM, RunningApp, in_process, make_settings
from tests.fixtures.cli import run_cli
from tests.fixtures.delivery import rss, rss_item, slack_outbox
from tests.githubfake import GitHubFake
from tests.slackfake import SlackFake

ADMIN = "U0ADMIN001"
OWNER = "U0OWNER001"
MEMBER = "U0MEMBER01"
GUEST_ADMIN = "U0GUEST001"  # an admin of another organisation, in a shared channel
LISTED = "U0LISTED01"  # in the settings' `admins`, unknown to users.info
NOW = datetime(2026, 10, 8, 9, 0, tzinfo=UTC)
PUBLIC_LOOKING = "feeds.public-looking.test"


def jax_feed(title: str = "JAX Daily") -> str:
    items = "".join(
        f"""<item><title>JAX: Episode {n}</title><guid>jax-{n}</guid>
        <link>https://episodes.example.test/jax/{n}</link>
        <pubDate>Mon, 0{n} Oct 2026 13:00:00 GMT</pubDate>
        <description>PR {5000 + n} lands; see
        https://github.com/google/jax/pull/{6000 + n} too.</description></item>"""
        for n in (3, 2, 1)
    )
    return (
        "<?xml version='1.0' encoding='UTF-8'?><rss version='2.0'><channel>"
        f"<title>{title}</title><link>https://episodes.example.test/jax</link>"
        f"<description>JAX briefing</description>{items}</channel></rss>"
    )


@pytest.fixture
def app_for(
    seeded_store: tuple[Store, list[Episode]],
    slack_fake: SlackFake,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Any]:
    """``app_for(**settings)``: the real app over the seeded store, with those settings."""
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    store, episodes = seeded_store
    slack_fake.add_user(ADMIN, is_admin=True)
    slack_fake.add_user(OWNER, is_owner=True)
    slack_fake.add_user(MEMBER)
    slack_fake.add_user(GUEST_ADMIN, team_id="T0ELSEWHERE", is_admin=True)
    opened: list[Any] = []

    def make(**overrides: Any) -> RunningApp:
        settings = make_settings(slack_fake.api_url, slack_fake.token, **overrides)
        context = in_process(settings, store, slack_fake, episodes, reply_cache_ttl=0)
        opened.append(context)
        return context.__enter__()

    yield make
    for context in reversed(opened):
        context.__exit__(None, None, None)


@pytest.fixture
def app(app_for: Any) -> RunningApp:
    return app_for(admins=[LISTED])


@pytest.fixture
def public_feed_server(feed_server: FeedServer) -> Iterator[FeedServer]:
    """The loopback feed server, taken for a public host by the add-show guard (test-only)."""
    with pretend_public("127.0.0.1", feed_server.port):
        yield feed_server


def slash(app: RunningApp, text: str, user: str = ADMIN) -> tuple[dict[str, Any], list[Any]]:
    """(the ack's body, what followed through the response_url)."""
    url = app.fake.response_url()
    response = app.sender.slash(text, user=user, response_url=url)
    assert response.status_code == 200
    body = response.json() if response.content else {}
    return body, app.fake.responses(url)


def follow_up(app: RunningApp, text: str, user: str = ADMIN) -> dict[str, Any]:
    _, responses = slash(app, text, user)
    assert len(responses) == 1, responses
    reply: dict[str, Any] = responses[0]
    assert reply["response_type"] == "ephemeral"
    return reply


def click(app: RunningApp, action: str, value: str, user: str = ADMIN) -> dict[str, Any]:
    url = app.fake.response_url()
    app.sender.block_action(action, value, response_url=url, user=user, ephemeral=True)
    responses = app.fake.responses(url)
    assert len(responses) == 1, responses
    return dict(responses[0])


def button_value(reply: dict[str, Any], action: str) -> str:
    for block in reply["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action:
                return str(element["value"])
    raise AssertionError(f"no {action} button in {reply}")


def usage_follows(reply: dict[str, Any], subcommand: str) -> None:
    assert f"/episodes {subcommand}" in str(reply["blocks"]), reply


# the parser and the pure parts ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("add-show https://feeds.example.com/jax.xml",
         AddShow("https://feeds.example.com/jax.xml")),
        ("ADD-SHOW <https://f.example.com/a.xml> google/jax",
         AddShow("https://f.example.com/a.xml", "google/jax")),
        ("add-show <https://f.example.com/a?x=1&amp;y=2|f.example.com> <https://github.com/google/jax>",
         AddShow("https://f.example.com/a?x=1&y=2", "google/jax")),
        ('remove-show "JAX Daily"', RemoveShow("JAX Daily")),
        ("remove-show JAX Daily", RemoveShow("JAX Daily")),
    ],
)  # fmt: skip
def test_parse_show_commands(text: str, command: object) -> None:
    assert head_word(text) is not None
    assert parse_show_command(text) == command


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("add-show", "Which feed?"),
        ("add-show feeds", "`feeds` is not an http(s) link."),
        ("add-show ftp://feeds.example.com/a.xml", "is not an http(s) link"),
        ("add-show https://f.example.com/a.xml not-a-repo", "is not a GitHub repository"),
        ("add-show https://f.example.com/a.xml a/b c", "Unexpected `c` after `add-show`"),
        ("add-show https://f.example.com/" + "a" * 1000, "longer than 1000 characters"),
        ("remove-show", "Which show?"),
    ],
)
def test_bad_show_commands_are_one_line(text: str, reason: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_show_command(text)
    assert reason in info.value.reason or reason in str(info.value)
    assert info.value.usage.startswith("`/episodes")


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://feeds.example.com/jax.xml", None),
        ("http://93.184.216.34/feed.xml", None),
        ("http://127.0.0.1/feed.xml", "private address (127.0.0.1)"),
        ("http://localhost:8080/feed.xml", "localhost"),
        ("http://feeds.localhost/feed.xml", "localhost"),
        ("http://10.1.2.3/feed.xml", "private address (10.1.2.3)"),
        ("http://192.168.0.10/feed.xml", "private address (192.168.0.10)"),
        ("http://169.254.169.254/latest/meta-data/", "private address (169.254.169.254)"),
        ("http://[::1]/feed.xml", "private address (::1)"),
        ("http://[::ffff:127.0.0.1]/feed.xml", "private address"),
        ("http://2130706433/feed.xml", "private address (127.0.0.1)"),
        ("http://0177.0.0.1/feed.xml", "private address (127.0.0.1)"),
        ("http://0x7f000001/feed.xml", "private address (127.0.0.1)"),
        ("http://127.1/feed.xml", "private address (127.0.0.1)"),
        ("file:///etc/passwd", "only http and https"),
        ("https://user:pw@feeds.example.com/a.xml", "user name or password"),
        ("https://feeds.example.com:99999/a.xml", "port"),
    ],
)
def test_which_urls_may_be_added(url: str, refused: str | None) -> None:
    reason = refusal(url)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason


def test_the_test_allowance_is_one_origin_and_only_while_held() -> None:
    with pretend_public("127.0.0.1", 8123):
        assert refusal("http://127.0.0.1:8123/feed.xml") is None
        assert refusal("http://127.0.0.1:8124/feed.xml") is not None
        assert refusal("http://2130706433:8123/feed.xml") is not None
    assert refusal("http://127.0.0.1:8123/feed.xml") is not None


def test_show_names_come_from_the_title_and_never_collide() -> None:
    url = "https://feeds.example.com/x.xml"
    assert show_name("JAX Daily", url, ["PyTorch"]) == "JAX Daily"
    assert show_name('  "JAX"  <b>Daily</b>`', url, []) == "JAX b Daily /b"
    assert show_name("jax daily", url, ["JAX Daily"]) == "jax daily (feeds.example.com)"
    taken = ["JAX", "JAX (feeds.example.com)", "JAX 2"]
    assert show_name("JAX", url, taken) == "JAX 3"
    assert show_name(None, url, []) == "feeds.example.com"
    assert len(show_name("x" * 500, url, [])) == 80


# who may -------------------------------------------------------------------------------


@pytest.mark.parametrize("user", [MEMBER, GUEST_ADMIN, "U0NOBODY01"])
def test_add_show_is_refused_for_a_non_admin(
    app: RunningApp, public_feed_server: FeedServer, user: str
) -> None:
    url = public_feed_server.route("/jax.xml", jax_feed())
    reply = follow_up(app, f"add-show {url}", user=user)
    assert "Only workspace admins and owners" in reply["text"]
    assert public_feed_server.requests_to("/jax.xml") == []  # not even fetched
    assert [c.params["user"] for c in app.fake.calls_to("users.info")] == [user]
    assert app.store.added_shows() == []


def test_the_ack_does_not_echo_a_password_in_the_url(app: RunningApp) -> None:
    """Wording: "Reading <url> …" came before the refusal, with the password in it."""
    ack, responses = slash(app, "add-show https://reader:hunter2pw@feeds.example.com/a.xml")
    assert ack["text"] == "Reading https://feeds.example.com/a.xml … the preview follows."
    assert "hunter2pw" not in str(ack) and "reader" not in str(ack)
    (refused,) = responses
    assert refused["text"].startswith(
        "That feed cannot be added: it carries a user name or password."
    )
    assert "hunter2pw" not in str(refused)


def test_a_non_admin_clicking_add_adds_nothing(
    app: RunningApp, public_feed_server: FeedServer
) -> None:
    url = public_feed_server.route("/jax.xml", jax_feed())
    preview = follow_up(app, f"add-show {url}")
    reply = click(app, ADD_ACTION, button_value(preview, ADD_ACTION), user=MEMBER)
    assert "Only workspace admins and owners" in reply["text"]
    assert app.store.added_shows() == []


@pytest.mark.parametrize("user", [ADMIN, OWNER, LISTED])
def test_admins_owners_and_listed_users_get_the_preview(
    app: RunningApp, public_feed_server: FeedServer, user: str
) -> None:
    url = public_feed_server.route("/jax.xml", jax_feed())
    ack, responses = slash(app, f"add-show {url} google/jax", user=user)
    assert "Reading" in ack["text"] and "preview follows" in ack["text"]
    assert len(responses) == 1
    assert "Add *JAX Daily*?" in responses[0]["text"]
    if user == LISTED:  # the settings say so: Slack is not asked
        assert app.fake.calls_to("users.info") == []


# private addresses, every spelling ----------------------------------------------------------


PRIVATE_FORMS = [
    "http://127.0.0.1:{port}/jax.xml",
    "http://localhost:{port}/jax.xml",
    "http://10.0.0.7/jax.xml",
    "http://192.168.1.20/jax.xml",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:{port}/jax.xml",
    "http://[::ffff:127.0.0.1]:{port}/jax.xml",
    "http://2130706433:{port}/jax.xml",
    "http://0177.0.0.1:{port}/jax.xml",
    "http://0x7f000001:{port}/jax.xml",
]


@pytest.mark.parametrize("form", PRIVATE_FORMS)
def test_private_addresses_are_refused_before_connecting(
    app: RunningApp, feed_server: FeedServer, form: str
) -> None:
    feed_server.route("/jax.xml", jax_feed())
    reply = follow_up(app, "add-show " + form.format(port=feed_server.port))
    assert "That feed cannot be added:" in reply["text"]
    assert "private address" in reply["text"] or "localhost" in reply["text"]
    usage_follows(reply, "add-show")
    assert feed_server.requests_to("/jax.xml") == []
    assert app.store.added_shows() == []


@pytest.fixture
def resolves_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A public-looking name whose DNS answer is 127.0.0.1 (what a rebinding name gives)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == PUBLIC_LOOKING:
            return real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.usefixtures("resolves_to_loopback")
def test_a_public_looking_name_that_resolves_to_loopback_is_refused(
    app: RunningApp, feed_server: FeedServer
) -> None:
    feed_server.route("/jax.xml", jax_feed())
    reply = follow_up(app, f"add-show http://{PUBLIC_LOOKING}:{feed_server.port}/jax.xml")
    assert "Could not read that feed:" in reply["text"]
    assert "refusing private address 127.0.0.1" in reply["text"]
    usage_follows(reply, "add-show")
    assert feed_server.requests_to("/jax.xml") == []


@pytest.mark.parametrize(
    "target",
    [
        "http://2130706433:{port}/jax.xml",
        "http://localhost:{port}/jax.xml",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.7/jax.xml",
    ],
)
def test_a_public_url_that_redirects_to_a_private_one_is_refused(
    app: RunningApp, public_feed_server: FeedServer, target: str
) -> None:
    public_feed_server.route("/jax.xml", jax_feed())
    moved = public_feed_server.redirect("/moved.xml", target.format(port=public_feed_server.port))
    reply = follow_up(app, f"add-show {moved}")
    assert "Could not read that feed:" in reply["text"]
    assert "refusing private address" in reply["text"]
    assert public_feed_server.requests_to("/moved.xml") != []  # the public hop was asked
    assert public_feed_server.requests_to("/jax.xml") == []  # the private one never


# bad input: one line and the usage ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [("add-show", "Which feed?"), ("add-show feeds", "is not an http(s) link"),
     ("remove-show", "Which show?")],
)  # fmt: skip
def test_bad_arguments_are_answered_in_the_ack(app: RunningApp, text: str, reason: str) -> None:
    ack, responses = slash(app, text)
    assert reason in ack["text"]
    assert "/episodes " + text.split()[0] in str(ack["blocks"])
    assert responses == []
    assert app.fake.calls_to("users.info") == []


def test_not_a_feed(app: RunningApp, public_feed_server: FeedServer) -> None:
    url = public_feed_server.route("/junk", b"\x00\x01\x02 no feed here", content_type="image/png")
    reply = follow_up(app, f"add-show {url}")
    assert reply["text"].startswith(("That is not a feed", "That feed has no episodes"))
    usage_follows(reply, "add-show")


def test_too_big(app_for: Any, public_feed_server: FeedServer) -> None:
    app = app_for(added_feed_max_bytes=2048)
    url = public_feed_server.huge("/big.xml", 50_000, declare_length=False)
    reply = follow_up(app, f"add-show {url}")
    assert "Could not read that feed:" in reply["text"] and "larger than 2 KB" in reply["text"]
    usage_follows(reply, "add-show")


def test_limit_reached(app_for: Any, public_feed_server: FeedServer) -> None:
    app = app_for(max_added_shows=1)
    app.store.add_show(TEAM, "Other", "https://other.example.com/feed.xml", "a/b",
                       added_by=ADMIN, now=NOW, limit=1)  # fmt: skip
    url = public_feed_server.route("/jax.xml", jax_feed())
    reply = follow_up(app, f"add-show {url}")
    assert "as many shows as it may (1)" in reply["text"]
    usage_follows(reply, "add-show")
    assert public_feed_server.requests_to("/jax.xml") == []


@pytest.mark.parametrize(
    "duplicate",
    ["https://episodes.example.test/feed.xml", "HTTPS://Episodes.Example.Test/feed.xml/"],
)
def test_duplicate_feed(app: RunningApp, duplicate: str) -> None:
    reply = follow_up(app, f"add-show {duplicate}")  # the config file's PyTorch feed
    assert "That feed is already a show: *PyTorch*." in reply["text"]
    usage_follows(reply, "add-show")


# accepted: preview, Add, polled, removed ----------------------------------------------------


def test_admin_adds_a_show_it_is_polled_and_removed(
    app: RunningApp, public_feed_server: FeedServer
) -> None:
    url = public_feed_server.route("/jax.xml", jax_feed())
    preview = follow_up(app, f"add-show <{url}> google/jax")
    assert "Add *JAX Daily*?" in preview["text"]
    blocks = str(preview["blocks"])
    assert "JAX: Episode 3" in blocks and "(2026-10-03)" in blocks  # the newest episode
    assert "3 episodes in the feed · 6 PRs found · PR numbers point to google/jax" in blocks
    assert app.store.added_shows() == []  # nothing until Add
    assert len(public_feed_server.requests_to("/jax.xml")) == 1  # fetched once

    added = click(app, ADD_ACTION, button_value(preview, ADD_ACTION))
    assert added["replace_original"] is True
    assert "Added *JAX Daily*" in added["text"] and 'subscribe "JAX Daily"' in added["text"]
    [row] = app.store.added_shows(TEAM)
    assert (row.name, row.feed, row.repo, row.added_by) == ("JAX Daily", url, "google/jax", ADMIN)

    # The commands know it at once, beside the config file's show.
    subscribed = app.sender.slash('subscribe "JAX Daily"').json()
    assert "JAX Daily" in subscribed["text"]
    assert [s.show for s in app.store.subscriptions(channel_id=CHANNEL)] == ["JAX Daily"]

    # A poll cycle polls it with the config file's shows and posts its digest here.
    async def cycle() -> None:
        async with make_http_client() as http:
            outbox = slack_outbox(app.fake)
            try:
                await run_once(app.settings, app.store, outbox, http, NOW)
            finally:
                await outbox.close()

    asyncio.run(cycle())
    posted = [m["text"] for m in app.fake.messages(CHANNEL) if m.get("thread_ts") is None]
    assert any("JAX: Episode 3" in text for text in posted), posted
    assert app.store.fetch_state("JAX Daily").last_success_at is not None

    # Adding the same feed again: refused before fetching.
    again = follow_up(app, f"add-show {url}")
    assert "That feed is already a show: *JAX Daily*." in again["text"]

    removed = follow_up(app, "remove-show jax daily")
    assert "Removed *JAX Daily* and its episodes." in removed["text"]
    assert f"Unsubscribed <#{CHANNEL}> from it." in removed["text"]
    assert app.store.added_shows() == []
    assert app.store.subscriptions(show="JAX Daily") == []
    assert app.store.recent(10, shows=["JAX Daily"]) == []


def test_cancel_adds_nothing(app: RunningApp, public_feed_server: FeedServer) -> None:
    url = public_feed_server.route("/jax.xml", jax_feed())
    preview = follow_up(app, f"add-show {url}")
    reply = click(app, CANCEL_ACTION, button_value(preview, CANCEL_ACTION))
    assert reply["replace_original"] is True and "no show was added" in reply["text"]
    assert app.store.added_shows() == []


def test_add_clicked_twice_names_the_show_the_feed_already_is(
    app: RunningApp, public_feed_server: FeedServer
) -> None:
    url = public_feed_server.route("/jax.xml", jax_feed())
    preview = follow_up(app, f"add-show {url} google/jax")
    value = button_value(preview, ADD_ACTION)
    assert "Added *JAX Daily*" in click(app, ADD_ACTION, value)["text"]
    # The same preview's button again (a double click, a second admin): the show, by name.
    again = click(app, ADD_ACTION, value)
    assert again["text"] == "That feed is already a show: *JAX Daily*."
    assert [s.name for s in app.store.added_shows(TEAM)] == ["JAX Daily"]


def test_a_title_taken_by_another_show_gets_another_name(
    app: RunningApp, public_feed_server: FeedServer
) -> None:
    url = public_feed_server.route("/feed.xml", jax_feed(title="pytorch"))
    preview = follow_up(app, f"add-show {url}")
    assert "Add *pytorch (127.0.0.1)*?" in preview["text"]


# remove-show ---------------------------------------------------------------------------------


def test_remove_show_leaves_config_and_other_workspaces_shows(app: RunningApp) -> None:
    app.store.add_show("T0ELSEWHERE", "Elsewhere", "https://else.example.com/f.xml", "a/b",
                       added_by="U0X", now=NOW, limit=5)  # fmt: skip
    config = follow_up(app, "remove-show pytorch")
    assert "*PyTorch* is in the config file: remove it there" in config["text"]
    other = follow_up(app, "remove-show Elsewhere")
    assert "*Elsewhere* was added by another workspace" in other["text"]
    unknown = follow_up(app, "remove-show Nothing Here")
    assert "There is no show called `Nothing Here`" in unknown["text"]
    usage_follows(unknown, "remove-show")
    refused = follow_up(app, "remove-show Elsewhere", user=MEMBER)
    assert "Only workspace admins and owners" in refused["text"]
    assert [s.name for s in app.store.added_shows()] == ["Elsewhere"]


def test_help_lists_add_and_remove_show(app: RunningApp) -> None:
    text = str(app.sender.slash("help").json()["blocks"])
    assert "/episodes add-show &lt;feed or page URL&gt; [owner/repo]" in text
    assert "/episodes remove-show &lt;name&gt;" in text


# the clock ------------------------------------------------------------------------------------


async def _until(check: Any, what: str, timeout: float = 20.0) -> None:
    """Wait for background work: until ``check()`` holds (the clock's jobs run meanwhile)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_the_clock_polls_a_show_added_while_it_runs_and_stops_when_removed(
    store: Store, slack_fake: SlackFake, public_feed_server: FeedServer, http: Any
) -> None:
    pytorch = public_feed_server.route("/pytorch.xml", rss(rss_item(3)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=pytorch)],
        schedule=ScheduleConfig(poll_minutes=15, jitter_seconds=0),
        team_id=TEAM,
    )
    store.ensure_show("PyTorch", pytorch, "pytorch/pytorch")
    outbox = slack_outbox(slack_fake)
    deliverer = Deliverer(store, outbox, per_channel_interval=0.0)
    polled: list[str] = []
    clock = Clock(settings, store, outbox, http, deliverer=deliverer, sweep_seconds=0.05,
                  on_report=lambda report: polled.extend(p.show for p in report.polls))  # fmt: skip
    clock.start()
    try:
        await _until(lambda: "PyTorch" in polled, "the config show's first poll")
        url = public_feed_server.route("/jax.xml", jax_feed())
        store.add_show(TEAM, "JAX Daily", url, "google/jax", added_by=ADMIN, now=NOW, limit=5)
        store.subscribe(TEAM, "C1", "JAX Daily")
        await _until(lambda: "JAX Daily" in polled, "the added show's first poll")
        assert clock.scheduler.get_job("poll:JAX Daily") is not None
        await _until(lambda: slack_fake.messages("C1"), "its digest")
        assert "JAX: Episode 3" in slack_fake.messages("C1")[0]["text"]
        assert public_feed_server.requests_to("/jax.xml") != []

        store.remove_added_show(TEAM, "JAX Daily")
        await _until(lambda: clock.scheduler.get_job("poll:JAX Daily") is None, "the job to go")
        assert clock.scheduler.get_job("poll:PyTorch") is not None
    finally:
        await clock.stop(grace=5)
        await deliverer.aclose()
        await outbox.close()


def test_an_added_shows_prs_of_another_repository_are_labelled_with_it(app: RunningApp) -> None:
    # The show's repository is the one add-show was given, as for the config file's shows:
    # pytorch/pytorch's 5012 in a google/jax show is not "#5012".
    app.store.add_show(TEAM, "JAX Daily", "https://feeds.example.com/jax.xml", "google/jax",
                       added_by=ADMIN, now=NOW, limit=5)  # fmt: skip
    app.store.upsert_episodes([_interop()], NOW)
    latest = str(app.sender.slash('latest "JAX Daily"').json()["blocks"])
    assert "pull/5012|pytorch/pytorch#5012>" in latest and "pull/7|#7>" in latest
    named = app.sender.slash('pr "JAX Daily" 5012').json()
    assert named["blocks"][0]["text"]["text"] == (
        "*<https://github.com/pytorch/pytorch/pull/5012|Episodes naming pytorch/pytorch#5012>*"
    )


def test_a_poll_given_the_config_files_renderer_labels_an_added_shows_prs(
    app: RunningApp, public_feed_server: FeedServer
) -> None:
    # `run --once` renders with a renderer made from the config file: the added show's
    # repository must reach it, or its digest calls pytorch/pytorch's 5012 "#5012".
    url = public_feed_server.route(
        "/jax.xml",
        jax_feed().replace(
            "https://github.com/google/jax/pull/6003",
            "https://github.com/pytorch/pytorch/pull/5012",
        ),
    )
    app.store.add_show(TEAM, "JAX Daily", url, "google/jax", added_by=ADMIN, now=NOW, limit=5)
    app.store.subscribe(TEAM, CHANNEL, "JAX Daily")

    async def cycle() -> None:
        async with make_http_client() as http:
            outbox = slack_outbox(app.fake)
            try:
                await run_once(
                    app.settings, app.store, outbox, http, NOW, renderer=Renderer.of(app.settings)
                )
            finally:
                await outbox.close()

    asyncio.run(cycle())
    (digest,) = [m for m in app.fake.messages(CHANNEL) if m.get("thread_ts") is None]
    blocks = str(digest["blocks"])
    assert "pull/5012|pytorch/pytorch#5012>" in blocks and "pull/5003|#5003>" in blocks


def _interop(show: str = "JAX Daily") -> Episode:
    """An episode of an added google/jax show naming its own PR 7 and pytorch/pytorch's 5012."""
    prs = (
        PullRequestRef(7, "https://github.com/google/jax/pull/7", "PR 7 is its own."),
        PullRequestRef(5012, "https://github.com/pytorch/pytorch/pull/5012", "PyTorch's 5012."),
    )
    return Episode(
        guid="jax-interop",
        show=show,
        title="JAX: Interop",
        headline="Interop",
        summary="Both sides.",
        published_at=NOW,
        url="https://episodes.example.test/jax/interop",
        pull_requests=prs,
    )


def test_recap_and_render_on_the_command_line_know_an_added_shows_repository(
    store: Store, db_url: str, feed_server: FeedServer
) -> None:
    # `digestbot recap` refused an added show ("unknown show"), left it out of the recap of
    # every show, and `digestbot render` of its feed had no repository for it.
    url = feed_server.route(
        "/jax.xml",
        jax_feed().replace(
            "https://github.com/google/jax/pull/6003",
            "https://github.com/pytorch/pytorch/pull/5012",
        ),
    )
    store.add_show(TEAM, "JAX Daily", url, "google/jax", added_by=ADMIN, now=NOW, limit=5)
    store.upsert_episodes([_interop()], NOW)
    env = {"DATABASE_URL": db_url, "DIGESTBOT_CONFIG": ""}
    recap = run_cli("recap", "--week", "2026-W41", "--show", "jax daily", env=env)
    assert recap.returncode == 0, recap.stderr
    assert "pull/5012|pytorch/pytorch#5012>" in recap.stdout and "pull/7|#7>" in recap.stdout
    every = run_cli("recap", "--week", "2026-W41", "--format", "text", env=env)
    assert every.returncode == 0, every.stderr
    assert "Interop" in every.stdout and "pytorch/pytorch#5012" in every.stdout
    rendered = run_cli("render", url, env=env)
    assert rendered.returncode == 0, rendered.stderr
    assert "pull/5012|pytorch/pytorch#5012>" in rendered.stdout
    assert "https://github.com/google/jax/pull/5003|#5003>" in rendered.stdout


async def test_github_enrichment_asks_for_an_added_shows_prs(
    store: Store, github_fake: GitHubFake
) -> None:
    # The enrichment looked the show's repository up in the config file only: an added
    # show's PRs were never asked for, nor their stored details attached.
    settings = make_settings("", "", github=True, github_api_url=github_fake.api_url)
    store.add_show(TEAM, "JAX Daily", "https://feeds.example.com/jax.xml", "google/jax",
                   added_by=ADMIN, now=NOW, limit=5)  # fmt: skip
    store.upsert_episodes([_interop()], NOW)
    github_fake.add_pr("google/jax", 7, title="Own sharding fix")
    github_fake.add_pr("pytorch/pytorch", 5012, title="The interop side", state="merged")
    async with make_github_http() as http:
        client = github_client(settings, http)
        report = await enrich_shows(settings, store, client, ["JAX Daily"], NOW)
    assert report.learnt == 2, report
    (episode,) = attach_details(settings, store, store.recent(1, ["JAX Daily"]))
    titles = {info.number: info.title for info in episode.pr_info}
    assert titles == {7: "Own sharding fix", 5012: "The interop side"}


def test_the_scheduled_recap_labels_an_added_shows_prs(store: Store) -> None:
    # The clock's recap job holds a renderer made from the config file: an added show's
    # repository must reach it, or its recap calls pytorch/pytorch's 5012 "#5012".
    settings = make_settings("", "", shows=[])
    store.add_show(TEAM, "JAX Daily", "https://feeds.example.com/jax.xml", "google/jax",
                   added_by=ADMIN, now=NOW, limit=5)  # fmt: skip
    store.upsert_episodes([_interop()], NOW)
    store.subscribe(TEAM, CHANNEL, "JAX Daily")
    (item,) = recap_deliveries(settings, store, Renderer.of(settings), year=2026, week=41)
    posted = str(item.message["blocks"])
    assert "pull/5012|pytorch/pytorch#5012>" in posted and "pull/7|#7>" in posted


async def test_the_daily_digest_labels_an_added_shows_prs(
    store: Store, deliverer: Deliverer
) -> None:
    # The clock's daily job holds a renderer made from the config file too.
    settings = make_settings("", "", shows=[])
    store.add_show(TEAM, "JAX Daily", "https://feeds.example.com/jax.xml", "google/jax",
                   added_by=ADMIN, now=NOW, limit=5)  # fmt: skip
    store.upsert_episodes([_interop()], NOW)
    store.subscribe(TEAM, CHANNEL, "JAX Daily", daily_at="17:00", changed_at=NOW)
    with store.engine.begin() as conn:  # subscribed the week before (the store stamps now)
        conn.execute(sa.update(subscriptions).values(created_at=datetime(2026, 10, 1, tzinfo=UTC)))
    at = datetime(2026, 10, 8, 17, 1, tzinfo=UTC)
    (item,) = daily_deliveries(settings, store, deliverer, Renderer.of(settings), at)
    posted = str(item.message["blocks"])
    assert "Interop" in posted
    assert "pull/5012|pytorch/pytorch#5012>" in posted and "pull/7|#7>" in posted
