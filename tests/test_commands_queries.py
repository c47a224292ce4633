"""`/episodes nearby`, `week` and `pr` as users write them: the pure parser as tables, then
the answers through the real app (signed requests over HTTP, SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime

import pytest

from bot.delivery.slack import make_web_client
from bot.listeners.app import build_app
from bot.listeners.commands.episodes import best_title_match, title_match, title_words
from bot.listeners.commands.model import (
    Command,
    CommandError,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
    Week,
)
from bot.listeners.commands.parse import parse_command, unparse
from bot.server.asgi import build_asgi
from config.settings import Settings
from digests.models import Episode, PullRequestRef
from digests.render.renderer import Renderer
from digests.store import Store
from tests.fixtures.app import PAGE_URL, AppServer, RunningApp, SlackSender
from tests.slackfake import SlackFake
from tests.test_app_http import mrkdwn, reply, share_value

ONE = ["PyTorch"]
TODAY = date(2026, 10, 7)  # Wednesday of 2026-W41, as APP_NOW in the app fixture


# -- the parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("nearby 2026-10-05", date(2026, 10, 5)),
        ("nearby 2026/10/05", date(2026, 10, 5)),
        ("nearby 5 Oct 2026", date(2026, 10, 5)),
        ("nearby 5 October 2026", date(2026, 10, 5)),
        ("nearby October 5 2026", date(2026, 10, 5)),
        ("nearby oct 5th, 2026", date(2026, 10, 5)),
        ("nearby Sept. 30, 2026", date(2026, 9, 30)),
        ("nearby 5th of October", date(2026, 10, 5)),
        ("nearby 5-Oct-2026", date(2026, 10, 5)),
        ("nearby Mon 5 Oct 2026", date(2026, 10, 5)),  # as reply lines show a day
        ("nearby Oct 5", date(2026, 10, 5)),  # no year: the latest not in the future
        ("nearby 5 Oct", date(2026, 10, 5)),
        ("nearby Oct 7", date(2026, 10, 7)),  # today is not the future
        ("nearby Oct 8", date(2025, 10, 8)),  # tomorrow is: last year's
        ("nearby Dec 25", date(2025, 12, 25)),
        ("nearby 29 Feb", date(2024, 2, 29)),  # the latest leap day
        ("nearby 25/10/2026", date(2026, 10, 25)),  # only one reading is a date
        ("nearby 10/25/2026", date(2026, 10, 25)),
        ("nearby 5/5/2026", date(2026, 5, 5)),  # both readings are the same day
        ("nearby 25/9", date(2026, 9, 25)),
        ("nearby today", date(2026, 10, 7)),
        ("nearby Yesterday", date(2026, 10, 6)),
    ],
)
def test_nearby_understands_common_date_forms(text: str, day: date) -> None:
    assert parse_command(text, ONE, today=TODAY) == NearbyDate(day)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nearby 5", NearbyTitle("5")),  # a number alone is words of a title, never a PR
        ("nearby 2.5", NearbyTitle("2.5")),
        ("nearby May Day Merges", NearbyTitle("May Day Merges")),
        ("nearby Oct 2026", NearbyTitle("Oct 2026")),
        ("nearby #5", NearbyPr(5)),
        (
            "nearby <https://episodes.example.test/p/1>",
            NearbyUrl("https://episodes.example.test/p/1"),
        ),
        (
            "nearby <https://episodes.example.test/p/1|Episode one, the page>",
            NearbyUrl("https://episodes.example.test/p/1"),
        ),
        ("nearby https://x.test/p?a=1&amp;b=2", NearbyUrl("https://x.test/p?a=1&b=2")),
        ("nearby &lt;https://x.test/p&gt;", NearbyUrl("https://x.test/p")),  # typed brackets
        ("nearby <mailto:a@x.test|a@x.test>", NearbyTitle("<mailto:a@x.test|a@x.test>")),
    ],
)
def test_nearby_tells_links_titles_and_prs_apart(text: str, expected: Command) -> None:
    assert parse_command(text, ONE, today=TODAY) == expected


@pytest.mark.parametrize(
    ("text", "today", "expected"),
    [
        ("week", TODAY, Week()),
        ("week 2026-W41", TODAY, Week(2026, 41)),
        ("week 2026W41", TODAY, Week(2026, 41)),
        ("week 2026-w05", TODAY, Week(2026, 5)),
        ("week w41", TODAY, Week(2026, 41)),
        ("week W41", date(2026, 10, 5), Week(2026, 41)),  # its Monday: it has begun
        ("week 41", TODAY, Week(2026, 41)),
        ("week w42", TODAY, Week(2025, 42)),  # not begun yet: last year's
        ("week w1", date(2027, 1, 2), Week(2026, 1)),  # 2027-W01 starts on 4 Jan
        ("week this", TODAY, Week(2026, 41)),
        ("week last", TODAY, Week(2026, 40)),
        ("week last week", date(2026, 1, 1), Week(2025, 52)),
        ("week 2026-10-04", TODAY, Week(2026, 40)),  # a Sunday
        ("week Oct 5", TODAY, Week(2026, 41)),
    ],
)
def test_week_understands_iso_weeks_and_dates(text: str, today: date, expected: Week) -> None:
    assert parse_command(text, ONE, today=today) == expected


@pytest.mark.parametrize(
    ("text", "reason", "usage_of"),
    [
        ("nearby 05/10/2026", "`05/10/2026` could be 5 Oct or 10 May", "nearby"),
        ("nearby 3/4", "could be 3 Apr or 4 Mar", "nearby"),
        ("nearby 13/13/2026", "does not exist", "nearby"),
        ("nearby 0/5/2026", "does not exist", "nearby"),
        ("nearby Tue 5 Oct 2026", "5 Oct 2026 is a Monday, not a Tuesday.", "nearby"),
        ("nearby 31 Apr", "does not exist", "nearby"),
        ("nearby 30 Feb 2026", "does not exist", "nearby"),
        ("nearby 5 Oct 1999", "out of range", "nearby"),
        ("week 2026-W54", "not a week of the calendar", "week"),
        ("week w53", "not a week of the calendar", "week"),  # 2025 has 52
        ("week 2026-02-30", "does not exist", "week"),
        ("week next", "`next` is not a week", "week"),
        ("pr 0", "PR numbers start at 1, so `0` is not one.", "pr"),
        ("pr #0", "PR numbers start at 1", "pr"),
        ("pr -5", "PR numbers start at 1", "pr"),
        ("nearby pr 0", "PR numbers start at 1", "nearby"),
        ("pr 2147483648", "too large", "pr"),
    ],
)
def test_rejections_say_what_is_wrong(text: str, reason: str, usage_of: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text, ONE, today=TODAY)
    assert reason in info.value.reason
    assert "too large" not in info.value.reason or "too large" in reason
    assert info.value.subcommand == usage_of


@pytest.mark.parametrize("text", ["nearby Oct 5", "nearby today", "week w41", "week last"])
def test_relative_forms_need_today(text: str) -> None:
    """The parser is pure: what "today" is comes from the caller, or the form is refused."""
    with pytest.raises(CommandError) as info:
        parse_command(text, ONE)
    assert "needs a year" in info.value.reason


@pytest.mark.parametrize(
    "text",
    [
        "nearby Oct 5",
        "nearby yesterday",
        "nearby 25/12",
        "nearby <https://x.test/p?a=1&amp;b=2|label>",
        "week w41",
        "week last",
        "week Oct 5",
        "week 2026W41",
    ],
)
def test_canonical_text_is_absolute(text: str) -> None:
    """A shared reply re-runs the canonical text later: it must not depend on the day."""
    command = parse_command(text, ONE, today=TODAY)
    assert parse_command(unparse(command), ONE) == command


@pytest.mark.parametrize(
    ("words", "headline", "rank"),
    [
        ("all-gather showdown", "All-Gather Showdown and Stack-Aware Merges", 0),
        ("stack aware merges", "All-Gather Showdown and Stack-Aware Merges", 0),
        ("merges showdown", "All-Gather Showdown and Stack-Aware Merges", 1),
        ("COMPILER", "Compiler Parity Push", 0),
        ("compiler hang", "Compiler Parity Push", None),  # one word in common is not enough
        ("5", "PR 5 lands", 0),
        ("5", "Filler Day 15", None),  # whole words only
        ("gather", "All-Gathering", None),
        ("", "Anything", None),
    ],
)
def test_title_match(words: str, headline: str, rank: int | None) -> None:
    assert title_match(title_words(words), headline) == rank


def test_best_title_match_prefers_a_phrase_then_the_newest(seeded_store: object) -> None:
    _, episodes = seeded_store  # type: ignore[misc]
    newest, older = episodes[0], episodes[1]
    scrambled = newest.model_copy(update={"headline": "Parity Compiler Push"})
    phrase = older.model_copy(update={"headline": "Compiler Parity Push"})
    assert best_title_match("compiler parity", [scrambled, phrase]) is phrase
    twin = older.model_copy(update={"headline": "Parity Compiler Again"})
    assert best_title_match("compiler parity", [scrambled, twin]) is scrambled
    assert best_title_match("compiler parity", []) is None


# -- through the app ----------------------------------------------------------------------


def _center(body: dict[str, object]) -> str:
    """The "This episode" line of a nearby answer."""
    for block in body["blocks"]:  # type: ignore[attr-defined]
        text = block.get("text", {}).get("text", "")
        if text.startswith("*This episode*"):
            return str(text)
    raise AssertionError(f"no episode in {body['text']!r}")


def _first_text(body: dict[str, object]) -> str:
    return str(body["blocks"][0]["text"]["text"])  # type: ignore[index]


def _pr_five_on_the_7th(episodes: list[Episode]) -> Episode:
    """An episode two days after 5 Oct whose summary names "PR 5": the QA case."""
    return episodes[0].model_copy(
        update={
            "guid": "pytorch-2026-10-07",
            "title": "PyTorch: Small Things",
            "headline": "Small Things",
            "summary": "PR 5 lands on 5 Oct 2026 in spirit.",
            "url": "https://episodes.example.test/pytorch/2026-10-07",
            "published_at": datetime(2026, 10, 7, 8, 0, tzinfo=UTC),
            "nearby": (),
            "pull_requests": (
                PullRequestRef(
                    number=5,
                    url="https://github.com/pytorch/pytorch/pull/5",
                    context="PR 5 lands.",
                ),
            ),
        }
    )


NEARBY_DATES: list[tuple[str, str, str]] = [
    # text, the episode at the centre, the text a share re-runs
    ("nearby 5 Oct 2026", "Mon 5 Oct 2026", "nearby 2026-10-05"),
    ("nearby Oct 5", "Mon 5 Oct 2026", "nearby 2026-10-05"),
    ("nearby October 5 2026", "Mon 5 Oct 2026", "nearby 2026-10-05"),
    ("nearby Mon 5 Oct 2026", "Mon 5 Oct 2026", "nearby 2026-10-05"),
    ("nearby 2026-10-02", "Fri 2 Oct 2026", "nearby 2026-10-02"),
    ("nearby Oct 4", "Sat 3 Oct 2026", "nearby 2026-10-04"),
    ("nearby 2026-10-21", "Wed 7 Oct 2026", "nearby 2026-10-21"),  # 14 days: still near
]


def test_nearby_dates_find_that_day_not_words_in_summaries(slack_app: RunningApp) -> None:
    slack_app.store.upsert_episodes(
        [_pr_five_on_the_7th(slack_app.episodes)], datetime(2026, 10, 7, 9, tzinfo=UTC)
    )
    for text, center, shared in NEARBY_DATES:
        body = reply(slack_app.sender.slash(text))
        assert center in _center(body), text
        assert share_value(body) == shared, text
    # A day without an episode says that the one shown is the nearest.
    body = reply(slack_app.sender.slash("nearby Oct 4"))
    assert "No episode on 4 Oct 2026; this is the nearest one." in mrkdwn(body)
    assert "this is the nearest" not in mrkdwn(reply(slack_app.sender.slash("nearby Oct 5")))


def test_nearby_a_far_date_says_so_instead_of_answering(slack_app: RunningApp) -> None:
    for text, day, nearest in [
        ("nearby 2025-01-01", "1 Jan 2025", "Tue 1 Sep 2026"),
        ("nearby 2026-10-20", "20 Oct 2026", "Mon 5 Oct 2026"),
        ("nearby 1 Jan 2030", "1 Jan 2030", "Mon 5 Oct 2026"),
    ]:
        body = reply(slack_app.sender.slash(text))
        expected = f"No episode within 2 weeks of {day}; the nearest is:"
        assert body["text"] == expected, text
        assert _first_text(body) == expected, text
        assert body["blocks"][1]["text"]["text"].startswith(nearest), text
        assert "Around" not in mrkdwn(body), text
        assert share_value(body) is None, text


def test_nearby_a_pasted_episode_link(slack_app: RunningApp) -> None:
    oct_1 = "https://episodes.example.test/pytorch/2026-10-01"
    for text, center, shared in [
        (f"nearby <{PAGE_URL}>", "Mon 5 Oct 2026", f"nearby {PAGE_URL}"),
        (f"nearby <{PAGE_URL}|the Monday episode>", "Mon 5 Oct 2026", f"nearby {PAGE_URL}"),
        (f"nearby {PAGE_URL}", "Mon 5 Oct 2026", f"nearby {PAGE_URL}"),
        (f"nearby <{oct_1}/>", "Thu 1 Oct 2026", f"nearby {oct_1}/"),  # a trailing slash
    ]:
        body = reply(slack_app.sender.slash(text))
        assert center in _center(body), text
        assert share_value(body) == shared, text
    body = reply(slack_app.sender.slash("nearby <https://example.invalid/pytorch/2026-10-05>"))
    assert _first_text(body) == (
        "No episode has the link `https://example.invalid/pytorch/2026-10-05`."
    )
    assert share_value(body) is None
    # A hostile "link" is echoed escaped, and cannot close the backticks.
    body = reply(slack_app.sender.slash("nearby https://x.test/`<!channel>`"))
    assert "`https://x.test/'&lt;!channel&gt;'`" in _first_text(body)


def test_nearby_title_words_must_all_be_in_one_title(slack_app: RunningApp) -> None:
    slack_app.store.upsert_episodes(
        [_pr_five_on_the_7th(slack_app.episodes)], datetime(2026, 10, 7, 9, tzinfo=UTC)
    )
    for text, center in [
        ("nearby hang fixes", "Fri 2 Oct 2026"),
        ("nearby compiler hardening distributed", "Fri 2 Oct 2026"),
        ("nearby parity", "Thu 1 Oct 2026"),
        ("nearby compiler", "Fri 2 Oct 2026"),  # in two titles: the newer
        ("nearby pytorch: compiler parity", "Thu 1 Oct 2026"),  # the full title's words
        ("nearby filler day 5", "Sat 5 Sep 2026"),  # not "Filler Day 15" or "25"
    ]:
        assert center in _center(reply(slack_app.sender.slash(text))), text
    # Words only in summaries or transcripts, or only some of them in a title, find nothing.
    for words in ["199650", "watchdog", "compiler watchdog", "lands"]:
        body = reply(slack_app.sender.slash(f"nearby {words}"))
        assert _first_text(body) == (
            f"No episode title has all of “{words}”. For the full text, try `/episodes search`."
        ), words
        assert share_value(body) is None, words
    body = reply(slack_app.sender.slash("nearby <!channel> `x`"))
    assert "“&lt;!channel&gt; 'x'”" in _first_text(body)


def test_pr_zero_and_negative_say_numbers_start_at_one(slack_app: RunningApp) -> None:
    for text in ["pr 0", "pr -3", "#0"]:
        body = reply(slack_app.sender.slash(text))
        assert "PR numbers start at 1" in _first_text(body), text
        assert "too large" not in mrkdwn(body), text


def test_share_is_offered_only_when_there_is_something_to_share(slack_app: RunningApp) -> None:
    empty = [
        "nearby #4242",
        "nearby 2025-01-01",
        "nearby zebra unicorn",
        "nearby <https://example.invalid/x>",
        "pr 1",
        "search zebra unicorn",
        "list",
        "week 2026-08-03",
    ]
    for text in empty:
        assert share_value(reply(slack_app.sender.slash(text))) is None, text
    for text in ["nearby #199720", "pr 199720", "search all-gather", "week 2026-W40", "recent"]:
        assert share_value(reply(slack_app.sender.slash(text))) is not None, text
    slack_app.store.subscribe("T0TEST", "C0TEST0001", "PyTorch")
    assert share_value(reply(slack_app.sender.slash("list"))) == "list"


# -- `week` with no week, on a Monday -----------------------------------------------------


@pytest.fixture
def monday_app(
    app_settings: Settings, seeded_store: tuple[Store, list[Episode]], slack_fake: SlackFake
) -> Iterator[RunningApp]:
    """The app on Monday 12 Oct 2026 (2026-W42), before that week's first episode; no
    answer cache, so a new episode shows at once."""
    store, episodes = seeded_store
    app = build_app(
        app_settings,
        store,
        Renderer(tz=app_settings.tz),
        client=make_web_client(app_settings),
        now=lambda: datetime(2026, 10, 12, 9, 0, tzinfo=UTC),
        reply_cache_ttl=0,
    )
    server = AppServer(app_settings, build_asgi(app, store)).start()
    sender = SlackSender(server.url, slack_fake)
    try:
        yield RunningApp(app_settings, store, slack_fake, server, sender, episodes)
    finally:
        sender.close()
        server.stop()


def test_bare_week_on_a_quiet_monday_shows_last_week_and_says_so(monday_app: RunningApp) -> None:
    body = reply(monday_app.sender.slash("week"))
    listed = mrkdwn(body)
    assert "No episodes yet in week 42, so here is last week." in listed
    assert PAGE_URL in listed  # 5 Oct, in week 41
    # Shared later, it is still week 41.
    assert share_value(body) == "week 2026-W41"

    # Asked for by name, this week is what it is: quiet, and nothing to share.
    body = reply(monday_app.sender.slash("week 2026-W42"))
    assert "a quiet week" in mrkdwn(body).casefold()
    assert "so here is last week" not in mrkdwn(body)
    assert share_value(body) is None

    # Once this week has an episode, bare `week` shows it.
    first = monday_app.episodes[0].model_copy(
        update={
            "guid": "pytorch-2026-10-12",
            "url": "https://episodes.example.test/pytorch/2026-10-12",
            "published_at": datetime(2026, 10, 12, 7, 0, tzinfo=UTC),
            "nearby": (),
        }
    )
    monday_app.store.upsert_episodes([first], datetime(2026, 10, 12, 8, tzinfo=UTC))
    body = reply(monday_app.sender.slash("week"))
    assert "2026-10-12" in mrkdwn(body)
    assert "here is last week" not in mrkdwn(body)
    assert share_value(body) == "week 2026-W42"


def test_bare_week_with_episodes_this_week_shows_this_week(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("week"))
    assert PAGE_URL in mrkdwn(body)
    assert "here is last week" not in mrkdwn(body)
    assert share_value(body) == "week 2026-W41"
