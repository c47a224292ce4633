"""The app over real HTTP (uvicorn on 127.0.0.1): signatures, health, every `/episodes`
subcommand as Slack sends it, on SQLite and PostgreSQL, store seeded from a loopback feed."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from slack_bolt.async_app import AsyncAck
from slack_bolt.response import BoltResponse

from bot.listeners.app import build_app
from bot.listeners.commands import Answer
from bot.server.asgi import build_asgi
from config.settings import Settings
from digests.models import PullRequestRef
from digests.render.renderer import Renderer
from digests.store import Store
from digests.types import FetchState
from tests.fixtures.app import (
    CHANNEL,
    PAGE_URL,
    SIGNING_SECRET,
    TEAM,
    AppServer,
    RunningApp,
    SlackSender,
    assert_valid_message,
    in_process,
    sign,
)
from tests.fixtures.store import pause_channel
from tests.slackfake import SlackFake


def reply(response: httpx.Response) -> dict[str, Any]:
    """The ack body of a slash command: ephemeral, valid Block Kit, nothing raw."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["response_type"] == "ephemeral"
    assert_valid_message(body)
    return body


def mrkdwn(body: dict[str, Any]) -> str:
    return json.dumps(body["blocks"], ensure_ascii=False)


def share_value(body: dict[str, Any]) -> str | None:
    last = body["blocks"][-1]
    if last["type"] != "actions" or last["elements"][0]["action_id"] != "episodes_share":
        return None
    return str(json.loads(last["elements"][0]["value"])["c"])


def usage_error(body: dict[str, Any]) -> tuple[str, str]:
    """(reason, usage) of an argument error: one line each, no share button."""
    assert share_value(body) is None
    reason = body["blocks"][0]["text"]["text"]
    usage = body["blocks"][1]["elements"][0]["text"]
    assert reason.startswith(":warning: ") and "\n" not in reason
    assert usage.startswith("Usage: ")
    return reason, usage


# -- signatures ---------------------------------------------------------------------------


def test_signed_request_is_answered(served_app: RunningApp) -> None:
    assert reply(served_app.sender.slash("recent 1"))["text"] == "Latest episode"


@pytest.mark.parametrize(
    "message",
    [
        {
            "text": "Latest episode",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "é <x> \u2028"}}],
        },
        {"text": "No blocks, only text", "blocks": []},
        {"text": "", "blocks": [{"type": "divider"}, {"type": "divider"}]},
    ],
)
def test_a_returned_answer_is_what_ack_would_send(message: Any) -> None:
    """The listener returns an answer's body encoded once (Answer.ephemeral_body) instead of
    calling ack with it: the same bytes and headers as Bolt's ack makes of the reply."""
    acked = asyncio.run(
        AsyncAck()(response_type="ephemeral", text=message["text"], blocks=message["blocks"])
    )
    returned = BoltResponse(status=200, body=Answer(message).ephemeral_body)
    assert (returned.status, returned.body, returned.headers) == (
        acked.status,
        acked.body,
        acked.headers,
    )


# Tests that only read run on one shared app per backend (``readonly_app``): a table row
# costs a request, not a seeded store.


@pytest.mark.parametrize(
    ("how", "kwargs"),
    [
        ("unsigned", {"signed": False}),
        ("wrong secret", {"secret": "not-the-secret"}),
        # Offsets from when the request is sent: a timestamp fixed at collection drifts
        # into Slack's five-minute window on a slow run, and the subscribe goes through.
        ("stale timestamp", {"timestamp": -6 * 60}),
        ("future timestamp", {"timestamp": 6 * 60}),
    ],
)
def test_bad_signatures_get_401_and_touch_nothing(
    readonly_app: RunningApp, how: str, kwargs: dict[str, Any]
) -> None:
    slack_app = readonly_app
    if "timestamp" in kwargs:
        kwargs = {"timestamp": int(time.time()) + kwargs["timestamp"]}
    body = slack_app.sender.slash_body("subscribe fsdp")
    response = slack_app.sender.post(body, "application/x-www-form-urlencoded", **kwargs)
    assert response.status_code == 401, how
    assert slack_app.store.subscriptions(team_id=TEAM) == []
    assert slack_app.fake.calls == []


def test_tampered_body_gets_401(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    ts = int(time.time())
    signed = slack_app.sender.slash_body("list")
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": sign(SIGNING_SECRET, ts, signed),
    }
    tampered = signed.replace(b"text=list", b"text=subscribe")
    response = slack_app.sender.http.post("/slack/events", content=tampered, headers=headers)
    assert response.status_code == 401
    assert slack_app.store.subscriptions(team_id=TEAM) == []


