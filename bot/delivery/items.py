"""What the deliverer is given (:class:`Delivery`) and hands back (:class:`DeliveryReport`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from digests.types import Ident

Kind = Literal["episode", "recap", "notice", "daily"]


@dataclass(frozen=True)
class Delivery:
    """One message owed to one channel, identified by (team, channel, kind, key)."""

    team_id: str
    channel_id: str
    kind: Kind
    key: str
    message: Mapping[str, Any]
    thread: tuple[Mapping[str, Any], ...] = ()
    # False: thread replies are switched off, so an edit leaves any earlier ones alone
    # (an empty ``thread`` with True means "nothing to add": earlier replies go).
    manage_thread: bool = True
    content_hash: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # An episode's date: what orders one channel's new digests across shows.
    published_at: datetime | None = None

    @property
    def ident(self) -> Ident:
        return (self.team_id, self.channel_id, self.kind, self.key)


@dataclass
class DeliveryReport:
    """What one ``deliver`` call did, item by item (idents) and channel by channel."""

    posted: list[Ident] = field(default_factory=list)
    updated: list[Ident] = field(default_factory=list)
    recovered: list[Ident] = field(default_factory=list)  # found already in Slack
    unchanged: list[Ident] = field(default_factory=list)  # already posted, nothing to do
    busy: list[Ident] = field(default_factory=list)  # another live worker holds it
    failed: dict[Ident, str] = field(default_factory=dict)
    # Of ``failed``: left for a later attempt (transient failure, or cannot tell yet whether
    # it landed), as opposed to refused for good or parked with a paused channel.
    deferred: list[Ident] = field(default_factory=list)
    held: list[Ident] = field(default_factory=list)  # not attempted: channel paused/team stopped
    # Of ``deferred``: held back because the database failed (ledger unreadable/unwritable).
    outage: list[Ident] = field(default_factory=list)
    paused: dict[tuple[str, str], str] = field(default_factory=dict)  # (team, channel) → why
    stopped_teams: dict[str, str] = field(default_factory=dict)  # team → why
    retries: int = 0
    calls: int = 0

    @property
    def fatal(self) -> bool:
        return bool(self.stopped_teams)

    def merge(self, other: DeliveryReport) -> None:
        self.posted += other.posted
        self.updated += other.updated
        self.recovered += other.recovered
        self.unchanged += other.unchanged
        self.busy += other.busy
        self.failed.update(other.failed)
        self.deferred += other.deferred
        self.held += other.held
        self.outage += other.outage
        self.paused.update(other.paused)
        self.stopped_teams.update(other.stopped_teams)
        self.retries += other.retries
        self.calls += other.calls
