"""`/episodes` in a workspace of three shows.

The parser as tables, then the answers through the real app (signed requests, in-process
ASGI, the Slack fake), SQLite and PostgreSQL. Shows: PyTorch → pytorch/pytorch, JAX →
jax-ml/jax, Triton → triton-lang/triton; the clock stands at Wed 2026-10-07 (2026-W41).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from bot.listeners.commands.model import (
    CommandError,
    Latest,
    NearbyDate,
    NearbyTitle,
    Pr,
    Recent,
    Search,
    Subscribe,
    Week,
)
from bot.listeners.commands.parse import parse_command, unparse
from bot.server.asgi import build_asgi
from config.settings import Settings, ShowConfig
from digests.models import Episode, PullRequestRef
from digests.store import Store
from tests.fixtures.app import (
    CHANNEL,
    TEAM,
    USER,
    AppLoop,
    InProcessClient,
    RunningApp,
    SlackSender,
    assert_valid_message,
    build_test_app,
    make_settings,
    wait_for,
)
from tests.slackfake import SlackFake

SHOWS = ["PyTorch", "JAX", "Triton"]
REPOS = {"PyTorch": "pytorch/pytorch", "JAX": "jax-ml/jax", "Triton": "triton-lang/triton"}
TODAY = date(2026, 10, 7)
OTHER = "C0OTHER001"  # follows nothing: every show


def show_settings(api_url: str, token: str) -> Settings:
    return make_settings(
        api_url,
        token,
        shows=[
            ShowConfig(
                name=name, feed=f"https://episodes.example.test/{name.lower()}.xml", repo=repo
            )
            for name, repo in REPOS.items()
        ],
    )


def pr(repo: str, number: int, context: str) -> PullRequestRef:
    return PullRequestRef(number, f"https://github.com/{repo}/pull/{number}", context)


def episode(
    show: str, day: int, headline: str, summary: str = "", prs: tuple[PullRequestRef, ...] = ()
) -> Episode:
    slug = f"{show.lower()}-2026-10-{day:02d}"
    return Episode(
        guid=slug,
        show=show,
        title=f"{show}: {headline}",
        headline=headline,
        summary=summary,
        published_at=datetime(2026, 10, day, 13, 0, tzinfo=UTC),
        url=f"https://episodes.example.test/{slug}",
        pull_requests=prs,
    )


EPISODES = [
    episode(
        "PyTorch",
        1,
        "FSDP All-Gather Tuning",
        "The all-gather of FSDP overlaps with compute.",
        (pr("pytorch/pytorch", 5012, "PR 5012 overlaps the all-gather."),),
    ),
    episode("PyTorch", 5, "Compiler Graph Breaks", "The compiler stops at fewer graph breaks."),
    episode(
        "JAX",
        2,
        "Sharding Gathers It All",
        "A gather of all shards, and the all-gather of the new sharding API.",
        (pr("jax-ml/jax", 5012, "JAX's own 5012 reworks sharding."),),
    ),
    episode(
        "JAX",
        6,
        "pjit Migration Notes",
        "Moving off pjit; a PyTorch interop change landed too.",
        (pr("pytorch/pytorch", 5012, "The PyTorch side, pytorch/pytorch 5012, landed."),),
    ),
    episode("Triton", 3, "Kernels for Blackwell", "Triton kernels learn new tensor cores."),
    episode("Triton", 4, "Autotuner Caching", "The autotuner caches its configs."),
]


@pytest.fixture
def shows_app(
    slack_fake: SlackFake, store: Store, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunningApp]:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = show_settings(slack_fake.api_url, slack_fake.token)
    for name, repo in REPOS.items():
        store.ensure_show(name, f"https://episodes.example.test/{name.lower()}.xml", repo)
    store.upsert_episodes(EPISODES, datetime(2026, 10, 6, 20, tzinfo=UTC))
    app_loop = AppLoop()
    http = InProcessClient(build_asgi(build_test_app(settings, store), store), app_loop)
    sender = SlackSender("http://slack-app.test", slack_fake, http=http)
    try:
        yield RunningApp(settings, store, slack_fake, None, sender, list(EPISODES))
    finally:
        sender.close()
        app_loop.close()


def reply(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["response_type"] == "ephemeral"
    assert_valid_message(body)
    return body


def text_of(body: dict[str, Any]) -> str:
    return json.dumps(body["blocks"], ensure_ascii=False)


def sections(body: dict[str, Any]) -> list[str]:
    return [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]


def listed(body: dict[str, Any]) -> list[str]:
    """The episode slugs an answer links to, in order."""
    found = []
    text = text_of(body)
    for e in EPISODES:
        at = text.find(f"{e.url}|")
        if at >= 0:
            found.append((at, e.guid))
    return [guid for _, guid in sorted(found)]


def ask(app: RunningApp, text: str, channel: str = CHANNEL) -> dict[str, Any]:
    return reply(app.sender.slash(text, channel=channel))


# -- item 3: the show argument, parsed ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("recent JAX 3", Recent(3, "JAX")),
        ("recent 3 jax", Recent(3, "JAX")),
        ("recent “Triton”", Recent(5, "Triton")),
        ("latest Triton", Latest("Triton")),
        ("latest", Latest()),
        ("nearby JAX Nov 25", NearbyDate(date(2025, 11, 25), "JAX")),
        ("nearby JAX pjit migration", NearbyTitle("pjit migration", "JAX")),
        ("search JAX all-gather", Search("all-gather", "JAX")),
        ("search JAX", Search("JAX")),  # the words are all there is: they are the search
        ("pr jax 5012", Pr(5012, "JAX")),
        ("week JAX 2026-W40", Week(2026, 40, show="JAX")),
        # Subcommand names read like show names: case and full-width forms do not count.
        ("ＲＥＣＥＮＴ ＪＡＸ 3", Recent(3, "JAX")),
        ("Ｌａｔｅｓｔ", Latest()),
    ],
)
def test_queries_take_a_show_name(text: str, expected: object) -> None:
    command = parse_command(text, SHOWS, today=TODAY)
    assert command == expected
    assert parse_command(unparse(command), SHOWS, today=TODAY) == command  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["recent Jaxx 3", "latest Trtion", "pr PyTroch 5012"])
def test_a_misspelt_show_in_a_query_gets_a_hint(text: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text, SHOWS, today=TODAY)
    assert "did you mean" in info.value.reason


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("latest JAX Triton", "latest"),
        ("latest jax triton", "latest"),
        ("recent JAX Triton", "recent"),
        ("recent JAX 3 Triton", "recent"),
        ("pr JAX Triton 5012", "pr"),
        ("week JAX Triton", "week"),
    ],
)
def test_a_query_naming_two_shows_says_it_takes_one(text: str, command: str) -> None:
    # `latest JAX Triton` said "`latest` takes no arguments", though it takes a show, and
    # `recent JAX Triton` that `Triton` was not a number of episodes.
    with pytest.raises(CommandError) as info:
        parse_command(text, SHOWS, today=TODAY)
    assert info.value.reason == (
        f"`{command}` takes one show at a time, and Triton is a second: ask for each on its own."
    )
    assert info.value.subcommand == command


def test_latest_with_a_word_that_is_no_show_says_it_takes_only_a_show() -> None:
    with pytest.raises(CommandError) as info:
        parse_command("latest JAX now", SHOWS, today=TODAY)
    assert info.value.reason == (
        "`latest` takes no arguments but a show name, and `now` is not one."
    )


def test_latest_of_two_shows_is_answered_with_the_reason_and_usage(shows_app: RunningApp) -> None:
    body = text_of(ask(shows_app, "latest JAX Triton"))
    assert "`latest` takes one show at a time, and Triton is a second" in body
    assert "/episodes latest [show]" in body
    assert "takes no arguments" not in body


# -- item 4: subscribe, parsed ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("subscribe PyTorch JAX", Subscribe("PyTorch", also=("JAX",))),
        ("subscribe pytorch jax triton", Subscribe("PyTorch", also=("JAX", "Triton"))),
        ("subscribe PyTorch fsdp, dtensor", Subscribe("PyTorch", ("fsdp", "dtensor"))),
        ("subscribe PyTorch fsdp,dtensor.", Subscribe("PyTorch", ("fsdp", "dtensor"))),
        ("subscribe PyTorch (fsdp) jax", Subscribe("PyTorch", ("fsdp",), also=("JAX",))),
        # A show name is a keyword only quoted after a show, or after `keywords:`.
        ('subscribe PyTorch "jax"', Subscribe("PyTorch", ("jax",))),
        ("subscribe PyTorch keywords:jax", Subscribe("PyTorch", ("jax",))),
        ('subscribe PyTorch keywords: "jax" fsdp', Subscribe("PyTorch", ("jax", "fsdp"))),
        ("subscribe JAX recap off", Subscribe("JAX", recap=False)),
        ("subscribe JAX sharding recap on", Subscribe("JAX", ("sharding",), recap=True)),
    ],
)
def test_subscribe_reads_shows_keywords_and_recap(text: str, expected: Subscribe) -> None:
    command = parse_command(text, SHOWS)
    assert command == expected
    assert parse_command(unparse(command), SHOWS) == command


# -- item 3: answers scoped to the channel ------------------------------------------------


def test_answers_are_about_the_channels_shows(shows_app: RunningApp) -> None:
    shows_app.store.subscribe(TEAM, CHANNEL, "PyTorch")
    assert listed(ask(shows_app, "recent")) == ["pytorch-2026-10-05", "pytorch-2026-10-01"]
    assert "pytorch-2026-10-05" in listed(ask(shows_app, "latest"))
    # One show: the lines need not name it.
    assert "*PyTorch* ·" not in text_of(ask(shows_app, "recent"))
    # A channel that follows nothing hears about every show, and each line names its show.
    everything = ask(shows_app, "recent 6", channel=OTHER)
    assert len(listed(everything)) == 6
    assert "*JAX* · " in text_of(everything) and "*Triton* · " in text_of(everything)
    # A show named in the command wins over the channel's.
    assert listed(ask(shows_app, "recent JAX 3")) == ["jax-2026-10-06", "jax-2026-10-02"]
    assert "triton-2026-10-04" in listed(ask(shows_app, "latest Triton"))
    near = ask(shows_app, "nearby JAX Oct 3")
    assert sections(near)[0].startswith("*Around “Sharding Gathers It All”")
    assert "Did you mean" not in text_of(ask(shows_app, "search compiler"))
    assert listed(ask(shows_app, "search kernels")) == []  # Triton's, not this channel's
    assert listed(ask(shows_app, "search Triton kernels")) == ["triton-2026-10-03"]


def test_app_home_names_the_show_of_each_line(shows_app: RunningApp) -> None:
    shows_app.sender.event({"type": "app_home_opened", "user": USER, "tab": "home"})
    view = wait_for(lambda: shows_app.fake.home_view(USER))
    text = json.dumps(view["blocks"], ensure_ascii=False)
    assert "*JAX* · " in text and "*PyTorch* · " in text and "*Triton* · " in text


# -- item 4: subscriptions say what they do -----------------------------------------------


def test_subscribe_to_two_shows_and_keep_the_recap_setting(shows_app: RunningApp) -> None:
    body = ask(shows_app, "subscribe PyTorch JAX")
    assert sections(body)[1] == "Now: *PyTorch*, *JAX* · every episode · weekly recap on"
    subs = shows_app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL)
    assert [(s.show, s.keywords, s.recap) for s in subs] == [
        ("JAX", (), True),
        ("PyTorch", (), True),
    ]
    off = ask(shows_app, "subscribe JAX recap off")
    assert sections(off)[1] == "Now: *JAX* · every episode · weekly recap off"
    again = ask(shows_app, "subscribe JAX sharding, pjit")
    assert sections(again)[1] == "Now: *JAX* · keywords “sharding”, “pjit” · weekly recap off"
    (jax,) = shows_app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL, show="JAX")
    assert (jax.keywords, jax.recap) == (("sharding", "pjit"), False)


def test_a_new_keyword_subscription_says_what_its_backfill_does(shows_app: RunningApp) -> None:
    nothing = ask(shows_app, "subscribe Triton quantum")
    assert "Nothing yet matches — the next matching episode will be posted here." in text_of(
        nothing
    )
    some = ask(shows_app, "subscribe PyTorch compiler", channel=OTHER)
    assert "posted here at the next poll" in text_of(some)
    assert "pytorch-2026-10-05" in listed(some)


# -- item 5: search -----------------------------------------------------------------------


def test_search_wants_every_word_and_says_when_it_settles_for_some(
    shows_app: RunningApp,
) -> None:
    body = ask(shows_app, "search all-gather", channel=OTHER)
    assert body["blocks"][0]["text"]["text"].startswith("Episodes matching")
    # Both have the phrase: the newer first (JAX 10-02 above PyTorch 10-01).
    assert listed(body) == ["jax-2026-10-02", "pytorch-2026-10-01"]
    some = ask(shows_app, "search autotuner quantum", channel=OTHER)
    assert "No episode has all of “autotuner quantum”; these have some." in text_of(some)
    assert listed(some) == ["triton-2026-10-04"]


def test_a_one_word_search_that_finds_nothing_asks_the_store_once(
    shows_app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    search = shows_app.store.search

    def counted(words: str, *args: Any, **kwargs: Any) -> list[Episode]:
        calls.append(words)
        return search(words, *args, **kwargs)

    monkeypatch.setattr(shows_app.store, "search", counted)
    assert "xylophone" in text_of(ask(shows_app, "search xylophone", channel=OTHER))
    assert calls == ["xylophone"]  # "some of the words" would be the same search again
    some = ask(shows_app, "search autotuner xylophone", channel=OTHER)
    assert listed(some) == ["triton-2026-10-04"]
    assert calls[1:] == ["autotuner xylophone"] * 2


# -- item 6: pr keeps the link's repository ----------------------------------------------


def test_pr_link_keeps_its_repository(shows_app: RunningApp) -> None:
    jax = ask(shows_app, "pr https://github.com/jax-ml/jax/pull/5012", channel=OTHER)
    assert listed(jax) == ["jax-2026-10-02"]
    torch = ask(shows_app, "pr <https://github.com/pytorch/pytorch/pull/5012>", channel=OTHER)
    assert listed(torch) == ["jax-2026-10-06", "pytorch-2026-10-01"]
    none = ask(shows_app, "pr https://github.com/someone/else/pull/5012", channel=OTHER)
    assert sections(none)[0] == "No episode names someone/else#5012."


def test_a_pr_of_another_repository_is_labelled_with_it(shows_app: RunningApp) -> None:
    shows_app.store.subscribe(TEAM, CHANNEL, "JAX")
    body = ask(shows_app, "pr https://github.com/pytorch/pytorch/pull/5012")
    assert sections(body)[0] == (
        "*<https://github.com/pytorch/pytorch/pull/5012|Episodes naming pytorch/pytorch#5012>*"
    )
    own = ask(shows_app, "pr https://github.com/jax-ml/jax/pull/5012")
    assert (
        sections(own)[0] == "*<https://github.com/jax-ml/jax/pull/5012|Episodes naming PR #5012>*"
    )


def test_one_episode_naming_the_same_number_in_two_repositories(shows_app: RunningApp) -> None:
    # JAX's own 5012 and pytorch/pytorch's 5012 in one episode: each PR finds it, with the
    # sentence that names that PR, not only the first of the two.
    both = episode(
        "JAX",
        7,
        "Both Sides Now",
        "Sharding again.",
        (
            pr("jax-ml/jax", 5012, "JAX's own 5012 reworks sharding again."),
            pr("pytorch/pytorch", 5012, "Its twin pytorch/pytorch 5012 landed too."),
        ),
    )
    shows_app.store.upsert_episodes([both], datetime(2026, 10, 7, 14, tzinfo=UTC))
    torch = ask(shows_app, "pr https://github.com/pytorch/pytorch/pull/5012", channel=OTHER)
    assert text_of(torch).count(f"{both.url}|") == 1
    assert "Its twin pytorch/pytorch 5012 landed too." in text_of(torch)
    assert "JAX's own 5012" not in text_of(torch)
    assert torch["text"] == "Episodes naming PR #5012: 3 episodes"
    # Every 5012: the episode under each repository's heading, counted once.
    every = ask(shows_app, "pr 5012", channel=OTHER)
    torch_at = text_of(every).index("Episodes naming PR #5012 (pytorch/pytorch)")
    jax_at = text_of(every).index("Episodes naming PR #5012 (jax-ml/jax)")
    assert text_of(every).count(f"{both.url}|") == 2
    assert text_of(every).index("Its twin pytorch/pytorch 5012", torch_at) > torch_at
    assert text_of(every).index("JAX's own 5012 reworks sharding again.", jax_at) > jax_at
    assert every["text"] == "Episodes naming PR #5012: 4 episodes"


# -- item 7: week follows the channel's filter -------------------------------------------


def test_week_follows_the_channels_filter_and_says_so(shows_app: RunningApp) -> None:
    ask(shows_app, "subscribe JAX pjit")
    body = ask(shows_app, "week 2026-W41")
    assert listed(body) == ["jax-2026-10-06"]
    assert "As this channel's recap: *JAX* mentions pjit." in text_of(body)
    # The recap of a week with nothing the filter wants.
    quiet = ask(shows_app, "week 2026-W40")
    assert listed(quiet) == []
    # Unfiltered in a channel that follows nothing.
    assert listed(ask(shows_app, "week 2026-W40", channel=OTHER)) == [
        "pytorch-2026-10-01",
        "jax-2026-10-02",
        "triton-2026-10-03",
        "triton-2026-10-04",
    ]


def test_bare_week_with_this_weeks_episodes_filtered_out_says_so(shows_app: RunningApp) -> None:
    # PyTorch's 2026-W41 episode is about the compiler, its W40 one about FSDP: bare `week`
    # shows last week, and used to say week 41 had "no episodes yet", which it has.
    ask(shows_app, "subscribe PyTorch fsdp")
    body = ask(shows_app, "week")
    assert listed(body) == ["pytorch-2026-10-01"]
    assert "No episodes yet in week 41" not in text_of(body)
    assert (
        "None of week 41's episodes so far match this channel's filter, so here is last week."
        in text_of(body)
    )
    # Nothing matches either week: this week, empty, and why.
    ask(shows_app, "subscribe PyTorch zebra")
    none = ask(shows_app, "week")
    assert listed(none) == []
    assert "None of week 41's episodes match this channel's filter." in text_of(none)
    named = ask(shows_app, "week 2026-W40")
    assert "None of week 40's episodes match this channel's filter." in text_of(named)
    # A week with no episodes at all says nothing about the filter's matches.
    later = ask(shows_app, "week 2026-W39")
    assert "match this channel's filter" not in text_of(later)


def test_a_week_outside_the_archive_says_so(shows_app: RunningApp) -> None:
    before = ask(shows_app, "week 2025-W10", channel=OTHER)
    assert "Week 2025-W10 is before the archive starts (1 Oct 2026)." in text_of(before)
    later = ask(shows_app, "week 2027-W02", channel=OTHER)
    assert "Week 2027-W02 has not happened yet." in text_of(later)


# -- item 9: input checks -----------------------------------------------------------------


def _slash_without_channel(app: RunningApp, text: str, **extra: str) -> httpx.Response:
    form = {
        "team_id": TEAM,
        "user_id": USER,
        "command": "/episodes",
        "text": text,
        "response_url": app.fake.response_url(),
        **extra,
    }
    return app.sender.post(urlencode(form).encode(), "application/x-www-form-urlencoded")


@pytest.mark.parametrize("channel", [None, "", "../etc", "c0lower", "X0NOTACHAN"])
def test_a_command_without_a_usable_channel_is_refused(
    shows_app: RunningApp, channel: str | None
) -> None:
    extra = {} if channel is None else {"channel_id": channel}
    body = reply(_slash_without_channel(shows_app, "subscribe PyTorch", **extra))
    assert sections(body) == [
        ":warning: This command needs a channel, and Slack sent none I can use; "
        "run it in a channel."
    ]
    assert shows_app.store.subscriptions() == []


def test_a_button_of_an_older_release_is_acknowledged_politely(shows_app: RunningApp) -> None:
    url = shows_app.fake.response_url()
    response = shows_app.sender.block_action("digest_retired_button", "{}", response_url=url)
    assert response.status_code == 200
    (answer,) = wait_for(lambda: shows_app.fake.responses(url))
    assert answer["response_type"] == "ephemeral"
    assert "this button is out of date" in answer["text"]


# -- 13: Share in channel shares what the person saw -------------------------------------


def test_share_posts_the_answer_the_person_saw(shows_app: RunningApp) -> None:
    original = ask(shows_app, "recent 1", channel=OTHER)
    assert listed(original) == ["jax-2026-10-06"]
    newer = episode("Triton", 7, "A Newer Episode")
    shows_app.store.upsert_episodes([newer], datetime(2026, 10, 7, 9, tzinfo=UTC))
    value = original["blocks"][-1]["elements"][0]["value"]
    url = shows_app.fake.response_url()
    shows_app.sender.block_action("episodes_share", value, response_url=url, channel=OTHER)
    posted = wait_for(lambda: shows_app.fake.responses(url))[0]
    assert posted["response_type"] == "in_channel"
    assert posted["blocks"][:-1] == original["blocks"][:-1]
    assert "A Newer Episode" not in json.dumps(posted, ensure_ascii=False)