def test_oversized_body_is_refused_unread(served_app: RunningApp) -> None:
    response = served_app.sender.post(b"x" * (2 * 1024 * 1024), "application/x-www-form-urlencoded")
    assert response.status_code == 413


# -- health -------------------------------------------------------------------------------


def test_healthz_ok_when_the_store_answers(served_app: RunningApp) -> None:
    response = httpx.get(f"{served_app.url}/healthz", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_healthz_503_when_the_store_is_unreachable(
    app_settings: Settings, slack_fake: SlackFake
) -> None:
    settings = app_settings
    # Nothing listens on port 1: the engine is built, every connection is refused.
    dead = Store("postgresql+psycopg://postgres@127.0.0.1:1/none?connect_timeout=2")
    app = build_app(settings, dead, Renderer())
    server = AppServer(settings, build_asgi(app, dead)).start()
    try:
        response = httpx.get(f"{server.url}/healthz", timeout=10)
        assert response.status_code == 503
        assert response.json() == {"ok": False}
        # A command still gets a one-line answer, not an error page.
        sender = SlackSender(server.url, slack_fake)
        body = reply(sender.slash("recent"))
        assert "unreachable" in body["text"]
        assert "Traceback" not in mrkdwn(body)
        sender.close()
    finally:
        server.stop()


# -- subcommands --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "count"), [("", 5), ("recent", 5), ("recent 3", 3), ("20", 20)])
def test_recent_lists_the_newest_one_line_each(
    readonly_app: RunningApp, text: str, count: int
) -> None:
    slack_app = readonly_app
    urls = [e.url for e in slack_app.episodes]
    body = reply(slack_app.sender.slash(text))
    listed = mrkdwn(body)
    shown = [u for u in urls if f"{u}|" in listed]
    assert shown == urls[:count], text
    # Newest first: each URL appears before the next older one.
    positions = [listed.index(f"{u}|") for u in shown]
    assert positions == sorted(positions), text
    assert share_value(body) == f"recent {count}", text


def test_recent_line_has_date_duration_and_pr_count(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("recent 1"))
    line = body["blocks"][1]["text"]["text"]
    assert line == (
        f"Mon 5 Oct 2026 · <{PAGE_URL}|All-Gather Showdown and Stack-Aware Merges> · 2:31 · 4 PRs"
    )


def test_hostile_titles_come_back_escaped(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("recent 3"))
    listed = mrkdwn(body)
    assert "&lt;!channel&gt; Quiet Weekend &amp; &lt;@U666&gt;" in listed
    assert "<!channel>" not in listed


BAD_ARGUMENTS: list[tuple[str, str, str | None]] = [
    ("recent 100000", "between 1 and 20", "recent"),
    ("recent abc", "is not a number", "recent"),
    ("pr abc", "is not a pull-request number", "pr"),
    ("nearby 2026-02-30", "does not exist", "nearby"),
    ("week 2026-13-40", "does not exist", "week"),
    ("search", "Search for what?", "search"),
    ("latest now", "takes no arguments", "latest"),
    ("search " + "a" * 3000, "takes at most 500", None),
    ("pr <!channel>", "&lt;!channel&gt;", "pr"),
]


@pytest.mark.parametrize(
    ("text", "reason", "usage_of"), BAD_ARGUMENTS, ids=[row[0][:20] for row in BAD_ARGUMENTS]
)
def test_bad_arguments_get_one_line_and_usage(
    readonly_app: RunningApp, text: str, reason: str, usage_of: str | None
) -> None:
    got_reason, usage = usage_error(reply(readonly_app.sender.slash(text)))
    assert reason in got_reason, text[:40]
    expected = f"/episodes {usage_of}" if usage_of else "/episodes [recent"
    assert expected in usage, text[:40]


def test_latest_is_the_full_digest_with_buttons(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("latest"))
    assert body["blocks"][0] == {
        "type": "header",
        "text": {
            "type": "plain_text",
            "text": "All-Gather Showdown and Stack-Aware Merges",
            "emoji": True,
        },
    }
    action_ids = [
        e["action_id"] for b in body["blocks"] if b["type"] == "actions" for e in b["elements"]
    ]
    assert action_ids == ["digest_prs", "digest_nearby", "episodes_share"]
    assert "https://github.com/pytorch/pytorch/pull/199687|#199687" in mrkdwn(body)


def test_nearby_by_pr_shows_neighbours_and_the_page_list(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("nearby #199720"))
    texts = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert texts[0] == "*Around “All-Gather Showdown and Stack-Aware Merges”*"
    assert texts[1].startswith("*Before*\nSat 3 Oct 2026")
    assert texts[2].startswith("*This episode*\nMon 5 Oct 2026")
    assert not any(t.startswith("*After*") for t in texts)  # the newest has no next
    page_list = texts[-1].split("\n")
    assert page_list[1:] == [
        "• <https://episodes.example.test/pytorch/2026-10-01|Compiler Parity Push>",
        "• <https://episodes.example.test/pytorch/2026-10-02|"
        "Distributed Hang Fixes and Compiler Hardening>",
        "• A Title Nobody Stored &lt;!everyone&gt;",
    ]


@pytest.mark.parametrize(
    ("text", "center"),
    [
        ("nearby 2026-10-04", "Sat 3 Oct 2026"),  # 23 h before noon beats 25 h after
        ("nearby 2026-10-05", "Mon 5 Oct 2026"),
        ("nearby Compiler Parity Push", "Thu 1 Oct 2026"),  # exact title
        ("nearby parity compiler", "Thu 1 Oct 2026"),  # every word of the title
    ],
)
def test_nearby_finds_the_closest_episode(readonly_app: RunningApp, text: str, center: str) -> None:
    body = reply(readonly_app.sender.slash(text))
    this = next(b for b in body["blocks"] if "*This episode*" in b.get("text", {}).get("text", ""))
    assert center in this["text"]["text"], text
    assert share_value(body) == text


def test_nearby_nothing(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("nearby #4242"))
    assert body["blocks"][0]["text"]["text"] == "No episode near PR #4242."


def test_pr_lists_every_episode_newest_first_with_the_sentence(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("pr #199720"))
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert sections[0] == (
        "*<https://github.com/pytorch/pytorch/pull/199720|Episodes naming PR #199720>*"
    )
    assert sections[1].startswith("Mon 5 Oct 2026")
    assert "\n>Three drafts, PRs 199720, 199721 and 199726" in sections[1]
    assert sections[2].startswith("Fri 2 Oct 2026")
    assert sections[2].endswith("\n>An early draft, PR 199720, sketched the all-gather layout.")
    assert len(sections) == 3


def test_pr_unknown(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("pr 1"))
    assert body["blocks"][0]["text"]["text"] == "No episode mentions PR #1 yet."


SEARCHES: list[tuple[str, list[str]]] = [
    ("all-gather", ["2026-10-05", "2026-10-02"]),
    ("watchdog", ["2026-10-02"]),  # transcript only
    ("sparse layouts", ["2026-10-01"]),
    ("Quiet Weekend", ["2026-10-03"]),
    ("&lt;!channel&gt; Quiet", ["2026-10-03"]),  # as Slack sends `<!channel> Quiet`
    ("zebra unicorn", []),
    ('"NEAR( * OR', []),  # full-text syntax is data, not a query
    ("'; DROP TABLE episodes; --", []),
]


@pytest.mark.parametrize(("words", "expected"), SEARCHES)
def test_search(readonly_app: RunningApp, words: str, expected: list[str]) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash(f"search {words}"))
    listed = mrkdwn(body)
    found = [
        e.url.rsplit("/", 1)[-1] for e in slack_app.episodes if e.url and f"{e.url}|" in listed
    ]
    assert sorted(found) == sorted(expected), words
    if not expected:
        assert body["blocks"][0]["text"]["text"].startswith("Nothing matches"), words
    assert slack_app.store.ping()


