"""Storage: SQLAlchemy over SQLite (default) or PostgreSQL. SQL rows never leave this package.

CONTRACT (implemented by the store work; other modules code against these signatures).
"""

from digests.store.records import (
    FetchState,
    PrMention,
    Subscription,
    UpsertResult,
)
from digests.store.store import Store

__all__ = ["FetchState", "PrMention", "Store", "Subscription", "UpsertResult"]
