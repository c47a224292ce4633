"""digests.decide.deliveries.ledger_step: what a ledger row calls for, the one rule both the planner
(``decide``) and the deliverer ask."""

from __future__ import annotations

import pytest

from digests.decide.deliveries import _action, ledger_step
from digests.types import Action, LedgerEntry, LedgerState, RowStep

S = LedgerState


@pytest.mark.parametrize(
    ("state", "stored", "now", "has_ts", "live", "step"),
    [
        (S.POSTED, "h1", "h1", True, False, RowStep.NOTHING),
        (S.POSTED, "h1", "h2", True, False, RowStep.EDIT),
        (S.POSTED, "h1", "h2", False, False, RowStep.NOTHING),  # no ts to edit
        (S.POSTED, "h1", "", True, False, RowStep.NOTHING),  # never edited (recap, notice)
        (S.FAILED, "h1", "h1", True, False, RowStep.REFUSED),
        (S.FAILED, "", "", True, False, RowStep.REFUSED),
        (S.FAILED, "h1", "h2", True, False, RowStep.POST),
        (S.POSTING, "h1", "h1", False, True, RowStep.BUSY),
        (S.POSTING, "h1", "h1", False, False, RowStep.RECOVER),
        (S.POSTING, "h1", "h2", True, False, RowStep.RECOVER),
        (S.PENDING, "h1", "h1", False, False, RowStep.POST),
        (S.PAUSED, "h1", "h2", False, False, RowStep.POST),
    ],
)
def test_ledger_step(
    state: LedgerState, stored: str, now: str, has_ts: bool, live: bool, step: RowStep
) -> None:
    entry = LedgerEntry(state, stored)
    assert ledger_step(entry, now, has_ts=has_ts, held_by_live_owner=live) is step


@pytest.mark.parametrize("state", list(LedgerState))
@pytest.mark.parametrize("changed", [False, True])
def test_planning_follows_the_same_rule(state: LedgerState, changed: bool) -> None:
    entry = LedgerEntry(state, "h1")
    now = "h2" if changed else "h1"
    expected = {
        RowStep.POST: Action.POST,
        RowStep.RECOVER: Action.POST,
        RowStep.EDIT: Action.UPDATE,
    }.get(ledger_step(entry, now))
    assert _action(entry, now) == expected
    assert _action(None, now) is Action.POST