def test_search_ranks_and_caps_at_ten(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("search flaky"))
    assert mrkdwn(body).count("|Filler Day") == 10


WEEKS: list[tuple[str, list[str], str]] = [
    ("week 2026-10-01", ["2026-10-01", "2026-10-02", "2026-10-03"], "week 2026-W40"),
    ("week 2026-10-04", ["2026-10-01", "2026-10-02", "2026-10-03"], "week 2026-W40"),
    ("week", ["2026-10-05"], "week 2026-W41"),  # now = Wed 2026-10-07
    ("week 2026-W40", ["2026-10-01", "2026-10-02", "2026-10-03"], "week 2026-W40"),
    ("week w40", ["2026-10-01", "2026-10-02", "2026-10-03"], "week 2026-W40"),
    ("week last", ["2026-10-01", "2026-10-02", "2026-10-03"], "week 2026-W40"),
    ("week 2026-08-03", [], None),  # a quiet week: nothing to share
]


@pytest.mark.parametrize(("text", "days", "pinned"), WEEKS)
def test_week(readonly_app: RunningApp, text: str, days: list[str], pinned: str | None) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash(text))
    listed = mrkdwn(body)
    found = [
        e.url.rsplit("/", 1)[-1] for e in slack_app.episodes if e.url and f"{e.url}|" in listed
    ]
    assert sorted(found) == days, text
    # The share button re-runs that same week, even after the week has turned.
    assert share_value(body) == pinned, text


