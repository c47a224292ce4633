"""The pure upsert decider (digests.decide.update): stored state + parsed episodes + now →
intents."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from digests.decide.update import decide_upsert, episode_identity, latest_copies
from digests.models import UNKNOWN_DATE, Episode
from digests.types import EpisodeStatus, Redate, StoredEpisode

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
DAY = datetime(2026, 10, 1, 13, 0, tzinfo=UTC)
FIRST_SEEN = datetime(2026, 9, 30, 7, 0, tzinfo=UTC)
US = timedelta(microseconds=1)


def ep(guid: str, when: datetime = DAY, title: str = "", show: str = "PyTorch") -> Episode:
    return Episode(
        guid=guid,
        show=show,
        title=f"{show}: {title or guid}",
        headline=title or guid,
        published_at=when,
    )


def stored(row_id: int, episode: Episode, when: datetime | None = None) -> StoredEpisode:
    """A row stored from ``episode`` (same hash), published at ``when`` (default: its own)."""
    published = episode.published_at if when is None else when
    return StoredEpisode(row_id, episode.content_hash(), published, FIRST_SEEN)


@dataclass(frozen=True)
class Case:
    episodes: list[Episode]
    state: dict[str, StoredEpisode] = field(default_factory=dict)  # by guid, show PyTorch
    statuses: list[EpisodeStatus] = field(default_factory=list)
    dates: list[datetime] = field(default_factory=list)  # of the results, in order
    inserts: list[str] = field(default_factory=list)  # guids
    updates: list[tuple[str, int]] = field(default_factory=list)  # guid, row id
    redates: list[Redate] = field(default_factory=list)


NEW, CHANGED, UNCHANGED = EpisodeStatus.NEW, EpisodeStatus.CHANGED, EpisodeStatus.UNCHANGED

CASES = {
    "new dated episode is inserted as it is": Case(
        [ep("a")], statuses=[NEW], dates=[DAY], inserts=["a"]
    ),
    "same content is unchanged and written nowhere": Case(
        [ep("a")], state={"a": stored(7, ep("a"))}, statuses=[UNCHANGED], dates=[DAY]
    ),
    "other content is an update of the stored row": Case(
        [ep("a", title="Renamed")],
        state={"a": stored(7, ep("a"))},
        statuses=[CHANGED],
        dates=[DAY],
        updates=[("a", 7)],
    ),
    "new undated episodes are dated now, a microsecond apart in feed order": Case(
        [ep("a", UNKNOWN_DATE), ep("b", UNKNOWN_DATE), ep("c")],
        statuses=[NEW, NEW, NEW],
        dates=[NOW, NOW - US, DAY],
        inserts=["a", "b", "c"],
    ),
    "an undated episode keeps the date it was stored with": Case(
        [ep("a", UNKNOWN_DATE)],
        state={"a": stored(7, ep("a", UNKNOWN_DATE), when=DAY)},
        statuses=[UNCHANGED],
        dates=[DAY],
    ),
    "a stored undated row gets its first-seen date": Case(
        [ep("a", UNKNOWN_DATE)],
        state={"a": stored(7, ep("a", UNKNOWN_DATE))},
        statuses=[UNCHANGED],
        dates=[FIRST_SEEN],
        redates=[Redate(7, FIRST_SEEN)],
    ),
    "a changed stored undated row is updated with its first-seen date, not re-dated": Case(
        [ep("a", UNKNOWN_DATE, title="Renamed")],
        state={"a": stored(7, ep("a", UNKNOWN_DATE))},
        statuses=[CHANGED],
        dates=[FIRST_SEEN],
        updates=[("a", 7)],
    ),
    "stored undated items still count in the feed order of new ones": Case(
        [ep("old", UNKNOWN_DATE), ep("new", UNKNOWN_DATE)],
        state={"old": stored(7, ep("old", UNKNOWN_DATE), when=DAY)},
        statuses=[UNCHANGED, NEW],
        dates=[DAY, NOW - US],
        inserts=["new"],
    ),
    "an item dated a month ahead is dated now; one a few hours ahead keeps its date": Case(
        [ep("soon", NOW + timedelta(hours=20)), ep("ahead", NOW + timedelta(days=30))],
        statuses=[NEW, NEW],
        dates=[NOW + timedelta(hours=20), NOW],
        inserts=["soon", "ahead"],
    ),
    "an item stored when first seen keeps that date, edited or not": Case(
        [ep("a", NOW + timedelta(days=30)), ep("b", NOW + timedelta(days=30), title="Edited")],
        state={
            "a": stored(7, ep("a", NOW + timedelta(days=30)), when=FIRST_SEEN),
            "b": stored(8, ep("b", NOW + timedelta(days=30)), when=FIRST_SEEN),
        },
        statuses=[UNCHANGED, CHANGED],
        dates=[FIRST_SEEN, FIRST_SEEN],
        updates=[("b", 8)],
    ),
    "the last copy of a guid wins, in the place of the first": Case(
        [ep("a", title="First"), ep("b"), ep("a", title="Second")],
        statuses=[NEW, NEW],
        dates=[DAY, DAY],
        inserts=["a", "b"],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_decide_upsert(case: Case) -> None:
    state = {("PyTorch", guid): row for guid, row in case.state.items()}
    intents = decide_upsert(state, case.episodes, NOW)

    assert [r.status for r in intents.results] == case.statuses
    assert [r.episode.published_at for r in intents.results] == case.dates
    assert [w.episode.guid for w in intents.inserts] == case.inserts
    assert all(w.id is None for w in intents.inserts)
    assert [(w.episode.guid, w.id) for w in intents.updates] == case.updates
    assert list(intents.redates) == case.redates
    # What is written is what is reported, hashed as the feed had it (not as dated).
    latest = latest_copies(case.episodes)
    for write in (*intents.inserts, *intents.updates):
        assert write.content_hash == latest[episode_identity(write.episode)].content_hash()
        assert write.episode in [r.episode for r in intents.results]


def test_last_copy_wins_with_its_content() -> None:
    intents = decide_upsert({}, [ep("a", title="First"), ep("a", title="Second")], NOW)
    assert [r.episode.headline for r in intents.results] == ["Second"]


def test_identity_drops_nul_so_two_spellings_are_one_episode() -> None:
    batch = [ep("a\x00b", title="First"), ep("ab", title="Second")]
    assert episode_identity(batch[0]) == ("PyTorch", "ab")
    intents = decide_upsert({}, batch, NOW)
    assert [r.episode.headline for r in intents.results] == ["Second"]


def test_same_guid_in_two_shows_is_two_episodes() -> None:
    state = {("Rust", "a"): stored(3, ep("a", show="Rust"))}
    intents = decide_upsert(state, [ep("a"), ep("a", show="Rust")], NOW)
    assert [r.status for r in intents.results] == [NEW, UNCHANGED]


def test_the_decider_loads_no_sql() -> None:
    import subprocess
    import sys

    code = "import sys, digests.decide.update; print('sqlalchemy' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
