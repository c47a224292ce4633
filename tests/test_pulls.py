"""The pure PR rules: state words, area, ranking, refresh policy (table-tested)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from config.settings import ShowConfig
from digests.models import Episode, PullRequestRef
from digests.pulls import (
    Mention,
    PrRules,
    area,
    key_prs,
    mentions,
    rank,
    ranked_prs,
    refresh_due,
    shown_state,
    with_details,
)
from digests.types import GitHubState, PrDetails

NOW = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
PYTORCH = ShowConfig(name="PyTorch", feed="f.xml", repo="pytorch/pytorch").pr_rules()
PLAIN = ShowConfig(name="Other", feed="f.xml", repo="octo/cat").pr_rules()


def pr(
    number: int = 1,
    state: GitHubState = "open",
    labels: tuple[str, ...] = (),
    *,
    draft: bool = False,
    fetched: datetime | None = NOW,
    missing: bool = False,
) -> PrDetails:
    return PrDetails(
        "pytorch/pytorch",
        number,
        title=f"PR {number}",
        state=state,
        draft=draft,
        labels=labels,
        fetched_at=fetched,
        missing=missing,
    )


@pytest.mark.parametrize(
    ("details", "rules", "expected"),
    [
        (pr(state="open"), PYTORCH, "open"),
        (pr(state="open", draft=True), PYTORCH, "draft"),
        (pr(state="merged"), PYTORCH, "merged"),
        (pr(state="closed"), PYTORCH, "closed"),
        (pr(state="closed", labels=("Merged",)), PYTORCH, "merged"),
        (pr(state="closed", labels=("merged",)), PYTORCH, "merged"),  # labels ignore case
        (pr(state="closed", labels=("Merged", "Reverted")), PYTORCH, "reverted"),
        (pr(state="open", labels=("Merged", "Reverted")), PYTORCH, "reverted"),  # reopened
        (pr(state="merged", labels=("Reverted",)), PYTORCH, "reverted"),
        (pr(state="open", labels=("Merged",)), PYTORCH, "open"),  # reopened, not re-landed
        # Another repository: the labels mean nothing there unless its show says so.
        (pr(state="closed", labels=("Merged",)), PLAIN, "closed"),
        (pr(state="closed", labels=("Reverted",)), PLAIN, "closed"),
        (pr(state="closed", labels=("landed",)), PrRules.of(merged=["Landed"]), "merged"),
        (pr(missing=True), PYTORCH, None),
        (None, PYTORCH, None),
    ],
)
def test_shown_state(details: PrDetails | None, rules: PrRules, expected: str | None) -> None:
    assert shown_state(details, rules) == expected


def test_show_settings_override_the_repository_default() -> None:
    show = ShowConfig(
        name="PyTorch",
        feed="f.xml",
        merged_labels=["Landed"],
        reverted_labels=[],
        label_weights={"topic: docs": 5},
    )
    rules = show.pr_rules()
    assert shown_state(pr(state="closed", labels=("Merged",)), rules) == "closed"
    assert shown_state(pr(state="closed", labels=("Landed", "Reverted")), rules) == "merged"
    assert rules.label_weights == {"topic: docs": 5}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ((), None),
        (("module: nn",), "nn"),
        (("module: nn", "release notes: distributed"), "distributed"),  # release notes first
        (("Release Notes: quantization",), "quantization"),
        (("release notes:", "module: cuda"), "cuda"),  # an empty value is no area
        (("topic: performance", "Merged"), None),
    ],
)
def test_area(labels: tuple[str, ...], expected: str | None) -> None:
    assert area(labels) == expected


M = Mention


@pytest.mark.parametrize(
    ("found", "details", "expected"),
    [
        # Nothing known: the episode's own order, more mentions first.
        ([M(1, 0), M(2, 1), M(3, 2)], {}, [1, 2, 3]),
        ([M(1, 0), M(2, 1, count=3), M(3, 2)], {}, [2, 1, 3]),
        # Being named first is worth one mention: a tie goes to the earlier one.
        ([M(1, 0, count=1), M(2, 1, count=2)], {}, [2, 1]),
        ([M(1, 0, count=2), M(2, 1, count=2)], {}, [1, 2]),
        # Merged and open above closed; unknown ranks with the live ones.
        (
            [M(1, 0), M(2, 1), M(3, 2), M(4, 3)],
            {1: pr(1, "closed"), 2: pr(2, "open"), 3: pr(3, "closed", ("Merged",))},
            [2, 3, 4, 1],
        ),
        # Labels: bc breaking > new features = performance > none > not user facing.
        (
            [M(1, 0), M(2, 1), M(3, 2), M(4, 3), M(5, 4)],
            {
                1: pr(1, labels=("topic: not user facing",)),
                2: pr(2, labels=("topic: performance",)),
                3: pr(3),
                4: pr(4, labels=("topic: bc breaking",)),
                5: pr(5, labels=("topic: new features",)),
            },
            [4, 2, 5, 3, 1],
        ),
        # A closed PR stays below an open one whatever its labels.
        ([M(1, 0), M(2, 1)], {1: pr(1, "closed", ("topic: bc breaking",)), 2: pr(2)}, [2, 1]),
        # No such PR: last.
        ([M(1, 0), M(2, 1)], {1: pr(1, missing=True), 2: pr(2, "closed")}, [2, 1]),
    ],
)
def test_rank(found: list[Mention], details: dict[int, PrDetails], expected: list[int]) -> None:
    assert rank(found, details, PYTORCH) == expected


def episode(numbers: list[int], transcript: str = "") -> Episode:
    return Episode(
        guid="g",
        show="PyTorch",
        title="PyTorch: things",
        headline="things",
        published_at=NOW,
        transcript=transcript,
        pull_requests=tuple(
            PullRequestRef(n, f"https://github.com/pytorch/pytorch/pull/{n}") for n in numbers
        ),
    )


def test_mentions_count_how_often_the_text_names_a_pr() -> None:
    ep = episode([101, 202], "PR 101 lands. Then PR 202, and 202 again (see #202). 1010 is not it.")
    assert mentions(ep) == [M(101, 0, 1), M(202, 1, 3)]


def test_key_prs_at_most_five_ranked() -> None:
    ep = episode(list(range(1, 9)))
    details = {1: pr(1, "closed"), 8: pr(8, labels=("topic: bc breaking",))}
    assert [p.number for p in key_prs(ep, details, PYTORCH)] == [8, 2, 3, 4, 5]


def test_with_details_attaches_ranked_info() -> None:
    ep = episode([5, 6, 7])
    details = {
        ("pytorch/pytorch", 5): pr(5, "closed"),
        ("pytorch/pytorch", 6): pr(6, "closed", ("Merged", "module: nn")),
        ("pytorch/pytorch", 7): pr(7, missing=True),
    }
    enriched = with_details(ep, details, "pytorch/pytorch", PYTORCH)
    six = enriched.pr_info[1]
    assert (six.number, six.title, six.state, six.area, six.rank) == (6, "PR 6", "merged", "nn", 0)
    assert [i.rank for i in enriched.pr_info] == [1, 0, 2]
    assert enriched.pr_info[2].missing and enriched.pr_info[2].title == ""
    assert [pr.number for pr, _ in ranked_prs(enriched)] == [6, 5, 7]
    assert enriched.content_hash() != ep.content_hash()
    assert "pr_info" not in enriched.to_json()


def test_without_details_the_episode_is_unchanged() -> None:
    ep = episode([5])
    assert with_details(ep, {("other/repo", 5): pr(5)}, "pytorch/pytorch", PYTORCH) is ep
    assert [pr.number for pr, info in ranked_prs(ep) if info is None] == [5]


DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("details", "episode_age", "expected"),
    [
        (None, 400 * DAY, True),  # never asked
        (pr(fetched=None), DAY, True),
        (pr(missing=True, fetched=NOW - 30 * DAY), DAY, False),  # no such PR: remembered
        (pr(state="open", fetched=NOW - 59 * timedelta(minutes=1)), DAY, False),  # at most hourly
        (pr(state="open", fetched=NOW - HOUR), DAY, True),
        (pr(state="open", draft=True, fetched=NOW - 2 * HOUR), 13 * DAY, True),
        (pr(state="open", fetched=NOW - 2 * HOUR), 14 * DAY, False),  # the episode is old news
        (
            pr(state="closed", labels=("Merged",), fetched=NOW - 2 * HOUR),
            14 * DAY,
            True,
        ),  # a revert?
        (pr(state="merged", fetched=NOW - 2 * HOUR), 16 * DAY + 23 * HOUR, True),
        (pr(state="merged", fetched=NOW - 2 * HOUR), 17 * DAY, False),
        (pr(state="closed", fetched=NOW - 10 * 60 * timedelta(seconds=1)), DAY, False),
    ],
)
def test_refresh_due(details: PrDetails | None, episode_age: timedelta, expected: bool) -> None:
    assert refresh_due(details, NOW - episode_age, NOW) is expected


@pytest.mark.parametrize("module", ["digests.pulls", "digests.enrich.wire"])
def test_pure_core_loads_no_io_library(module: str) -> None:
    from tests.test_imports import loaded_after

    io = {"sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "apscheduler", "httpx"}
    assert loaded_after(module) & io == set()