def test_subscribe_list_unsubscribe(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("subscribe fsdp MPS fsdp"))
    assert "that mention “fsdp”, “MPS”" in body["blocks"][0]["text"]["text"]
    assert share_value(body) is None  # state-changing replies are never re-run by a button
    subs = slack_app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL)
    assert [(s.show, s.keywords, s.source) for s in subs] == [("PyTorch", ("fsdp", "MPS"), "slash")]

    listed = reply(slack_app.sender.slash("list"))
    assert (
        listed["blocks"][1]["text"]["text"]
        == "• *PyTorch* — only episodes mentioning “fsdp”, “MPS”"
    )

    # Another channel's list is its own.
    other = reply(slack_app.sender.slash("list", channel="C0OTHER001"))
    assert "follows no show yet" in other["blocks"][0]["text"]["text"]

    # Subscribing again replaces the filter.
    reply(slack_app.sender.slash("subscribe PyTorch"))
    subs = slack_app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL)
    assert [(s.show, s.keywords) for s in subs] == [("PyTorch", ())]

    gone = reply(slack_app.sender.slash("unsubscribe pytorch"))
    assert gone["blocks"][0]["text"]["text"] == "This channel no longer gets *PyTorch* episodes."
    assert slack_app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL) == []
    again = reply(slack_app.sender.slash("unsubscribe"))
    assert "was not subscribed to any show" in again["blocks"][0]["text"]["text"]


def test_config_subscriptions_are_marked_and_unsubscribing_says_they_return(
    slack_app: RunningApp,
) -> None:
    slack_app.store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    listed = reply(slack_app.sender.slash("list"))
    assert listed["blocks"][1]["text"]["text"] == "• *PyTorch* — set in the config file"
    gone = reply(slack_app.sender.slash("unsubscribe"))
    assert gone["blocks"][0]["text"]["text"] == (
        "This channel no longer gets any episodes (1 subscription removed). It was set in the "
        "config file: it stays off after restarts, but remove the channel from the config "
        "file to drop it for good."
    )


def test_subscribe_keywords_are_escaped(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("subscribe <!here> <@U666>"))
    assert "“&lt;!here&gt;”, “&lt;@U666&gt;”" in body["blocks"][0]["text"]["text"]


def test_status_shows_fetch_state_and_paused_subscriptions(slack_app: RunningApp) -> None:
    store = slack_app.store
    store.save_fetch_state(
        "PyTorch",
        FetchState(
            last_polled_at=datetime(2026, 10, 7, 9, 0, tzinfo=UTC),
            last_success_at=datetime(2026, 10, 7, 8, 45, tzinfo=UTC),
            last_error="cannot fetch https://x.test/feed.xml: HTTP 503 <!channel>",
            failures=1,
            next_poll_at=datetime(2026, 10, 7, 9, 15, tzinfo=UTC),
        ),
    )
    store.subscribe(TEAM, CHANNEL, "PyTorch", keywords=["fsdp"])
    pause_channel(store, TEAM, CHANNEL, "is_archived", datetime(2026, 10, 7, 9, 1, tzinfo=UTC))
    body = reply(slack_app.sender.slash("status"))
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert sections[1] == (
        "*PyTorch*\nLast poll: 2026-10-07 09:00 UTC · last success: 2026-10-07 08:45 UTC\n"
        "Last error: cannot fetch https://x.test/feed.xml: HTTP 503 &lt;!channel&gt; · "
        "failures in a row: 1\nNext poll: 2026-10-07 09:15 UTC"
    )
    assert sections[2].startswith("*Paused subscriptions in this channel*\n• *PyTorch*")
    assert "paused since 2026-10-07 09:01 UTC: the channel is archived" in sections[2]


