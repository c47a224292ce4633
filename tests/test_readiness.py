"""/readyz: 200 only when every check holds, 503 naming the one that does not; /healthz stays
liveness; /metrics keeps answering when the store does not."""

from __future__ import annotations

from typing import Any

import httpx
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from bot.ops.metrics import Metrics, StoreCollector
from bot.ops.readiness import SlackProbe, database_probe, flag_probe
from bot.process import ProcessOps
from bot.server.asgi import ops_app
from digests.store import Store
from tests.fixtures.app import make_settings


async def _get(app: Any, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ops") as client:
        return await client.get(path)


def _checks(response: httpx.Response) -> dict[str, tuple[bool, str]]:
    body = response.json()
    assert body["ready"] is (response.status_code == 200)
    # One line per check (and one to open, one to close the list).
    assert len(response.text.strip().splitlines()) == len(body["checks"]) + 2
    return {c["check"]: (c["ok"], c["detail"]) for c in body["checks"]}


class _Slack:
    def __init__(self) -> None:
        self.calls = 0
        self.refuse = True

    async def auth_test(self) -> None:
        self.calls += 1
        if self.refuse:
            raise RuntimeError("invalid_auth")


async def test_ready_only_when_migrated_slack_accepted_and_scheduler_running(
    store: Store,
) -> None:
    slack = _Slack()
    running = {"up": False}
    probes = {
        "database": database_probe(store),
        "slack": SlackProbe(slack.auth_test),
        "scheduler": flag_probe(lambda: running["up"], "running", "not running"),
    }
    app = ops_app(store, None, probes)

    response = await _get(app, "/readyz")
    assert response.status_code == 503
    checks = _checks(response)
    assert checks["database"][0] is True
    assert checks["slack"] == (False, "auth.test not accepted: RuntimeError")
    assert checks["scheduler"] == (False, "not running")

    slack.refuse, running["up"] = False, True
    response = await _get(app, "/readyz")
    assert response.status_code == 200, response.text
    assert all(ok for ok, _ in _checks(response).values())
    await _get(app, "/readyz")
    assert slack.calls == 2, "once accepted, Slack is not asked again"


async def test_a_database_behind_head_is_not_ready_but_alive(store: Store) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0001'"))
    app = ops_app(store, None, {"database": database_probe(store)})
    response = await _get(app, "/readyz")
    assert response.status_code == 503
    ok, detail = _checks(response)["database"]
    assert not ok and detail.startswith("at revision 0001, head is ")
    assert (await _get(app, "/healthz")).status_code == 200


async def test_metrics_answer_when_the_store_does_not(store: Store) -> None:
    metrics = Metrics(process=False)
    metrics.registry.register(StoreCollector(store, 900.0))
    app = ops_app(store, metrics, None)
    response = await _get(app, "/metrics")
    names = {f.name for f in text_string_to_metric_families(response.text)}
    assert "digestbot_ledger_rows" in names
    store.engine.dispose()
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE deliveries"))
    response = await _get(app, "/metrics")
    assert response.status_code == 200
    names = {f.name for f in text_string_to_metric_families(response.text)}
    assert "digestbot_ledger_rows" not in names and "digestbot_deliveries" in names
    assert (await _get(app, "/readyz")).status_code == 404  # not asked for: no route


async def test_a_clock_whose_token_slack_accepted_at_start_says_so_not_no_token() -> None:
    """The clock's start-up auth.test accepts the token: /readyz must not say there is none."""
    with_token = ProcessOps(make_settings("http://127.0.0.1:9/api/", "xoxb-test"), clock=True)
    with_token.slack_accepted()
    assert with_token.slack is not None
    assert await with_token.slack() == (True, "credentials accepted")
    without = ProcessOps(make_settings("http://127.0.0.1:9/api/", ""), clock=True)
    assert without.slack is not None
    assert await without.slack() == (True, "no bot token")
