"""The names the poll pipeline had before it was written down phase by phase.

``bot.pipeline`` holds the phases and ``run_once``; ``bot.sweeper`` the recovery sweep.
Imported from here by the scheduler and older tests.
"""

from bot.pipeline import (
    FETCH_CONCURRENCY,
    PG_CONCURRENCY,
    PollResult,
    RunReport,
    poll_limit,
    poll_show,
    print_report,
    run_once,
)
from bot.plan import CANDIDATES, in_date_order, notice_deliveries
from bot.sweeper import Sweeper

__all__ = [
    "CANDIDATES",
    "FETCH_CONCURRENCY",
    "PG_CONCURRENCY",
    "PollResult",
    "RunReport",
    "Sweeper",
    "in_date_order",
    "notice_deliveries",
    "poll_limit",
    "poll_show",
    "print_report",
    "run_once",
]
