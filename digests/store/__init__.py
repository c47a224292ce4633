"""Storage: SQLAlchemy over SQLite (default) or PostgreSQL. SQL rows never leave this package.

``Store.open(url)`` gives a migrated store. One class per aggregate, each over the one
:class:`~digests.store.database.Database` (engine, transactions, migrations, the error
translator): ``shows.py``, ``episodes.py`` (upsert state and intents), ``queries.py``,
``search.py``, ``subscriptions.py``, ``requests.py`` (replays), ``teams.py`` (a workspace
that leaves), ``answers.py`` (shared answers, the subscriptions' version). Beside the
facade, on the same database: the delivery ledger (``ledger.py``, ``locks.py``,
``ledger_writer.py``), ``pr_details.py`` and ``transcripts.py``. Tables are in
``schema.py``, migrations in ``migrations/``. Test fixtures: ``tests/fixtures/store.py``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

import sqlalchemy as sa

from digests.store.answers import AnswersMixin
from digests.store.database import Database
from digests.store.episodes import EpisodesMixin
from digests.store.holds import HoldsMixin
from digests.store.queries import QueriesMixin
from digests.store.requests import RequestsMixin
from digests.store.search import SearchMixin
from digests.store.shows import ShowsMixin
from digests.store.subscriptions import SubscriptionsMixin
from digests.store.teams import TeamsMixin

__all__ = ["Store"]


class Store(
    ShowsMixin,
    EpisodesMixin,
    QueriesMixin,
    SearchMixin,
    SubscriptionsMixin,
    RequestsMixin,
    HoldsMixin,
    TeamsMixin,
    AnswersMixin,
):
    """Shows, episodes, search and subscriptions over one database (see the mixins).

    Every database failure leaves a method as a one-line ``StoreError``.
    """

    def __init__(self, url: str, *, wait: float | None = None) -> None:
        """Create the engine (no connection yet). ``url`` is a SQLAlchemy URL; ``wait``
        bounds how long the database may hold a call up (see ``Database``)."""
        self._db = Database(url, wait=wait)

    @classmethod
    def open(cls, url: str, *, wait: float | None = None) -> Store:
        """Engine + ``migrate()``: the usual way to get a ready store."""
        store = cls(url, wait=wait)
        try:
            store.migrate()
        except BaseException:
            store.close()
            raise
        return store

    @property
    def engine(self) -> sa.Engine:
        """For the delivery ledger (``digests.store.ledger``), which shares this database."""
        return self._db.engine

    def migrate(self) -> None:
        """Alembic ``upgrade head`` (programmatic, migrations shipped in the package)."""
        self._db.migrate()

    def ping(self) -> bool:
        """True when the database answers ``SELECT 1``."""
        return self._db.ping()

    def reading(self, action: str) -> AbstractContextManager[None]:
        """The reads inside share one transaction (see ``Database.reading``): an answer
        that reads several things reads them from one snapshot, in one checkout."""
        return self._db.reading(action)

    def close(self) -> None:
        self._db.close()