def test_status_of_a_never_polled_show(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    body = reply(slack_app.sender.slash("status"))
    assert "Last poll: never" in body["blocks"][1]["text"]["text"]
    assert "Next poll: not scheduled yet" in body["blocks"][1]["text"]["text"]


@pytest.mark.parametrize("text", ["help", "frobnicate", "HELP me"])
def test_help_and_unknown_words(readonly_app: RunningApp, text: str) -> None:
    body = reply(readonly_app.sender.slash(text))
    everything = mrkdwn(body)
    for sub in ("recent", "latest", "nearby", "pr", "search", "week", "subscribe", "status"):
        assert f"`/episodes {sub}" in everything, text
    assert ("I don't know `frobnicate`." in everything) is (text == "frobnicate")
    assert share_value(body) is None, text


def test_empty_archive_says_so(app_settings: Settings, slack_fake: SlackFake) -> None:
    # A second app over an empty store: the same command, an honest answer.
    empty = Store.open("sqlite://")
    try:
        with in_process(app_settings, empty, slack_fake, []) as app:
            for text in ("recent", "latest"):
                body = reply(app.sender.slash(text))
                assert body["blocks"][0]["text"]["text"].startswith("No episodes yet")
    finally:
        empty.close()


def test_auth_test_is_called_once_for_many_requests(slack_app: RunningApp) -> None:
    for _ in range(3):
        reply(slack_app.sender.slash("recent 1"))
    assert len(slack_app.fake.calls_to("auth.test")) == 1


def test_huge_answers_stay_within_block_kit_limits(slack_app: RunningApp) -> None:
    """60 episodes naming one PR, with 400-character hostile headlines and long sentences."""
    base = slack_app.episodes[0]
    long_words = " ".join(["<!channel> Remarkably-long-headline-words"] * 10)
    crowd = [
        base.model_copy(
            update={
                "guid": f"crowd-{n}",
                "headline": f"{n} {long_words}",
                "title": f"PyTorch: {n} {long_words}",
                "url": f"https://episodes.example.test/pytorch/crowd-{n}",
                "published_at": datetime(2026, 8, 1, 13, 0, tzinfo=UTC).replace(day=1 + n % 28),
                "nearby": tuple(f"{long_words} {k}" for k in range(30)),
                "pull_requests": (
                    dataclasses.replace(
                        base.pull_requests[0], number=777, context="PR 777 " + "<@U666> long " * 200
                    ),
                ),
            }
        )
        for n in range(60)
    ]
    slack_app.store.upsert_episodes(crowd, datetime(2026, 10, 6, tzinfo=UTC))
    body = reply(slack_app.sender.slash("pr 777"))
    assert len(body["blocks"]) <= 50
    assert "…and 40 more." in mrkdwn(body)
    assert share_value(body) == "pr 777"
    shared = {"nearby pr 777": "nearby #777", "week 2026-08-03": "week 2026-W32"}
    for text in ("nearby pr 777", "search remarkably", "week 2026-08-03", "recent 20"):
        body = reply(slack_app.sender.slash(text))
        assert share_value(body) == shared.get(text, text)


def test_pr_numbers_of_different_repositories_are_kept_apart(slack_app: RunningApp) -> None:
    rust = slack_app.episodes[0].model_copy(
        update={
            "guid": "rust-2026-10-06",
            "show": "Rust",
            "title": "Rust: Borrow Checker Diaries",
            "headline": "Borrow Checker Diaries",
            "url": "https://episodes.example.test/rust/2026-10-06",
            "published_at": datetime(2026, 10, 6, 13, 0, tzinfo=UTC),
            "pull_requests": (
                PullRequestRef(
                    number=199720,
                    url="https://github.com/rust-lang/rust/pull/199720",
                    context="Rust's own PR 199720 speeds up incremental builds.",
                ),
            ),
        }
    )
    slack_app.store.ensure_show("Rust", "https://episodes.example.test/rust.xml", "rust-lang/rust")
    slack_app.store.upsert_episodes([rust], datetime(2026, 10, 7, tzinfo=UTC))
    body = reply(slack_app.sender.slash("pr 199720"))
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert sections[0] == (
        "*<https://github.com/rust-lang/rust/pull/199720|"
        "Episodes naming PR #199720 (rust-lang/rust)>*"
    )
    assert "Borrow Checker Diaries" in sections[1]
    assert sections[2] == (
        "*<https://github.com/pytorch/pytorch/pull/199720|"
        "Episodes naming PR #199720 (pytorch/pytorch)>*"
    )
    assert len(sections) == 5
