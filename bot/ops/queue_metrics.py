"""The job queue's gauges (``digestbot worker`` on PostgreSQL), read at scrape time:
jobs per queue and state, and how long the oldest job ready to run has waited — the one
to alert on (work arriving faster than the workers finish it)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

import sqlalchemy as sa
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from digests.errors import StoreError
from digests.store.jobs import queue_counts, worker_count

log = logging.getLogger(__name__)


class QueueCollector(Collector):
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def describe(self) -> Iterable[Any]:
        return []  # collected at scrape time only

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily(
            "digestbot_queue_jobs", "Jobs in the queue by queue and state.",
            labels=["queue", "status"],
        )  # fmt: skip
        oldest = GaugeMetricFamily(
            "digestbot_queue_oldest_job_seconds",
            "How long the oldest job ready to run has waited, by queue.",
            labels=["queue"],
        )
        workers = GaugeMetricFamily("digestbot_queue_workers", "Workers with a heartbeat row.")
        try:
            counts = queue_counts(self.engine)
            workers.add_metric([], worker_count(self.engine))
        except StoreError as exc:  # a scrape must answer: the database gauges say the rest
            log.warning("queue gauges: %s", exc)
            return
        for c in counts:
            jobs.add_metric([c.queue, c.status], c.jobs)
            if c.oldest_seconds is not None:
                oldest.add_metric([c.queue], c.oldest_seconds)
        yield jobs
        yield oldest
        yield workers
