"""A show's `prs` setting: in a Linux kernel show "PR 2 of the sched series"
and "pull request 42 from the mailing list" are no GitHub PRs. `prs = "links"` keeps only
github.com/…/pull/N links, `prs = "off"` none; a `repo` that is not on GitHub is refused at
config check, saying what to set. Signed requests to the real app, real polls of a feed on
loopback, the Slack fake, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from config.settings import ShowConfig, load_settings
from digests.errors import ConfigError
from digests.store import Store
from digests.types import PrMode
from tests.feedserver import FeedServer
from tests.fixtures.app import CHANNEL, make_settings
from tests.fixtures.control import Clock, Rig, app_with_clock
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

SERIES = rss_item(
    1,
    headline="Scheduler Series",
    summary="PR 2 of the sched series is out; pull request 42 from the mailing list is merged.",
    prs="Mirrored as https://github.com/torvalds/linux/pull/7 on GitHub. PR 3 follows.",
)


def kernel_rig(
    prs: PrMode,
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> Iterator[Rig]:
    url = feed_server.route("/kernel.xml", rss(SERIES))
    show = ShowConfig(name="Kernel Notes", feed=url, repo="torvalds/linux", prs=prs)
    settings = make_settings(
        slack_fake.api_url, slack_fake.token, shows=[show], thread_replies=True
    )
    clock = Clock(datetime(2026, 10, 1, 15, 0, tzinfo=UTC))
    with app_with_clock(settings, store, slack_fake, clock) as sender:
        yield Rig(settings, store, slack_fake, sender, clock, feed_server, http, deliverer)


@pytest.fixture(params=["links", "off"])
def kernel(
    request: pytest.FixtureRequest,
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> Iterator[Rig]:
    yield from kernel_rig(request.param, store, slack_fake, feed_server, http, deliverer)


async def test_a_kernel_show_links_no_pr_its_text_only_numbers(kernel: Rig) -> None:
    kernel.slash('subscribe "Kernel Notes"')
    await kernel.poll(kernel.clock.now)
    posted = json.dumps(kernel.fake.messages(CHANNEL), ensure_ascii=False)
    assert "Scheduler Series" in posted
    # Linked PRs (mrkdwn `<url|#n>`); the transcript excerpt quotes the feed's own text.
    for number in (2, 3, 42):
        assert f"torvalds/linux/pull/{number}|" not in posted
    links = kernel.settings.shows[0].prs == "links"
    assert ("torvalds/linux/pull/7|" in posted) is links

    # The episode's answers agree: `pr 2` finds nothing, `pr 7` only with links on.
    assert "Scheduler Series" not in "\n".join(kernel.slash('pr "Kernel Notes" 2'))
    assert ("Scheduler Series" in "\n".join(kernel.slash('pr "Kernel Notes" 7'))) is links


def write(tmp_path: Path, show: str) -> Path:
    path = tmp_path / "digestbot.toml"
    path.write_text(f'[[shows]]\nname = "Kernel Notes"\nfeed = "k.xml"\n{show}\n')
    return path


def test_a_repository_not_on_github_is_refused_saying_what_to_set(tmp_path: Path) -> None:
    repo = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"
    path = write(tmp_path, f'repo = "{repo}"')
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = info.value.format_message()
    assert f"shows.0.repo: '{repo}' is not a GitHub repository (owner/name)" in message
    assert 'leave `repo` out and set prs = "off"' in message and "\n" not in message

    bad = write(tmp_path, 'prs = "sometimes"')
    with pytest.raises(ConfigError, match=r"shows\.0\.prs:"):
        load_settings(bad)


@pytest.mark.parametrize(
    ("lines", "repo", "prs"),
    [
        ('prs = "off"', "pytorch/pytorch", "off"),
        ('repo = "torvalds/linux"\nprs = "links"', "torvalds/linux", "links"),
        ('repo = "https://github.com/torvalds/linux.git"', "torvalds/linux", "mentions"),
        ("", "pytorch/pytorch", "mentions"),
    ],
)
def test_the_prs_setting_and_a_github_page_as_repo(
    tmp_path: Path, lines: str, repo: str, prs: str
) -> None:
    (show,) = load_settings(write(tmp_path, lines)).shows
    assert (show.repo, show.prs) == (repo, prs)
