"""deploy/: the alerts (promtool when installed, a schema check always), the dashboard, and
the image recipe — every metric they name exists; the Dockerfile installs as the README says."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.ops.metrics import Metrics, StoreCollector
from bot.ops.queue_metrics import QueueCollector
from digests.store import Store

ROOT = Path(__file__).resolve().parent.parent
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "digestbot.json"
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"
WANTED_ALERTS = {
    "DigestbotFeedFailing",
    "DigestbotDeliveryStuck",
    "DigestbotQueueBehind",
    "DigestbotSlashSlow",
    "DigestbotGitHubBudgetLow",
    "DigestbotNoSuccessfulPoll",
}
# Names in a PromQL expression: metric names, and the functions and keywords around them.
_NAME = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()")
_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "le", "bool"}


def _alert_rules() -> list[dict[str, Any]]:
    return [
        rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]
    ]


def _dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p["targets"]]


def exposed_names(store: Store) -> set[str]:
    """Every sample name a process can expose: its metrics (labelled ones touched once)
    and the store's gauges."""
    metrics = Metrics()
    metrics.registry.register(StoreCollector(store, 900.0, per_show=True))
    if store.engine.dialect.name == "postgresql":  # the queue's: workers, PostgreSQL only
        metrics.registry.register(QueueCollector(store.engine))
    names: set[str] = set()
    for family in metrics.registry.collect():
        suffixes = {
            "counter": ["_total"],
            "histogram": ["_bucket", "_count", "_sum"],
        }.get(family.type, [""])
        names |= {family.name + suffix for suffix in suffixes}
    return names


def _named(expr: str) -> set[str]:
    without_strings = re.sub(r'"[^"]*"', '""', expr)
    without_braces = re.sub(r"\{[^}]*\}", "", without_strings)
    without_ranges = re.sub(r"\[[^\]]*\]", "", without_braces)
    without_groupings = re.sub(r"\b(by|without)\s*\([^)]*\)", "", without_ranges)
    return {
        name
        for name in _NAME.findall(without_groupings)
        if name not in _PROMQL_WORDS and not re.fullmatch(r"[0-9.]+", name)
    }


def test_the_alerts_have_the_shape_prometheus_reads() -> None:
    document = yaml.safe_load(ALERTS.read_text())
    assert set(document) == {"groups"}
    rules = _alert_rules()
    assert {rule["alert"] for rule in rules} == WANTED_ALERTS
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        assert re.fullmatch(r"\d+[smhd]", rule["for"]), rule["for"]
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_alerts() -> None:
    done = subprocess.run(
        ["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(WANTED_ALERTS)} rules found" in done.stdout


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_each_alert_fires_after_its_threshold_and_not_before() -> None:
    """deploy/prometheus/alerts_test.yml: series crossing each threshold; promtool checks the
    alert is quiet before the threshold and its ``for`` have passed, and fires after."""
    test = ALERTS.with_name("alerts_test.yml")
    done = subprocess.run(
        ["promtool", "test", "rules", str(test)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    tested = set(re.findall(r"alertname: (\w+)", test.read_text()))
    assert tested == WANTED_ALERTS


def test_the_alerts_and_the_dashboard_name_only_metrics_that_exist(store: Store) -> None:
    exposed = exposed_names(store)
    exprs = [rule["expr"] for rule in _alert_rules()] + _dashboard_exprs()
    named = set().union(*(_named(e) for e in exprs))
    if store.engine.dialect.name != "postgresql":
        named = {n for n in named if not n.startswith("digestbot_queue_")}
    assert named, "the expressions name metrics"
    assert named <= exposed, sorted(named - exposed)
    # And the parser is not blind: a misspelt name is caught.
    assert not _named("rate(digestbot_deliveries_totl[5m])") <= exposed


def test_the_dashboard_shows_what_the_issue_asks() -> None:
    exprs = " ".join(_dashboard_exprs())
    for metric in (
        "digestbot_feeds_failing",
        "digestbot_deliveries_total",
        "digestbot_ledger_oldest_age_seconds",
        "digestbot_request_ack_duration_seconds_bucket",
        "digestbot_slack_ratelimited_total",
        "digestbot_github_rate_remaining",
    ):
        assert metric in exprs
    assert "histogram_quantile(0.99" in exprs and "histogram_quantile(0.5" in exprs


def _readme_install() -> list[str]:
    """The README's first command, up to the install (what follows runs the bot)."""
    text = (ROOT / "README.md").read_text()
    command = re.search(r"```sh\n(.+?)\n```", text, re.S)
    assert command is not None
    words = shlex.split(command.group(1))
    return words[: words.index(".") + 1]


def _dockerfile_install() -> list[str]:
    runs = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith("RUN ")]
    installs = [line for line in runs if "pip install" in line]
    assert len(installs) == 1, installs
    return shlex.split(installs[0].removeprefix("RUN "))


def test_the_dockerfile_installs_as_the_readme_says() -> None:
    """The same venv and the same editable install of the checkout; the image adds only the
    PostgreSQL driver (the extra) that compose's database needs."""
    readme = _readme_install()
    assert readme[-3:] == ["install", "-e", "."], readme
    assert _dockerfile_install() == [*readme[:-1], ".[postgres]"]


def test_the_image_runs_digestbot_as_a_user_with_a_health_check() -> None:
    text = DOCKERFILE.read_text()
    lines = text.splitlines()
    stages = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert re.fullmatch(r"python:3\.1[1-9]-slim", stages[-1])
    # The build stage (a C compiler for setup.py's mypyc build) runs the same Python: the
    # venv and the extensions it copies over are that version's.
    assert all(stage == stages[-1].removesuffix("-slim") for stage in stages[:-1]), stages
    assert "COPY --from=build /app /app" in lines
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert 'ENTRYPOINT ["digestbot"]' in lines
    health = text[text.index("HEALTHCHECK") :]
    assert "/healthz" in health


def test_compose_runs_web_worker_and_postgres() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert set(services) == {"web", "worker", "postgres"}
    assert services["web"]["command"] == ["serve"]
    assert services["worker"]["command"] == ["worker"]
    assert services["worker"]["environment"]["METRICS_PORT"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgresql+psycopg://")
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
