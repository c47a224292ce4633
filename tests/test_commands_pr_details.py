"""`/episodes pr N` answers with what GitHub says first: title, state, author."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.listeners.commands.base import Deps
from bot.listeners.commands.episodes import pr
from bot.listeners.commands.model import Pr
from config.settings import Settings, ShowConfig
from digests.models import Episode, PullRequestRef
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.pr_details import PrDetailsStore
from digests.types import PrDetails

NOW = datetime(2026, 10, 6, 12, tzinfo=UTC)
REPO = "pytorch/pytorch"


def texts(message: dict) -> list[str]:
    return [b["text"]["text"] for b in message["blocks"] if b.get("type") == "section"]


@pytest.fixture
def deps(store: Store) -> Deps:
    store.upsert_episodes(
        [
            Episode(
                guid="g1",
                show="PyTorch",
                title="PyTorch: Merges",
                headline="Merges",
                published_at=NOW,
                pull_requests=(
                    PullRequestRef(199720, f"https://github.com/{REPO}/pull/199720", "It lands."),
                    PullRequestRef(5, f"https://github.com/{REPO}/pull/5", "Five."),
                ),
            )
        ],
        NOW,
    )
    PrDetailsStore(store).save(
        [
            PrDetails(
                REPO,
                199720,
                title="Stack-aware <merges>",
                state="closed",
                author="octo",
                labels=("Merged", "release notes: distributed"),
                fetched_at=NOW,
            ),
            PrDetails(REPO, 5, fetched_at=NOW, missing=True),
        ]
    )
    settings = Settings(shows=[ShowConfig(name="PyTorch", feed="f.xml")], github=True)
    return Deps(settings, store, Renderer(), lambda: NOW)


def test_title_state_author_first(deps: Deps) -> None:
    lines = texts(pr(Pr(199720), deps))
    assert lines[1] == "*Stack-aware &lt;merges&gt;* · merged · by octo · distributed"
    assert "It lands." in lines[2]


def test_a_pr_github_does_not_have(deps: Deps) -> None:
    assert texts(pr(Pr(5), deps))[1] == "GitHub has no pull request #5 in pytorch/pytorch."


def test_nothing_from_github_when_it_is_off(deps: Deps) -> None:
    off = Deps(deps.settings.model_copy(update={"github": False}), deps.store, Renderer(), deps.now)
    lines = texts(pr(Pr(199720), off))
    assert len(lines) == 2 and "It lands." in lines[1]
