"""The weekly recap with PR details: top PRs ranked as the digests rank them, each with its
title and state, "merged this week" where it landed inside the week."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from config.settings import ShowConfig
from digests.models import Episode, PullRequestRef
from digests.pulls import with_details
from digests.recap import aggregate
from digests.render.recap import recap_text, render_recap
from digests.render.renderer import Renderer
from digests.types import PrDetails

REPO = "pytorch/pytorch"
RULES = ShowConfig(name="PyTorch", feed="f.xml").pr_rules()
UTC_ZONE = ZoneInfo("UTC")


def episode(day: int, numbers: list[int]) -> Episode:
    return Episode(
        guid=f"g{day}",
        show="PyTorch",
        title=f"PyTorch: day {day}",
        headline=f"day {day}",
        published_at=datetime(2026, 10, day, 13, tzinfo=UTC),
        pull_requests=tuple(
            PullRequestRef(n, f"https://github.com/{REPO}/pull/{n}", f"It names {n}.")
            for n in numbers
        ),
    )


DETAILS = {
    (REPO, 1): PrDetails(REPO, 1, "Closed one", "closed"),
    (REPO, 2): PrDetails(
        REPO,
        2,
        "Landed by bot",
        "closed",
        labels=("Merged",),
        merged_at=datetime(2026, 10, 6, 9, tzinfo=UTC),
    ),
    (REPO, 3): PrDetails(
        REPO, 3, "Landed last week", "merged", merged_at=datetime(2026, 9, 30, tzinfo=UTC)
    ),
}


def recap_of(episodes: list[Episode]):  # type: ignore[no-untyped-def]
    enriched = [with_details(e, DETAILS, REPO, RULES) for e in episodes]
    return aggregate(enriched, year=2026, week=41, tz=UTC_ZONE, shows=["PyTorch"])


def test_top_prs_ranked_with_titles_and_merged_this_week() -> None:
    # PR 1 is named in two episodes, yet closed: it goes below the merged ones.
    recap = recap_of([episode(5, [1, 2]), episode(6, [1, 3])])
    assert [p.number for p in recap.pull_requests] == [2, 3, 1]
    two, three, one = recap.pull_requests
    assert (two.title, two.state, two.merged_this_week) == ("Landed by bot", "merged", True)
    assert (three.merged_this_week, one.state) == (False, "closed")
    post, _ = render_recap(recap, Renderer()) or ({}, [])
    text = json.dumps(post, ensure_ascii=False)
    assert "|#2> *Landed by bot* · merged this week · Mon" in text
    assert "|#3> *Landed last week* · merged · Tue" in text
    assert "#2 Landed by bot · merged this week" in recap_text(recap)


def test_without_details_the_order_is_as_before() -> None:
    recap = aggregate(
        [episode(5, [1, 2]), episode(6, [1, 3])], year=2026, week=41, tz=UTC_ZONE, shows=[]
    )
    assert [p.number for p in recap.pull_requests] == [1, 2, 3]
    assert all(p.title == "" for p in recap.pull_requests)
