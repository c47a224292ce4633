"""Full-text search: FTS5 on SQLite, a weighted ``tsvector`` on PostgreSQL.

User input is only ever a list of words: no operator, quote, prefix or column filter of
either engine survives :func:`search_tokens`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import sqlalchemy as sa

from digests.models import Episode
from digests.store.database import Database, clean
from digests.store.episodes import (
    EPISODE_COLUMNS,
    EPISODES_JOIN,
    NEWEST,
    hydrate,
    in_shows,
)
from digests.store.queries import MAX_SEARCH_LIMIT, MAX_SEARCH_TOKENS
from digests.store.schema import (
    PG_SEARCH_COLUMN,
    SQLITE_FTS_TABLE,
    SQLITE_FTS_TEXT_COLUMNS,
    SQLITE_SHOW_KEY,
    episodes,
    shows,
)

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


# A search within some shows on PostgreSQL reads their newest this many episodes first;
# the words in at least RANKED_CANDIDATES of them (a common word) end the search there.
SCOPE_WINDOW = 2 * RANKED_CANDIDATES

Strategy = Literal["archive", "window", "index"]


def _pg_candidates(
    document: sa.ColumnElement[Any],
    tsquery: sa.ColumnElement[Any],
    names: Sequence[str] | None,
    strategy: Strategy,
) -> sa.Subquery:
    """The ids of the newest matches (at most RANKED_CANDIDATES), read one of three ways.

    ``archive`` (no scope): by primary key, which the planner walks backwards for a common
    word (stopping at the bound) and answers from the GIN index for a rare one. Within
    shows it estimates the scope and the words as independent, so a word common in the
    archive but absent from the show had it walk the whole archive (0.5 s at 100k), hence:
    ``window``: the matches among the scope's newest SCOPE_WINDOW episodes (its
    ``(show_id, id)`` index backwards, stopping at the bound); ``index``: the scope's
    matches from the ``(show_id, search_document)`` GIN index, intersected in the index,
    materialized so the planner cannot trade it for a walk again, then the newest.
    """
    match = document.op("@@")(tsquery)
    if strategy == "archive":
        return (
            in_shows(sa.select(episodes.c.id).where(match), names)
            .order_by(episodes.c.id.desc())
            .limit(RANKED_CANDIDATES)
            .subquery("candidates")
        )
    if strategy == "window":
        newest = (
            in_shows(sa.select(episodes.c.id, document.label("document")), names)
            .order_by(episodes.c.id.desc())
            .limit(SCOPE_WINDOW)
            .subquery("newest")
        )
        ids = sa.select(newest.c.id).where(newest.c.document.op("@@")(tsquery))
        return ids.order_by(newest.c.id.desc()).limit(RANKED_CANDIDATES).subquery("candidates")
    matches = in_shows(sa.select(episodes.c.id).where(match), names).cte("matches")
    matches = matches.prefix_with("MATERIALIZED")
    ids = sa.select(matches.c.id).order_by(matches.c.id.desc()).limit(RANKED_CANDIDATES)
    return ids.subquery("candidates")


def _postgres_statement(
    tokens: Sequence[str],
    mode: Mode,
    limit: int,
    names: Sequence[str] | None,
    strategy: Strategy = "archive",
    ranked: bool = True,
) -> sa.Select[Any]:
    """The best ``limit`` of the candidates (newest first when not ``ranked``), each row
    with ``found``: how many candidates there were (a window short of RANKED_CANDIDATES is
    not the whole answer)."""
    # The words rendered into the statement's text, not bound: psycopg prepares a statement
    # run five times, and PostgreSQL's generic plan for it (any words) then guessed a rare
    # word for every search: a bitmap of every match sorted instead of the key walked for
    # the newest 200. The words are only ever ``\w+`` tokens, quoted.
    words = sa.bindparam(
        "words", websearch_query(tokens, mode), type_=sa.Text, literal_execute=True
    )
    tsquery = sa.func.websearch_to_tsquery(sa.literal_column("'english'"), words)
    document: sa.ColumnElement[Any] = sa.literal_column(f"episodes.{PG_SEARCH_COLUMN}")
    candidates = _pg_candidates(document, tsquery, names, strategy)
    # The rank is computed out here, for the candidates only: inside, a sort could have it
    # computed for every match first. The count is over every candidate (before the limit).
    order = (sa.func.ts_rank(document, tsquery).desc(), *NEWEST) if ranked else NEWEST
    return (
        sa.select(*EPISODE_COLUMNS, sa.func.count().over().label("found"))
        .select_from(EPISODES_JOIN.join(candidates, candidates.c.id == episodes.c.id))
        .order_by(*order)
        .limit(limit)
    )


def _postgres_rows(
    conn: sa.Connection,
    tokens: Sequence[str],
    mode: Mode,
    limit: int,
    names: Sequence[str] | None,
    ranked: bool,
) -> Sequence[Any]:
    """A scoped search's window first; the index when the window holds fewer matches."""
    if names is None:
        return conn.execute(_postgres_statement(tokens, mode, limit, None, ranked=ranked)).all()
    window = _postgres_statement(tokens, mode, limit, names, "window", ranked)
    rows = conn.execute(window).all()
    if rows and rows[0].found >= RANKED_CANDIDATES:
        return rows
    return conn.execute(_postgres_statement(tokens, mode, limit, names, "index", ranked)).all()


