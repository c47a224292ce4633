"""GitHub settings: off unless asked for, GITHUB_API_URL everywhere, labels per show."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import DEFAULT_GITHUB_API_URL, load_settings

SHOWS = """
[[shows]]
name = "PyTorch"
feed = "feed.xml"
[[shows]]
name = "Vision"
feed = "feed.xml"
repo = "pytorch/vision"
merged_labels = ["Landed"]
label_weights = { "topic: docs" = -1 }
"""


def write(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "digestbot.toml"
    path.write_text(extra + SHOWS)
    return path


def test_off_by_default(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path))
    assert not settings.github_enabled
    assert settings.github_base_url == DEFAULT_GITHUB_API_URL


@pytest.mark.parametrize("variable", ["GITHUB_TOKEN", "GITHUB_API_URL"])
def test_on_with_a_token_or_an_api_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "http://127.0.0.1:9/")
    settings = load_settings(write(tmp_path))
    assert settings.github_enabled
    if variable == "GITHUB_API_URL":
        assert settings.github_base_url == "http://127.0.0.1:9"


def test_file_switch_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    assert not load_settings(write(tmp_path, "github = false\n")).github_enabled
    monkeypatch.delenv("GITHUB_TOKEN")
    assert load_settings(write(tmp_path, "github = true\n")).github_enabled


def test_label_rules_per_show(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path))
    pytorch, vision = (s.pr_rules() for s in settings.shows)
    assert pytorch.merged_labels == {"merged"} and pytorch.reverted_labels == {"reverted"}
    assert pytorch.label_weights["topic: bc breaking"] > 0
    assert vision.merged_labels == {"landed"} and vision.reverted_labels == frozenset()
    assert vision.label_weights == {"topic: docs": -1}
