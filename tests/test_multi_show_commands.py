"""Commands in a workspace with several shows of different repositories, through signed
requests to the real app: what a bare PR number or a show name means when the channel's
shows point to several places."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.listeners.commands.model import Subscribe
from bot.listeners.commands.parse import parse_command
from config.settings import ShowConfig
from digests.models import Episode, PullRequestRef
from digests.store import Store
from tests.fixtures.app import APP_NOW, CHANNEL, TEAM, SlackSender, make_settings
from tests.fixtures.control import Clock, app_with_clock, reply_lines
from tests.slackfake import SlackFake

SHOWS = [
    ShowConfig(name="PyTorch", feed="https://episodes.example.test/pt.xml", repo="pytorch/pytorch"),
    ShowConfig(name="JAX", feed="https://episodes.example.test/jax.xml", repo="jax-ml/jax"),
]


@pytest.fixture
def sender(store: Store, slack_fake: SlackFake) -> Iterator[SlackSender]:
    settings = make_settings(slack_fake.api_url, slack_fake.token, shows=SHOWS)
    with app_with_clock(settings, store, slack_fake, Clock()) as sender:
        yield sender


def lines(sender: SlackSender, text: str) -> list[str]:
    response = sender.slash(text)
    assert response.status_code == 200, response.text
    return reply_lines(response.json())


@pytest.mark.parametrize("verb", ["follow", "unfollow"])
def test_a_bare_pr_number_of_several_repositories_asks_which_instead_of_failing(
    sender: SlackSender, verb: str
) -> None:
    reply = lines(sender, f"{verb} 5012")
    assert not any("failed on our side" in line for line in reply), reply
    assert "Which repository's #5012?" in reply[0]
    assert any(line.startswith("Usage:") for line in reply), reply


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("follow +", "`+` needs a word right after the +"),
        ("follow - fsdp", "`-` needs a word right after the -"),
        ('follow ""', "is an empty phrase"),
    ],
)
def test_a_follow_with_a_bad_filter_term_says_what_is_wrong(
    sender: SlackSender, text: str, said: str
) -> None:
    reply = lines(sender, text)
    assert said in reply[0], reply
    assert "never closed" not in reply[0]


def test_a_follow_of_a_word_with_an_apostrophe_is_a_follow(sender: SlackSender) -> None:
    (reply,) = lines(sender, "follow don't")
    assert reply.startswith("Following `don't`"), reply


@pytest.mark.parametrize(
    ("text", "footer"),
    [
        # Bare, "JAX" would subscribe to a second show and "daily" switch to daily mode.
        ("preview PyTorch JAX", "`/episodes subscribe PyTorch keywords: JAX`"),
        ("preview PyTorch daily", '`/episodes subscribe PyTorch keywords: "daily"`'),
        ("preview PyTorch fsdp -rocm", "`/episodes subscribe PyTorch fsdp -rocm`"),
    ],
)
def test_the_preview_footer_subscribes_to_the_filter_it_previewed(
    sender: SlackSender, store: Store, text: str, footer: str
) -> None:
    store.upsert_episodes(
        [
            Episode(
                guid="e1",
                show="PyTorch",
                title="PyTorch: FSDP",
                headline="FSDP",
                summary="fsdp news",
                published_at=APP_NOW,
            )
        ],
        APP_NOW,
    )
    reply = lines(sender, text)
    assert footer in reply[-1], reply
    typed = footer.strip("`").removeprefix("/episodes ").replace("&quot;", '"')
    again = parse_command(typed, [s.name for s in SHOWS], today=APP_NOW.date())
    assert again == Subscribe("PyTorch", keywords=tuple(text.split()[2:]))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("subscribe JAX recap off", "Its weekly recap is now off."),
        ("subscribe JAX daily off", "It is back to a digest per episode"),
    ],
)
def test_a_subscribe_that_changes_only_the_recap_or_the_mode_says_so(
    sender: SlackSender, change: str, said: str
) -> None:
    lines(sender, "subscribe JAX daily 17:00")
    reply = lines(sender, change)
    assert said in reply[0], reply


def test_pr_of_a_linked_repository_finds_it_in_a_show_the_channel_does_not_follow(
    sender: SlackSender, store: Store
) -> None:
    def named(show: str, repo: str) -> Episode:
        url = f"https://github.com/{repo}/pull/5012"
        return Episode(
            guid=f"{show}-1",
            show=show,
            title=f"{show}: News",
            headline=f"{show} news",
            summary="PR 5012.",
            published_at=APP_NOW,
            pull_requests=(PullRequestRef(5012, url, "PR 5012 lands."),),
        )

    store.upsert_episodes(
        [named("PyTorch", "pytorch/pytorch"), named("JAX", "jax-ml/jax")], APP_NOW
    )
    store.subscribe(TEAM, CHANNEL, "PyTorch")
    reply = lines(sender, "pr https://github.com/jax-ml/jax/pull/5012")
    assert "No episode names" not in reply[0], reply
    assert any("JAX news" in line for line in reply), reply
    # A bare number stays the channel's: PyTorch's #5012 only.
    (heading, line) = lines(sender, "pr 5012")
    assert "pytorch/pytorch/pull/5012" in heading and "PyTorch news" in line
