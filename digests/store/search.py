"""Full-text search: FTS5 on SQLite, a weighted ``tsvector`` on PostgreSQL.

User input is only ever a list of words: no operator, quote, prefix or column filter of
either engine survives :func:`search_tokens`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

import sqlalchemy as sa

from digests.models import Episode
from digests.store.database import Database
from digests.store.episodes import (
    EPISODE_COLUMNS,
    EPISODES_JOIN,
    NEWEST,
    hydrate,
    in_shows,
)
from digests.store.queries import MAX_SEARCH_LIMIT, MAX_SEARCH_TOKENS
from digests.store.schema import PG_SEARCH_COLUMN, SQLITE_FTS_TABLE, episodes

Mode = Literal["all", "any"]
_WORD = re.compile(r"\w+")


def search_tokens(query: str) -> list[str]:
    """User input as plain words: no operators, quotes, prefixes or column filters survive."""
    return _WORD.findall(query)[:MAX_SEARCH_TOKENS]


def fts5_match(tokens: Sequence[str], mode: Mode = "all") -> str:
    """An FTS5 MATCH string where every token is a quoted string (so ``NEAR`` is a word)."""
    quoted = ['"' + token.replace('"', '""') + '"' for token in tokens]
    return (" " if mode == "all" else " OR ").join(quoted)


def websearch_query(tokens: Sequence[str], mode: Mode = "all") -> str:
    """A ``websearch_to_tsquery`` string of quoted words (``or`` and ``-`` stay words)."""
    quoted = ['"' + token.replace('"', " ") + '"' for token in tokens]
    return (" " if mode == "all" else " or ").join(quoted)


# Matches ranked per search: the most recently stored this many. A word in most of a
# 100k-episode archive would otherwise have every match scored and sorted (half a second and
# more); the engines find the newest matches by row id and stop there. Below this many
# matches the answer is exactly the full ranking (the scores use whole-corpus statistics).
RANKED_CANDIDATES = 200


def _postgres_statement(
    tokens: Sequence[str], mode: Mode, limit: int, names: Sequence[str] | None
) -> sa.Select[Any]:
    tsquery = sa.func.websearch_to_tsquery(
        sa.literal_column("'english'"), sa.literal(websearch_query(tokens, mode))
    )
    document: sa.ColumnElement[Any] = sa.literal_column(f"episodes.{PG_SEARCH_COLUMN}")
    # Newest matches by primary key: with statistics the planner walks the key backwards
    # for a common word (stopping at the bound) and uses the GIN index for a rare one.
    # The rank is computed out here, for the candidates only: inside, a sort could have it
    # computed for every match first.
    candidates = (
        in_shows(sa.select(episodes.c.id).where(document.op("@@")(tsquery)), names)
        .order_by(episodes.c.id.desc())
        .limit(RANKED_CANDIDATES)
        .subquery("candidates")
    )
    return (
        sa.select(*EPISODE_COLUMNS)
        .select_from(EPISODES_JOIN.join(candidates, candidates.c.id == episodes.c.id))
        .order_by(sa.func.ts_rank(document, tsquery).desc(), *NEWEST)
        .limit(limit)
    )


def _sqlite_statement(
    tokens: Sequence[str], mode: Mode, limit: int, names: Sequence[str] | None
) -> sa.Select[Any]:
    fts = sa.table(SQLITE_FTS_TABLE, sa.column("rowid"))
    fts_name: sa.ColumnElement[Any] = sa.literal_column(SQLITE_FTS_TABLE)
    # bm25 weights per column (headline, summary, transcript); lower scores are better.
    rank = sa.func.bm25(
        fts_name, sa.literal_column("10.0"), sa.literal_column("4.0"), sa.literal_column("1.0")
    )
    match = fts_name.op("MATCH")(fts5_match(tokens, mode))
    # FTS5 reads a term's matches in rowid order either way, so ``rowid DESC LIMIT n`` stops
    # after n; bm25 is only computed for those.
    inner = sa.select(fts.c.rowid.label("id"), rank.label("score")).select_from(fts).where(match)
    if names is not None:
        inner = inner.where(fts.c.rowid.in_(in_shows(sa.select(episodes.c.id), names)))
    candidates = inner.order_by(fts.c.rowid.desc()).limit(RANKED_CANDIDATES).subquery("candidates")
    return (
        sa.select(*EPISODE_COLUMNS)
        .select_from(EPISODES_JOIN.join(candidates, candidates.c.id == episodes.c.id))
        .order_by(candidates.c.score, *NEWEST)
        .limit(limit)
    )


class SearchMixin:
    """Full-text search for :class:`digests.store.Store`."""

    _db: Database

    def search(
        self,
        query: str,
        limit: int = 10,
        shows: Sequence[str] | None = None,
        *,
        any_words: bool = True,
    ) -> list[Episode]:
        """Full text over headline, summary, transcript (FTS5 / PostgreSQL), ranked.

        The query is only ever a list of words: episodes with all of them first; if none
        has all, episodes with any of them, best match first (not with ``any_words`` off:
        then only those with all of them).
        """
        tokens = search_tokens(query)
        limit = min(limit, MAX_SEARCH_LIMIT)
        if not tokens or limit <= 0:
            return []
        modes: list[Mode] = ["all", "any"] if len(tokens) > 1 and any_words else ["all"]
        statement = _postgres_statement if self._db.dialect == "postgresql" else _sqlite_statement
        with self._db.transaction("searching episodes", write=False) as conn:
            for mode in modes:
                rows = conn.execute(statement(tokens, mode, limit, shows)).all()
                if rows:
                    return hydrate(conn, rows)
        return []
