"""Shows and their fetch state (conditional-GET validators, failures, the next poll)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from digests.store.database import Database, aware, chunks
from digests.store.schema import deliveries, episode_versions, shows, subscriptions
from digests.types import FetchState, PlanInputs

_FETCH_COLUMNS = (
    shows.c.etag,
    shows.c.last_modified,
    shows.c.last_polled_at,
    shows.c.last_success_at,
    shows.c.last_error,
    shows.c.failures,
    shows.c.next_poll_at,
    shows.c.failing_notified,
    shows.c.read_note,
)


def _poll_state_query() -> sa.Select[Any]:
    newest = sa.func.max(deliveries.c.id)
    head = sa.select(newest).where(deliveries.c.show == shows.c.name).scalar_subquery()
    unnamed = sa.select(newest).where(deliveries.c.show.is_(None)).scalar_subquery()
    episodes = (
        sa.select(episode_versions.c.version)
        .where(episode_versions.c.show_id == shows.c.id)
        .scalar_subquery()
    )
    return sa.select(
        *_FETCH_COLUMNS,
        shows.c.subscriptions_version,
        shows.c.quiet_plan,
        episodes.label("episodes_version"),
        head.label("ledger_head"),
        unnamed.label("unnamed_head"),
        shows.c.name,
    )


# Every poll runs these statements. Built once, with bound parameters: building a
# statement and computing its cache key each call cost more CPU than running it
# (SQLAlchemy memoizes the key on the statement object).
_POLL_STATE = _poll_state_query().where(shows.c.name == sa.bindparam("show"))
_POLL_STATES = _poll_state_query().where(shows.c.name.in_(sa.bindparam("shows", expanding=True)))
_NAMED = shows.c.name.in_(sa.bindparam("shows", expanding=True))
_DUE = sa.select(shows.c.name, shows.c.next_poll_at).where(
    _NAMED,
    sa.or_(shows.c.next_poll_at.is_(None), shows.c.next_poll_at <= sa.bindparam("horizon")),
)
_KNOWN = sa.select(sa.func.count()).select_from(shows).where(_NAMED)
_NAMES = sa.select(shows.c.name).where(_NAMED)
_FETCH_VALUES = {c.name: sa.bindparam(f"new_{c.name}", type_=c.type) for c in _FETCH_COLUMNS}
_SAVE_FETCH_STATE = (
    sa.update(shows).where(shows.c.name == sa.bindparam("show")).values(_FETCH_VALUES)
)
# Only where no other poll wrote the state since it was read (see save_polled).
_SAVE_POLLED = (
    sa.update(shows)
    .where(shows.c.name == sa.bindparam("show"))
    .where(
        shows.c.last_polled_at.is_not_distinct_from(
            sa.bindparam("read_polled_at", type_=shows.c.last_polled_at.type)
        )
    )
    .values(_FETCH_VALUES)
)


def _fetch_values(state: FetchState) -> dict[str, Any]:
    return {
        "etag": state.etag,
        "last_modified": state.last_modified,
        "last_polled_at": state.last_polled_at,
        "last_success_at": state.last_success_at,
        "last_error": state.last_error,
        "failures": state.failures,
        "next_poll_at": state.next_poll_at,
        "failing_notified": state.failing_notified,
        "read_note": state.read_note,
    }


def _poll_row(row: Any) -> tuple[FetchState, PlanInputs]:
    inputs = PlanInputs(
        subscriptions=row.subscriptions_version,
        episodes=row.episodes_version or 0,
        ledger_head=row.ledger_head or 0,
        unnamed_head=row.unnamed_head or 0,
        quiet_plan=row.quiet_plan,
    )
    return _fetch_state(row), inputs


def _fetch_state(row: Any) -> FetchState:
    return FetchState(
        etag=row.etag,
        last_modified=row.last_modified,
        last_polled_at=row.last_polled_at,
        last_success_at=row.last_success_at,
        last_error=row.last_error,
        failures=row.failures,
        next_poll_at=row.next_poll_at,
        failing_notified=bool(row.failing_notified),
        read_note=row.read_note,
    )


def insert_show(conn: sa.Connection, name: str, **values: Any) -> int:
    values.setdefault("feed", "")
    values.setdefault("repo", "")
    result = conn.execute(sa.insert(shows).values(name=name, **values))
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def show_ids(conn: sa.Connection, names: Iterable[str]) -> dict[str, int]:
    """Ids of ``names``, creating rows for shows not seen before."""
    wanted = sorted(set(names))
    ids = {
        row.name: row.id
        for row in conn.execute(sa.select(shows.c.id, shows.c.name).where(shows.c.name.in_(wanted)))
    }
    for name in wanted:
        if name not in ids:
            ids[name] = insert_show(conn, name)
    return ids


@dataclass(frozen=True)
class AddedShow:
    """A show added from Slack (`/episodes add-show`): its feed, repo, workspace and admin."""

    name: str
    feed: str
    repo: str
    team_id: str
    added_by: str
    added_at: datetime | None = None


AddOutcome = Literal["added", "limit", "duplicate_feed", "duplicate_name"]


@dataclass(frozen=True)
class Removal:
    """What ``remove_added_show`` did: ``removed``, or why not (``config``: the show is the
    config file's; ``other_team``: another workspace added it; ``unknown``), and the
    workspace's channels it unsubscribed."""

    outcome: Literal["removed", "config", "other_team", "unknown"]
    channels: tuple[str, ...] = field(default=())


def feed_key(feed: str) -> str:
    """A feed URL as duplicates are told: no trailing slash, the scheme and host any case."""
    head, sep, rest = feed.strip().partition("://")
    host, slash, path = rest.partition("/")
    return f"{head.lower()}{sep}{host.lower()}{slash}{path}".rstrip("/")


def _added(r: Any) -> AddedShow:
    return AddedShow(r.name, r.feed, r.repo, r.team_id or "", r.added_by or "", r.added_at)


class ShowsMixin:
    """The ``shows`` aggregate of :class:`digests.store.Store`."""

    _db: Database

    def ensure_show(self, name: str, feed: str, repo: str) -> None:
        """Create the show if missing; the configuration wins for its feed and repo."""

        def write(conn: sa.Connection) -> None:
            row = conn.execute(
                sa.select(shows.c.id, shows.c.feed, shows.c.repo).where(shows.c.name == name)
            ).first()
            if row is None:
                insert_show(conn, name, feed=feed, repo=repo)
            elif (row.feed, row.repo) != (feed, repo):
                conn.execute(
                    sa.update(shows).where(shows.c.id == row.id).values(feed=feed, repo=repo)
                )

        self._db.write(f"saving show {name!r}", write)

    def fetch_state(self, show: str) -> FetchState:
        """The show's polling state; a show never polled (or unknown) has the defaults."""
        with self._db.transaction(f"reading fetch state of {show!r}", write=False) as conn:
            row = conn.execute(sa.select(*_FETCH_COLUMNS).where(shows.c.name == show)).first()
        return FetchState() if row is None else _fetch_state(row)

    def poll_state(self, show: str) -> tuple[FetchState, PlanInputs]:
        """The fetch state and what the store says about the show's plan inputs, in one
        statement: their versions, the newest ledger rows (one index probe each) and the key
        of the last plan that found nothing due."""
        with self._db.transaction(f"reading fetch state of {show!r}", write=False) as conn:
            row = conn.execute(_POLL_STATE, {"show": show}).first()
        return (FetchState(), PlanInputs()) if row is None else _poll_row(row)

    def poll_states(self, names: Sequence[str]) -> dict[str, tuple[FetchState, PlanInputs]]:
        """``poll_state`` of every show of ``names`` there is a row for, in one transaction
        (a statement per ``CHUNK`` names): what a cycle reads once, before its polls."""
        wanted = sorted(set(names))
        with self._db.transaction("reading fetch states", write=False) as conn:
            rows = [
                row
                for part in chunks(wanted)
                for row in conn.execute(_POLL_STATES, {"shows": list(part)})
            ]
        return {row.name: _poll_row(row) for row in rows}

    def due_polls(self, names: Sequence[str], horizon: datetime) -> dict[str, datetime | None]:
        """The shows of ``names`` whose next poll comes by ``horizon``, with its time (None:
        never set, or a show with no row yet: due now). Reads the due ones only, and the
        names of a chunk only when some of them have no row."""
        horizon = aware(horizon, "horizon")
        due: dict[str, datetime | None] = {}
        with self._db.transaction("reading the polls due", write=False) as conn:
            for part in chunks(sorted(set(names))):
                params = {"shows": list(part)}
                for name, when in conn.execute(_DUE, {**params, "horizon": horizon}):
                    due[name] = when
                if conn.execute(_KNOWN, params).scalar_one() < len(part):
                    known = set(conn.execute(_NAMES, params).scalars())
                    due.update((name, None) for name in part if name not in known)
        return due

    def mark_quiet(self, show: str, key: str | None) -> None:
        """Remember the key of inputs under which a plan of the show found nothing due
        (None: it found something, plan again next time)."""

        def write(conn: sa.Connection) -> None:
            conn.execute(sa.update(shows).where(shows.c.name == show).values(quiet_plan=key))

        self._db.write(f"saving the plan state of {show!r}", write)

    def save_fetch_state(self, show: str, state: FetchState) -> None:
        values = _fetch_values(state)

        def write(conn: sa.Connection) -> None:
            params = {f"new_{name}": value for name, value in values.items()}
            updated = conn.execute(_SAVE_FETCH_STATE, {"show": show, **params})
            if updated.rowcount == 0:
                insert_show(conn, show, **values)

        self._db.write(f"saving fetch state of {show!r}", write)

    def save_polled(self, polls: Sequence[tuple[str, FetchState, FetchState]]) -> int:
        """Each ``(show, read, new)``: the show's fetch state ``new``, in one transaction,
        unless another poll wrote it since ``read`` was read (its ``last_polled_at`` moved):
        that poll's state is as new as this one's. How many shows were written."""
        params = [
            {
                "show": show,
                "read_polled_at": read.last_polled_at,
                **{f"new_{name}": value for name, value in _fetch_values(new).items()},
            }
            for show, read, new in polls
        ]
        if not params:
            return 0

        def write(conn: sa.Connection) -> int:
            return int(conn.execute(_SAVE_POLLED, params).rowcount)

        return self._db.write("saving fetch states", write)

    # -- shows added from Slack -------------------------------------------------------------

    def added_shows(self, team_id: str | None = None) -> list[AddedShow]:
        """The shows added from Slack (of ``team_id``, or of every workspace), oldest first."""
        stmt = sa.select(shows).where(shows.c.source == "slack").order_by(shows.c.id)
        if team_id is not None:
            stmt = stmt.where(shows.c.team_id == team_id)
        with self._db.transaction("reading shows added from Slack", write=False) as conn:
            return [_added(r) for r in conn.execute(stmt)]

    def added_show(self, name: str) -> AddedShow | None:
        """The show added from Slack called exactly ``name``, if any."""
        stmt = sa.select(shows).where(shows.c.source == "slack", shows.c.name == name)
        with self._db.transaction("reading a show added from Slack", write=False) as conn:
            row = conn.execute(stmt).first()
        return None if row is None else _added(row)

    def add_show(
        self,
        team_id: str,
        name: str,
        feed: str,
        repo: str,
        *,
        added_by: str,
        now: datetime,
        limit: int,
    ) -> AddOutcome:
        """Add a show from Slack, unless the workspace has ``limit`` already, the feed is
        some show's already, or the name is taken (any case): checked and written in one
        transaction, so two admins clicking Add at once cannot both pass the limit."""

        def write(conn: sa.Connection) -> AddOutcome:
            if conn.dialect.name == "postgresql":
                # One adder per workspace at a time (released at commit).
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:k))"),
                             {"k": f"add-show:{team_id}"})  # fmt: skip
            rows = conn.execute(sa.select(shows.c.name, shows.c.feed, shows.c.source,
                                          shows.c.team_id)).all()  # fmt: skip
            if any(feed_key(r.feed) == feed_key(feed) for r in rows if r.feed):
                return "duplicate_feed"
            if any(r.name.casefold() == name.casefold() for r in rows):
                return "duplicate_name"
            if sum(1 for r in rows if r.source == "slack" and r.team_id == team_id) >= limit:
                return "limit"
            insert_show(conn, name, feed=feed, repo=repo, source="slack", team_id=team_id,
                        added_by=added_by, added_at=now)  # fmt: skip
            return "added"

        return self._db.write(f"adding show {name!r}", write)

    def remove_added_show(self, team_id: str, name: str) -> Removal:
        """Remove a show this workspace added from Slack: every subscription to it goes,
        then the show with its episodes. Config-file shows and other workspaces' stay."""

        def write(conn: sa.Connection) -> Removal:
            row = conn.execute(
                sa.select(shows.c.id, shows.c.source, shows.c.team_id).where(shows.c.name == name)
            ).first()
            if row is None:
                return Removal("unknown")
            if row.source != "slack":
                return Removal("config")
            if row.team_id != team_id:
                return Removal("other_team")
            subs = subscriptions.c
            channels = conn.execute(
                sa.select(subs.channel_id)
                .where(subs.show == name, subs.team_id == team_id, subs.unsubscribed_at.is_(None))
                .order_by(subs.channel_id)
            ).scalars()
            found = tuple(str(c) for c in channels)
            conn.execute(sa.delete(subscriptions).where(subs.show == name))
            conn.execute(sa.delete(shows).where(shows.c.id == row.id))
            return Removal("removed", found)

        return self._db.write(f"removing show {name!r}", write)
