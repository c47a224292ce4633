"""Follows by DM: who is told of a new episode or of a PR's new state, once, through the
ledger; the store of follows on SQLite and PostgreSQL; a real poll posting to the Slack
fake (and the GitHub fake changing a PR's state between refreshes)."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from bot.jobs.sweeper import Sweeper
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.decide.follows import StateHit, by_person, episode_hits, state_hits
from digests.models import Episode, PullRequestRef
from digests.store import Store
from digests.store.follows import Added, FollowStore
from digests.types import Follow, FollowKind
from tests.feedserver import FeedServer
from tests.fixtures.app import TEAM as TEAM_APP
from tests.fixtures.app import USER, RunningApp, assert_valid_view, wait_for
from tests.fixtures.control import START, Rig
from tests.fixtures.delivery import rss, rss_item
from tests.fixtures.ledger import seed_row
from tests.githubfake import GitHubFake
from tests.slackfake import SlackFake
from tests.test_delivery_edits import CHANNEL, NOW, TEAM

REPO = "pytorch/pytorch"
PR = "https://github.com/pytorch/pytorch/pull/"
ADA, GRACE = "U0ADA", "U0GRACE"


def follow(
    fid: int, kind: FollowKind, target: str, team: str = TEAM, last: str | None = None
) -> Follow:
    return Follow(fid, team, ADA, kind, target, NOW, last)


def episode(guid: str, text: str, *prs: int, show: str = "PyTorch") -> Episode:
    return Episode(
        guid=guid,
        show=show,
        title=text,
        headline=text,
        summary=text,
        published_at=NOW,
        pull_requests=tuple(PullRequestRef(n, PR + str(n), f"PR {n} lands.") for n in prs),
    )


def test_a_new_episode_hits_the_follows_of_its_prs_and_words_where_the_show_is_followed() -> None:
    ep = episode("e1", "FSDP2 gets faster", 199720)
    other = episode("e2", "Inductor news", 5, show="JAX")
    follows = [
        follow(1, FollowKind.PR, PR + "199720"),
        follow(2, FollowKind.PR, PR + "199721"),
        follow(3, FollowKind.WORDS, "fsdp2"),
        follow(4, FollowKind.WORDS, '"flex attention"'),
        follow(5, FollowKind.PR, PR + "199720", team="T0ELSEWHERE"),  # sees no PyTorch
    ]
    hits = episode_hits([ep, other], follows, lambda team, show: (team, show) == (TEAM, "PyTorch"))
    assert [(h.follow.id, h.episode.guid, h.pr and h.pr.number) for h in hits] == [
        (1, "e1", 199720),
        (3, "e1", None),
    ]
    # Both are Ada's and about one episode: one DM, under one key.
    assert [[h.follow.id for h in group] for group in by_person(hits)] == [[1, 3]]


def test_a_pr_state_is_told_once_per_change_and_only_when_final() -> None:
    f = follow(1, FollowKind.PR, PR + "1")
    told = follow(2, FollowKind.PR, PR + "2", last="merged")
    states = {PR + "1": "merged", PR + "2": "merged", PR + "3": "open"}
    hits = state_hits([f, told, follow(3, FollowKind.PR, PR + "3")], states)
    assert [(h.follow.id, h.state) for h in hits] == [(1, "merged")]
    assert hits[0].key == "follow:1:state:merged"
    reverted = state_hits([told], {PR + "2": "reverted"})
    assert [(h.follow.id, h.state) for h in reverted] == [(2, "reverted")]


def test_the_store_keeps_follows_within_the_limit(store: Store) -> None:
    follows = FollowStore(store)
    assert follows.add(TEAM, ADA, FollowKind.PR, PR + "1", NOW) is Added.ADDED
    assert follows.add(TEAM, ADA, FollowKind.PR, PR + "1", NOW) is Added.ALREADY
    assert follows.add(TEAM, ADA, FollowKind.WORDS, "fsdp", NOW, limit=2) is Added.ADDED
    assert follows.add(TEAM, ADA, FollowKind.WORDS, "dtensor", NOW, limit=2) is Added.FULL
    assert follows.add(TEAM, GRACE, FollowKind.PR, PR + "1", NOW) is Added.ADDED
    assert [f.target for f in follows.of_user(TEAM, ADA)] == [PR + "1", "fsdp"]
    assert {f.user_id for f in follows.for_prs([PR + "1", PR + "9"])} == {ADA, GRACE}
    assert [f.target for f in follows.of_words()] == ["fsdp"]
    first = follows.of_user(TEAM, ADA)[0]
    follows.set_states([(first.id, "merged")])
    assert follows.of_user(TEAM, ADA)[0].last_state == "merged"
    assert follows.remove(TEAM, ADA, FollowKind.WORDS, "fsdp")
    assert not follows.remove(TEAM, ADA, FollowKind.WORDS, "fsdp")
    assert follows.forget_user(TEAM, GRACE) == 1
    store.forget_team(TEAM)  # an uninstall takes the workspace's follows with it
    assert follows.of_user(TEAM, ADA) == [] and follows.for_prs([PR + "1"]) == []


def settings_for(url: str, github: GitHubFake | None = None) -> Settings:
    extra = {"github_api_url": github.api_url, "github_token": github.token} if github else {}
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo=REPO)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
def subscribed(store: Store, feed_server: FeedServer) -> str:
    store.ensure_show("PyTorch", "", REPO)
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    return feed_server.route("/feed.xml", rss(rss_item(5)))


def dms(slack: SlackFake, user: str) -> list[str]:
    return [m["text"] for m in slack.messages(user)]


async def test_a_followed_pr_named_in_a_new_episode_is_told_once_by_dm(
    store: Store,
    subscribed: str,
    feed_server: FeedServer,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    follows = FollowStore(store)
    follows.add(TEAM, ADA, FollowKind.PR, PR + "199605", NOW)  # rss_item(5) names 199605
    follows.add(TEAM, ADA, FollowKind.PR, PR + "199705", NOW)  # and 199705: still one DM
    follows.add(TEAM, GRACE, FollowKind.WORDS, "briefing", NOW)
    follows.add("T0ELSEWHERE", "U0OTHER", FollowKind.PR, PR + "199605", NOW)
    settings = settings_for(subscribed)
    await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    (ada,) = dms(slack_fake, ADA)
    assert "pytorch/pytorch#199605" in ada and "pytorch/pytorch#199705" in ada
    assert "PyTorch" in ada
    (grace,) = dms(slack_fake, GRACE)
    assert "`briefing`" in grace
    assert slack_fake.messages("U0OTHER") == []  # that workspace follows no PyTorch
    # The next poll, and the next episode that does not name it: nothing more for Ada.
    feed_server.route("/feed.xml", rss(rss_item(6, prs="Nothing named today."), rss_item(5)))
    await run_once(
        settings, store, deliverer.outbox, http, NOW + timedelta(minutes=15), deliverer=deliverer
    )
    assert len(dms(slack_fake, ADA)) == 1
    assert len(dms(slack_fake, GRACE)) == 2  # "Daily Briefing 6" mentions it again


async def test_a_followed_pr_that_merges_is_told_once(
    store: Store,
    subscribed: str,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    github_fake.add_pr(REPO, 199605, title="Fix the all-gather", state="open")
    FollowStore(store).add(TEAM, ADA, FollowKind.PR, PR + "199605", NOW, last_state="open")
    settings = settings_for(subscribed, github_fake)
    await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert len(dms(slack_fake, ADA)) == 1  # the new episode, not a state
    github_fake.add_pr(REPO, 199605, title="Fix the all-gather", state="merged")
    for minutes in (75, 150):  # past the hourly refresh of an open PR, twice
        await run_once(
            settings,
            store,
            deliverer.outbox,
            http,
            NOW + timedelta(minutes=minutes),
            deliverer=deliverer,
        )
    told = dms(slack_fake, ADA)
    assert len(told) == 2 and "was *merged*: *Fix the all-gather*" in told[1]


async def test_follow_unfollow_and_following_through_signed_commands(rig: Rig) -> None:
    assert rig.slash("subscribe PyTorch")
    (added,) = rig.slash("follow 199602")
    link = "<https://github.com/pytorch/pytorch/pull/199602|pytorch/pytorch#199602>"
    assert f"Following {link}" in added
    assert "merged, closed or reverted" in added
    assert "Following `fsdp`" in rig.slash("follow fsdp")[0]
    assert 'Following `"flex attention"`' in rig.slash('follow "flex attention"')[0]
    assert "already follow" in rig.slash("follow #199602")[0]
    listed = rig.slash("following")
    assert listed[0].startswith("*You follow*") and listed[1].count("•") == 3
    # Refused, with the usage: nothing to follow, and a show's name (that is `subscribe`).
    assert "Follow what?" in rig.slash("follow")[0]
    assert "needs a word to look for" in rig.slash("follow -rocm")[0]
    refused = rig.slash("follow PyTorch")
    assert "PyTorch is a show" in refused[0]
    assert any(r.startswith("Usage: `/episodes follow &lt;PR | words&gt;`") for r in refused)

    rig.serve(2, 1)  # day 2 names 199602 and 199702
    await rig.poll(START + timedelta(hours=1))
    (dm,) = [m["text"] for m in rig.fake.messages(USER)]
    assert "pytorch/pytorch#199602" in dm and "Daily Briefing 2" in dm
    await rig.poll(START + timedelta(hours=2))
    assert len(rig.fake.messages(USER)) == 1

    assert "no longer follow" in rig.slash("unfollow 199602")[0]
    gone = rig.slash("unfollow 199602")
    assert "do not follow" in gone[0] and gone[1].count("•") == 2
    assert FollowStore(rig.store).of_user(rig.settings.team_id or "", USER)[0].target == "fsdp"


def test_app_home_lists_what_the_viewer_follows(slack_app: RunningApp) -> None:
    assert slack_app.sender.slash("follow fsdp").status_code == 200
    slack_app.store.subscribe(TEAM_APP, "C0OTHER001", "PyTorch")
    FollowStore(slack_app.store).add(TEAM_APP, "U0SOMEONE", FollowKind.WORDS, "rocm", NOW)
    slack_app.sender.event({"type": "app_home_opened", "user": USER, "tab": "home"})
    view = wait_for(lambda: slack_app.fake.home_view(USER))
    assert_valid_view(view)
    text = json.dumps(view["blocks"], ensure_ascii=False)
    assert "*Following (a direct message to you when a new episode names one)*" in text
    assert "`fsdp`" in text and "rocm" not in text  # someone else's follow stays theirs


def test_a_deactivated_user_loses_their_follows(slack_app: RunningApp) -> None:
    assert slack_app.sender.slash("follow fsdp").status_code == 200
    follows = FollowStore(slack_app.store)
    follows.add(TEAM_APP, "U0STAYS", FollowKind.WORDS, "rocm", NOW)
    active = {"id": USER, "team_id": TEAM_APP, "deleted": False}
    slack_app.sender.event({"type": "user_change", "user": active})
    slack_app.settle()
    assert len(follows.of_user(TEAM_APP, USER)) == 1
    slack_app.sender.event({"type": "user_change", "user": {**active, "deleted": True}})
    wait_for(lambda: follows.of_user(TEAM_APP, USER) == [] or None)
    assert [f.user_id for f in follows.of_words()] == ["U0STAYS"]


async def test_the_sweep_finishes_the_follow_dms_a_dead_clock_left(
    store: Store,
    subscribed: str,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    settings = settings_for(subscribed)
    await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    (episode,) = store.recent(1, ["PyTorch"])
    # A clock that planned Ada's DM for this episode (and a merge) died before sending them.
    FollowStore(store).add(TEAM, ADA, FollowKind.PR, PR + "199605", NOW)
    (ada,) = FollowStore(store).of_user(TEAM, ADA)
    hit = episode_hits([episode], [ada], lambda team, show: True)[0]
    seed_row(store, ADA, key=hit.key, team=TEAM, kind="notice", state="pending")
    seed_row(store, ADA, key=StateHit(ada, "merged").key, team=TEAM, kind="notice")
    sweeper = Sweeper(settings, store, deliverer, clock=lambda: NOW + timedelta(minutes=5))
    report = await sweeper.sweep()
    assert sorted(i[3] for i in report.posted) == sorted([hit.key, f"follow:{ada.id}:state:merged"])
    told = dms(slack_fake, ADA)
    assert len(told) == 2 and any("pytorch/pytorch#199605" in t for t in told)
    assert (await sweeper.sweep()).posted == [] and len(dms(slack_fake, ADA)) == 2
