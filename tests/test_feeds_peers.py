"""Peers' suites as the measure (``tests.peer_parity`` says what is compared and how);
the figures are printed at the end of the run, and by ``python -m tests.feeds_corpus``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from tests.feeds_corpus import corpus_dir
from tests.peer_parity import (
    FEEDPARSER,
    PODCASTPARSER,
    PODCASTPARSER_DIFFERENT,
    expected_fields,
    feedparser_figures,
    match,
    our_fields,
    podcastparser_figures,
)


@dataclass
class Figures:
    lines: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    found = Figures()
    yield found
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    # Past the output capture: the figures are the point.
    with capture.global_and_fixture_disabled():
        for line in found.lines.values():
            if reporter is not None:
                reporter.write_line(line)
            else:
                print(line)


# ---------------------------------------------------------------- podcastparser


def test_podcastparser_expectations_all_hold(figures: Figures) -> None:
    if not PODCASTPARSER:
        pytest.skip(f"podcastparser's tests are not in {corpus_dir(package='podcastparser')}")
    figures.lines["podcastparser"], broken = podcastparser_figures()
    assert broken == []


def test_every_deliberate_podcastparser_difference_is_still_one() -> None:
    if not PODCASTPARSER:
        pytest.skip("podcastparser's tests are not fetched")
    folder = PODCASTPARSER[0].parent
    for (name, what), reason in PODCASTPARSER_DIFFERENT.items():
        expected = json.loads((folder / name).with_suffix(".json").read_text())
        parsed = parse_bytes((folder / name).read_bytes(), "https://tests/data/" + name)
        ours = list(build_episodes(parsed, "Show", "pytorch/pytorch"))
        (episode,) = expected["episodes"]
        assert our_fields(match(episode, 0, ours))[what] != expected_fields(episode)[what], reason


# ---------------------------------------------------------------- feedparser


def test_feedparser_corpus_entry_parity(figures: Figures) -> None:
    if not FEEDPARSER:
        pytest.skip(f"feedparser's corpus is not in {corpus_dir()}")
    figures.lines["feedparser"], share, differing = feedparser_figures()
    assert share >= 0.98, differing
