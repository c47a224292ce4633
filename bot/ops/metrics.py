"""Prometheus metrics: one :class:`Metrics` per process, made by whoever starts the process.

Nothing is registered at import: :class:`Metrics` makes its own ``CollectorRegistry`` (never
prometheus_client's global one), so two apps in one test process, or a web app and a clock
in ``digestbot run``, count into what they were given. The parts that count take a
``Metrics`` (or None, counting nothing), and each hook is one call of a method here.

Label values are bounded: outcomes, reasons and Slack errors come from fixed sets (anything
else is ``other``), never channel, user, team or episode ids. Per-show series only with
``METRICS_PER_SHOW=1`` (small deployments).

Gauges about shared state (feeds failing, the ledger's pending rows) are read from the store
at scrape time (:class:`StoreCollector`): every process of one deployment reports the same
values, so dashboards take ``max`` of them.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from bot.delivery.outbox import AUTH_ERRORS, CHANNEL_ERRORS, SERVER_ERRORS
from digests.store import schema

if TYPE_CHECKING:
    import httpx

    from bot.delivery.items import DeliveryReport
    from bot.jobs.cycle import RunReport
    from digests.store import Store

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Slack's errors that may be labels: the ones the bot tells apart, plus the rate limit.
SLACK_ERRORS = frozenset(
    {"ratelimited", "message_not_found", "cant_update_message", "msg_too_long"}
    | CHANNEL_ERRORS
    | AUTH_ERRORS
    | SERVER_ERRORS
)
# The `/episodes` subcommands a label may name (the first word; anything else is "other").
SUBCOMMANDS = frozenset(
    {
        "recent", "latest", "nearby", "near", "around", "pr", "search", "find", "week",
        "subscribe", "follow", "unsubscribe", "unfollow", "list", "subscriptions", "status",
        "help", "usage", "preview", "pause", "resume", "unpause", "why", "add-show",
        "remove-show",
    }
)  # fmt: skip
EVENT_TYPES = frozenset(
    {
        "app_home_opened", "link_shared", "app_uninstalled", "tokens_revoked",
        "member_joined_channel", "channel_archive", "channel_deleted", "app_mention",
        "message", "member_left_channel", "channel_unarchive", "group_archive",
    }
)  # fmt: skip
ACTION_TYPES = frozenset(
    {"block_actions", "view_submission", "view_closed", "shortcut", "message_action",
     "block_suggestion"}
)  # fmt: skip
POLL_OUTCOMES = ("new", "unchanged_304", "unchanged_200", "failed", "error", "busy")

# Slack waits 3 s for an ack: the buckets are dense below that.
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
FETCH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
FANOUT_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)


def bounded(value: str, allowed: frozenset[str]) -> str:
    return value if value in allowed else "other"


def version() -> str:
    try:
        return metadata.version("digestbot")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare tree
        return "unknown"


class Metrics:
    """Every metric of one process, registered in its own ``registry``."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        engine: str = "",
        per_show: bool = False,
        process: bool = True,
    ) -> None:
        self.registry = r = registry if registry is not None else CollectorRegistry()
        self.per_show = per_show
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        if process:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)
        Gauge(
            "digestbot_build_info",
            "Always 1: the running version, database engine and Python.",
            ["version", "engine", "python"],
            registry=r,
        ).labels(version(), engine or "unknown", platform.python_version()).set(1)
        self._feeds(r)
        self._delivery(r)
        self._requests(r)

    def _feeds(self, r: CollectorRegistry) -> None:
        self.polls = Counter(
            "digestbot_feed_polls",
            "Feed polls by outcome (new, unchanged_304, unchanged_200, failed, error, busy) "
            "and, for failed, the reason.",
            ["outcome", "reason"],
            registry=r,
        )
        self.fetch_seconds = Histogram(
            "digestbot_feed_fetch_duration_seconds",
            "Seconds of one feed HTTP request, headers to the last byte read.",
            buckets=FETCH_BUCKETS,
            registry=r,
        )
        self.fetch_bytes = Counter(
            "digestbot_feed_read_bytes", "Bytes of feed bodies read.", registry=r
        )
        self.episodes = Counter(
            "digestbot_episodes_stored", "Episodes stored, by status (new, changed).",
            ["status"], registry=r,
        )  # fmt: skip
        self.lenient = Counter(
            "digestbot_feed_lenient_reads",
            "Feeds read only by the lenient parser (broken markup recovered).",
            registry=r,
        )
        self.prs_over_budget = Counter(
            "digestbot_pr_mentions_over_budget",
            "PR mentions dropped by the per-episode cap or the per-poll budget.",
            registry=r,
        )
        self.github_calls = Counter(
            "digestbot_github_calls", "GitHub API calls by kind (rest, graphql) and HTTP status.",
            ["kind", "status"], registry=r,
        )  # fmt: skip
        self.github_remaining = Gauge(
            "digestbot_github_rate_remaining",
            "GitHub's X-RateLimit-Remaining of the last answer, by kind.",
            ["kind"], registry=r,
        )  # fmt: skip
        self.github_limit = Gauge(
            "digestbot_github_rate_limit", "GitHub's X-RateLimit-Limit of the last answer.",
            ["kind"], registry=r,
        )  # fmt: skip
        self.prs_awaiting = Gauge(
            "digestbot_github_prs_awaiting_details",
            "PRs the last enrichment asked GitHub about and learnt nothing of yet.",
            registry=r,
        )

    def _delivery(self, r: CollectorRegistry) -> None:
        self.deliveries = Counter(
            "digestbot_deliveries",
            "Deliveries by outcome (posted, updated, recovered, unchanged, failed, deferred, "
            "held, paused, retried) and reason (Slack's error for failed and paused).",
            ["outcome", "reason"],
            registry=r,
        )
        self.fanout_seconds = Histogram(
            "digestbot_fanout_duration_seconds", "Seconds of one deliver() batch.",
            buckets=FANOUT_BUCKETS, registry=r,
        )  # fmt: skip
        self.slack_calls = Counter(
            "digestbot_slack_api_calls",
            "Slack Web API calls of the deliverer by method and error ('' when ok).",
            ["method", "error"],
            registry=r,
        )
        self.slack_ratelimited = Counter(
            "digestbot_slack_ratelimited", "Slack 429 answers, by method.", ["method"],
            registry=r,
        )  # fmt: skip
        self.retry_after_waited = Counter(
            "digestbot_slack_retry_after_waited_seconds",
            "Seconds waited out because Slack said Retry-After.",
            registry=r,
        )

    def _requests(self, r: CollectorRegistry) -> None:
        self.slash = Counter(
            "digestbot_slash_commands", "/episodes by subcommand and outcome (ok, error, replay).",
            ["subcommand", "outcome"], registry=r,
        )  # fmt: skip
        self.ack_seconds = Histogram(
            "digestbot_request_ack_duration_seconds",
            "Seconds from a Slack request's arrival to its HTTP answer, by kind.",
            ["kind"],
            buckets=ACK_BUCKETS,
            registry=r,
        )
        self.events = Counter(
            "digestbot_slack_events", "Events API callbacks by event type.", ["type"], registry=r
        )
        self.actions = Counter(
            "digestbot_slack_actions", "Interactivity payloads by type.", ["type"], registry=r
        )
        self.signature_failures = Counter(
            "digestbot_signature_failures",
            "Requests refused before Bolt: reason malformed (headers, stale timestamp) or "
            "mismatch (the HMAC).",
            ["reason"],
            registry=r,
        )
        self.replays = Counter(
            "digestbot_replays_refused", "Signed requests dropped as replays.", registry=r
        )

    # -- hooks --------------------------------------------------------------------------
    def _at(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, kept: ``labels`` validates and locks on each call (a
        cost paid on every request); label values are bounded, so this stays small."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def fetched(self, seconds: float, size: int) -> None:
        self.fetch_seconds.observe(seconds)
        self.fetch_bytes.inc(size)

    def polled(self, report: RunReport) -> None:
        """A poll cycle's report: polls by outcome, episodes stored, PR mentions dropped."""
        for poll in report.polls:
            if poll.status == "ok":
                outcome = "new" if (poll.added or poll.changed) else "unchanged_200"
            elif poll.status == "not_modified":
                outcome = "unchanged_304"
            else:
                outcome = poll.status
            self._at(self.polls, outcome, poll.reason or "").inc()
            if poll.lenient:
                self.lenient.inc()
            self._at(self.episodes, "new").inc(len(poll.added))
            self._at(self.episodes, "changed").inc(len(poll.changed))
            dropped = sum(
                max(0, e.pull_requests_named - len(e.pull_requests))
                for e in (*poll.added, *poll.changed)
            )
            if dropped:
                self.prs_over_budget.inc(dropped)
        enriched = getattr(report, "enriched", None)
        if enriched is not None:
            self.prs_awaiting.set(max(0, enriched.asked - enriched.learnt - enriched.not_modified))

    def delivered(self, report: DeliveryReport, seconds: float) -> None:
        self.fanout_seconds.observe(seconds)
        d = self.deliveries
        for outcome, idents in (
            ("posted", report.posted),
            ("updated", report.updated),
            ("recovered", report.recovered),
            ("unchanged", report.unchanged),
            ("held", report.held),
            ("deferred", report.deferred),
        ):
            if idents:
                self._at(d, outcome, "").inc(len(idents))
        for error in report.failed.values():
            self._at(d, "failed", bounded(error, SLACK_ERRORS)).inc()
        for error in report.paused.values():
            self._at(d, "paused", bounded(error, SLACK_ERRORS)).inc()
        if report.retries:
            self._at(d, "retried", "").inc(report.retries)

    def slack_call(self, method: str, error: str = "") -> None:
        self._at(self.slack_calls, method, bounded(error, SLACK_ERRORS) if error else "").inc()
        if error == "ratelimited":
            self._at(self.slack_ratelimited, method).inc()

    def github_answer(self, response: httpx.Response) -> None:
        kind = "graphql" if response.request.url.path.endswith("/graphql") else "rest"
        self._at(self.github_calls, kind, str(response.status_code)).inc()
        remaining = _int(response.headers.get("x-ratelimit-remaining"))
        limit = _int(response.headers.get("x-ratelimit-limit"))
        if remaining is not None and limit:
            self._at(self.github_remaining, kind).set(remaining)
            self._at(self.github_limit, kind).set(limit)

    def request(self, body: Mapping[str, Any], seconds: float, outcome: str) -> None:
        """One Slack request answered: its kind's ack latency and what it was."""
        if "command" in body:
            words = str(body.get("text") or "").split()
            sub = bounded(words[0].casefold(), SUBCOMMANDS) if words else "recent"
            self._at(self.slash, sub, outcome).inc()
            kind = "command"
        elif body.get("type") == "event_callback":
            event = body.get("event")
            kind_of = str(event.get("type", "")) if isinstance(event, Mapping) else ""
            self._at(self.events, bounded(kind_of, EVENT_TYPES)).inc()
            kind = "event"
        elif "type" in body:
            self._at(self.actions, bounded(str(body.get("type")), ACTION_TYPES)).inc()
            kind = "action"
        else:
            kind = "other"
        self._at(self.ack_seconds, kind).observe(seconds)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class StoreCollector(Collector):
    """Gauges read from the store at scrape time: feeds failing, the oldest successful
    poll, the ledger's unfinished rows. A store that does not answer gives no samples (and
    a log line), never a failed scrape."""

    def __init__(
        self,
        store: Store,
        poll_seconds: float,
        *,
        per_show: bool = False,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self.per_show = per_show
        self.now = now or (lambda: datetime.now(UTC))

    def describe(self) -> Iterable[Any]:
        return []  # collected at scrape time only

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "digestbot_poll_interval_seconds", "The configured poll interval.",
            value=self.poll_seconds,
        )  # fmt: skip
        started = time.perf_counter()
        try:
            with self.store.engine.connect() as conn:
                shows = conn.execute(
                    sa.select(
                        schema.shows.c.name,
                        schema.shows.c.failures,
                        schema.shows.c.last_success_at,
                        schema.shows.c.added_at,
                    )
                ).all()
                ledger = conn.execute(
                    sa.select(
                        schema.deliveries.c.state,
                        sa.func.count(),
                        sa.func.min(schema.deliveries.c.created_at),
                    )
                    .where(schema.deliveries.c.state.in_(("pending", "posting")))
                    .group_by(schema.deliveries.c.state)
                ).all()
        except sa.exc.SQLAlchemyError as exc:
            log.warning("metrics: the store did not answer: %s", str(exc).splitlines()[0])
            return
        now = self.now()
        yield from self._feeds(shows, now)
        yield from self._ledger(ledger, now)
        yield GaugeMetricFamily(
            "digestbot_store_scrape_seconds", "Seconds the store took to answer this scrape.",
            value=time.perf_counter() - started,
        )  # fmt: skip

    def _feeds(self, shows: Sequence[Any], now: datetime) -> Iterator[GaugeMetricFamily]:
        failing = [s for s in shows if s.failures > 0]
        yield GaugeMetricFamily("digestbot_feeds", "Shows known to the store.", value=len(shows))
        yield GaugeMetricFamily(
            "digestbot_feeds_failing", "Shows whose last poll failed.", value=len(failing)
        )

        def since(row: Any) -> float:
            # A show never polled well counts from when it was added (config shows: never).
            last = row.last_success_at or row.added_at
            return max(0.0, (now - last).total_seconds()) if last is not None else 0.0

        yield GaugeMetricFamily(
            "digestbot_feed_failing_longest_seconds",
            "Seconds since the last success of the show failing longest (0: none failing).",
            value=max((since(s) for s in failing), default=0.0),
        )
        yield GaugeMetricFamily(
            "digestbot_feed_oldest_success_age_seconds",
            "Seconds since the oldest of the shows' last successful polls.",
            value=max((since(s) for s in shows), default=0.0),
        )
        polled = [since(s) for s in shows if s.last_success_at is not None]
        yield GaugeMetricFamily(
            "digestbot_feed_last_success_age_seconds",
            "Seconds since the newest successful poll of any show (0: none yet).",
            value=min(polled, default=0.0),
        )
        if self.per_show:
            family = GaugeMetricFamily(
                "digestbot_feed_failures", "Consecutive failed polls, per show.", labels=["show"]
            )
            for row in shows:
                family.add_metric([row.name], row.failures)
            yield family

    def _ledger(self, rows: Sequence[Any], now: datetime) -> Iterator[GaugeMetricFamily]:
        counts = GaugeMetricFamily(
            "digestbot_ledger_rows", "Ledger rows not done yet, by state.", labels=["state"]
        )
        oldest = GaugeMetricFamily(
            "digestbot_ledger_oldest_age_seconds",
            "Age of the oldest ledger row in the state (0: none).",
            labels=["state"],
        )
        found = {row[0]: row for row in rows}
        for state in ("pending", "posting"):
            row = found.get(state)
            counts.add_metric([state], row[1] if row else 0)
            first = row[2] if row else None
            age = (now - first).total_seconds() if first is not None else 0.0
            oldest.add_metric([state], max(0.0, age))
        yield counts
        yield oldest
