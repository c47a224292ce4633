"""The shows there are: the config file's, and those added from Slack (`/episodes add-show`).

The config file's stay as they are; the added ones live in the store (``shows`` rows with
``source='slack'``) and are read here each time the list is needed — by the clock before
each look at its jobs, by ``run --once``, by the slash commands — so a show added in one
process is polled by another without a restart.

A feed added from Slack is fetched under :func:`digests.sources.added_feeds.policy` (public
addresses only, every hop) and its own size cap, never the config's ``allow_private``.
"""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as pydantic_dataclass

from config.settings import Settings, ShowConfig
from digests.render.renderer import Renderer
from digests.sources.added_feeds import policy as added_policy
from digests.sources.fetch import PrivatePolicy, private_policy
from digests.store import Store
from digests.store.shows import AddedShow as AddedRow


@pydantic_dataclass(slots=True, config=ConfigDict(extra="forbid"))
class AddedShow(ShowConfig):
    """A show added from Slack, as the pipeline polls it (a ``ShowConfig`` with its team)."""

    team_id: str = ""
    added_by: str = ""


def _config(row: AddedRow) -> AddedShow:
    return AddedShow(
        name=row.name, feed=row.feed, repo=row.repo, team_id=row.team_id, added_by=row.added_by
    )


def added_shows(settings: Settings, store: Store) -> list[AddedShow]:
    """The shows added from Slack, every workspace's (a name the config file also has —
    added before the file named it — is the file's)."""
    rows = store.added_shows()
    if not rows:
        return []
    taken = {s.name.casefold() for s in settings.shows}  # as Settings.show compares names
    return [_config(r) for r in rows if r.name.casefold() not in taken]


def added_show(store: Store, name: str) -> AddedShow | None:
    """The show added from Slack called exactly ``name`` (as a poll job names it): one row
    read, not every added show."""
    row = store.added_show(name)
    return None if row is None else _config(row)


def all_shows(settings: Settings, store: Store) -> list[ShowConfig]:
    """What to poll: the config file's shows, then those added from Slack."""
    return [*settings.shows, *added_shows(settings, store)]


def live(settings: Settings, store: Store) -> Settings:
    """``settings`` with the added shows among ``shows`` (a copy; the file's stay first)."""
    added = added_shows(settings, store)
    if not added:
        return settings
    return settings.model_copy(update={"shows": [*settings.shows, *added]})


def teach_repos(renderer: Renderer, settings: Settings, store: Store) -> None:
    """The added shows' repositories into ``renderer`` (one made from the config file, as
    the clock's recap and daily jobs hold): a PR of another one is ``owner/repo#n``."""
    for show in added_shows(settings, store):
        renderer.repos.setdefault(show.name, show.repo)


def find_show(settings: Settings, store: Store, name: str) -> ShowConfig | None:
    """The show called ``name`` (any case): the config file's, else one added from Slack."""
    config = settings.show(name)
    if config is None:
        wanted = name.casefold()
        config = next(
            (s for s in added_shows(settings, store) if s.name.casefold() == wanted), None
        )
    return config


def show_names(settings: Settings, store: Store) -> list[str]:
    return [s.name for s in all_shows(settings, store)]


def feed_policy(settings: Settings, show: ShowConfig) -> PrivatePolicy:
    """The private-address policy of a show's every fetch (see the module docstring)."""
    location = settings.feed_location(show)
    if isinstance(show, AddedShow):
        return added_policy(location)
    return private_policy(location, show.allow_private)


def feed_cap(settings: Settings, show: ShowConfig) -> int:
    return settings.added_feed_max_bytes if isinstance(show, AddedShow) else settings.max_feed_bytes


__all__ = [
    "AddedShow",
    "added_show",
    "added_shows",
    "all_shows",
    "feed_cap",
    "feed_policy",
    "find_show",
    "live",
    "show_names",
    "teach_repos",
]
