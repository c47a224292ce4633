"""What a poll reads and writes about its show besides the feed: the fetch state after it,
and whether an unchanged feed needs planning at all.

A poll starts with one read (``Store.poll_state``: the fetch state and :class:`PlanInputs`)
and ends with one write (the fetch state). Between them, an unchanged feed (a 304, or a 200
whose every episode stored as it was) is planned only when something a plan reads may have
moved since the last plan that found nothing due. What a plan decides over (``bot.plan``)
and what moves it:

- the show's subscriptions (new, filter replaced, paused, resumed, held, released) and its
  episodes and their first-seen dates: versions grown by triggers on every write;
- the ledger's rows: they are never deleted, so a new one moves the show's newest row
  (``ledger_head``, or ``unnamed_head`` for rows that name no show); a row pending or
  posting is offered again by every plan (``Ledger.unfinished_shows``, once per cycle);
  the other states move only with a plan that had something due, or with content that
  changed (a new episodes version) or a subscription resumed (likewise);
- the teams stopped for having no installation, and the settings the decision reads;
- stored PR details, when GitHub is on: not versioned, so with GitHub on a show is planned
  every poll, as before.

The key of those inputs is stored with the show when a plan finds nothing due; the next
poll of an unchanged feed whose inputs have the same key skips planning. Planning again
would find the same nothing: ``digests.decide.decide`` reads no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from bot.ingest import FeedRead
from bot.plan import CANDIDATES
from config.settings import Settings
from digests.decide import CATCH_UP, next_poll_at
from digests.errors import DigestError
from digests.types import FetchState, Notice, PlanInputs

# Grows when what a plan decides over, or how, changes: a key stored by an older release
# then no longer matches, so its first poll plans every show.
RULES = 1


def failed_state(
    settings: Settings, before: FetchState, exc: DigestError, now: datetime
) -> FetchState:
    """The fetch state after a failed poll: counted, backed off (the feed's Retry-After too)."""
    failures = before.failures + 1
    schedule = settings.schedule
    return replace(
        before,
        last_polled_at=now,
        last_error=exc.format_message(),
        failures=failures,
        next_poll_at=next_poll_at(
            now,
            poll_minutes=schedule.poll_minutes,
            failures=failures,
            max_backoff_minutes=schedule.max_backoff_minutes,
            retry_after=getattr(exc, "retry_after", None),
        ),
    )


def polled_state(
    settings: Settings, before: FetchState, read: FeedRead, now: datetime
) -> FetchState:
    """The fetch state after a good poll: new validators, the streak over, the next poll."""
    fetched = read.fetched
    schedule = settings.schedule
    return FetchState(
        etag=fetched.etag or before.etag,
        last_modified=fetched.last_modified or before.last_modified,
        last_polled_at=now,
        last_success_at=now,
        last_error=None,
        failures=0,
        next_poll_at=next_poll_at(
            now,
            poll_minutes=schedule.poll_minutes,
            failures=0,
            max_backoff_minutes=schedule.max_backoff_minutes,
            retry_after=fetched.retry_after,
            max_age=fetched.max_age,
        ),
        # Cleared only once the recovery notice is out (see record_notices).
        failing_notified=before.failing_notified,
    )


def plan_key(settings: Settings, inputs: PlanInputs, stopped_teams: Iterable[str]) -> str:
    """The key of a show's plan inputs as far as a poll can see them without planning."""
    stopped = hashlib.sha256("\n".join(sorted(set(stopped_teams))).encode()).hexdigest()[:16]
    rules = f"{RULES}.{CANDIDATES}.{CATCH_UP}.{settings.backfill}"
    versions = f"{inputs.subscriptions}.{inputs.episodes}"
    return f"{rules}:{versions}:{inputs.ledger_head}:{inputs.unnamed_head}:{stopped}"


class Polled(Protocol):
    """What ``needs_plan`` reads of a poll (``bot.pipeline.PollResult``)."""

    @property
    def show(self) -> str: ...
    @property
    def unchanged(self) -> bool: ...
    @property
    def notice(self) -> Notice | None: ...
    @property
    def inputs(self) -> PlanInputs | None: ...


def needs_plan(
    settings: Settings,
    poll: Polled,
    stopped_teams: Iterable[str],
    unfinished: frozenset[str | None],
) -> bool:
    """Whether a poll's show must go through phases 5–6 (see the module docstring)."""
    inputs = poll.inputs
    if not poll.unchanged or poll.notice is not None or inputs is None:
        return True
    if settings.github_enabled or poll.show in unfinished or None in unfinished:
        return True
    return inputs.quiet_plan != plan_key(settings, inputs, stopped_teams)


def quiet_after(
    settings: Settings, inputs: PlanInputs | None, stopped_teams: Iterable[str], due: int
) -> str | None:
    """The key to store after a plan that found ``due`` deliveries (None: plan again)."""
    if inputs is None or due or settings.github_enabled:
        return None
    return plan_key(settings, inputs, stopped_teams)