def sqlite_match(tokens: Sequence[str], mode: Mode, show_ids: Sequence[int] | None) -> str:
    """The FTS5 MATCH string: the words in the text columns only (``show_key`` is a column
    of the index too), within ``show_ids`` when given (each show's key is one token)."""
    words = f"{{{' '.join(SQLITE_FTS_TEXT_COLUMNS)}}} : ({fts5_match(tokens, mode)})"
    if show_ids is None:
        return words
    scope = " OR ".join(f'"{SQLITE_SHOW_KEY}{int(i)}"' for i in show_ids)
    return f"show_key : ({scope}) AND {words}"


def _sqlite_statement(
    tokens: Sequence[str],
    mode: Mode,
    limit: int,
    show_ids: Sequence[int] | None,
    ranked: bool = True,
) -> sa.Select[Any]:
    fts = sa.table(SQLITE_FTS_TABLE, sa.column("rowid"))
    fts_name: sa.ColumnElement[Any] = sa.literal_column(SQLITE_FTS_TABLE)
    # bm25 weights per column (headline, summary, transcript, show_key); lower is better.
    weights: list[sa.ColumnElement[Any]] = [
        sa.literal_column(w) for w in ("10.0", "4.0", "1.0", "0.0")
    ]
    match = fts_name.op("MATCH")(sqlite_match(tokens, mode, show_ids))
    # FTS5 reads a term's matches in rowid order either way, so ``rowid DESC LIMIT n`` stops
    # after n. The shows are part of the MATCH: the index intersects their posting lists
    # with the words' (a show's episodes probed one by one, or every match in the archive
    # checked for its show, grew with the archive). bm25 is computed for the candidates
    # only, but its first call counts every match of each word in the whole archive (its
    # IDF), which grows with the archive: hence not at all when not ranked.
    score = sa.func.bm25(fts_name, *weights) if ranked else sa.null()
    inner = sa.select(fts.c.rowid.label("id"), score.label("score")).select_from(fts).where(match)
    candidates = inner.order_by(fts.c.rowid.desc()).limit(RANKED_CANDIDATES).subquery("candidates")
    order = (candidates.c.score, *NEWEST) if ranked else NEWEST
    return (
        sa.select(*EPISODE_COLUMNS)
        .select_from(EPISODES_JOIN.join(candidates, candidates.c.id == episodes.c.id))
        .order_by(*order)
        .limit(limit)
    )


def _show_ids(conn: sa.Connection, names: Sequence[str] | None) -> list[int] | None:
    if names is None:
        return None
    wanted = list(dict.fromkeys(clean(n) for n in names))
    return list(conn.execute(sa.select(shows.c.id).where(shows.c.name.in_(wanted))).scalars())


Pick = Callable[[list[Episode]], Sequence[Episode]]


def _hydrated(conn: sa.Connection, rows: Sequence[Any], pick: Pick | None) -> list[Episode]:
    """The rows as Episodes; with ``pick``, the ones it picks from all of them read
    without their pull requests (only the picked few are shown)."""
    if pick is None:
        return hydrate(conn, rows)
    pool = hydrate(conn, rows, pull_requests=False)
    row_of = {id(episode): row for episode, row in zip(pool, rows, strict=True)}
    return hydrate(conn, [row_of[id(episode)] for episode in pick(pool)])


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
        ranked: bool = True,
        pick: Pick | None = None,
    ) -> list[Episode]:
        """Full text over headline, summary, transcript (FTS5 / PostgreSQL), ranked.

        The query is only ever a list of words: episodes with all of them first; if none
        has all, episodes with any of them, best match first (not with ``any_words`` off:
        then only those with all of them). With ``ranked`` off, newest first (the newest
        ``limit`` of the newest RANKED_CANDIDATES matches): for a caller that orders them
        itself, without the cost of scores it would not use. ``pick``: given the matches
        (without their pull requests), the ones to return, in its order.
        """
        tokens = search_tokens(query)
        limit = min(limit, MAX_SEARCH_LIMIT)
        if not tokens or limit <= 0:
            return []
        modes: list[Mode] = ["all", "any"] if len(tokens) > 1 and any_words else ["all"]
        postgres = self._db.dialect == "postgresql"
        with self._db.transaction("searching episodes", write=False) as conn:
            show_ids = None if postgres else _show_ids(conn, shows)
            if show_ids == []:
                return []  # none of the shows is known: nothing can match
            for mode in modes:
                if postgres:
                    rows = _postgres_rows(conn, tokens, mode, limit, shows, ranked)
                else:
                    statement = _sqlite_statement(tokens, mode, limit, show_ids, ranked)
                    rows = conn.execute(statement).all()
                if rows:
                    return _hydrated(conn, rows, pick)
        return []
