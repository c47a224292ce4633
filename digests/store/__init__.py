"""Storage: SQLAlchemy over SQLite (default) or PostgreSQL. SQL rows never leave this package.

``Store.open(url)`` gives a migrated store (Alembic migrations ship in
``digests/store/migrations``); tables are in ``schema.py``; the delivery ledger
(``ledger.py``) works on ``Store.engine``. Test fixtures: ``tests/fixtures/store.py``.
"""

from digests.store.store import Store

__all__ = ["Store"]
