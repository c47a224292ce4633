"""Settings: environment over the TOML file over defaults; one clear line for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import DEFAULT_SLACK_API_URL, bundled_path, load_settings
from digests.errors import ConfigError

MINIMAL = """
timezone = "Europe/Berlin"
[[shows]]
name = "PyTorch"
feed = "feeds/pytorch.xml"
repo = "pytorch/pytorch"
[[channels]]
id = "C0123456789"
shows = ["PyTorch"]
keywords = ["inductor"]
recap = false
[schedule]
poll_minutes = 5
recap = "fri 17:30"
sweep_seconds = 12.5
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "DIGESTBOT_CONFIG",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "SLACK_API_URL",
        "DATABASE_URL",
        "PORT",
        "TIMEZONE",
    ):
        monkeypatch.delenv(name, raising=False)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "digestbot.toml"
    path.write_text(text)
    return path


def test_bundled_defaults_run_without_network_or_token() -> None:
    settings = load_settings()
    assert [s.name for s in settings.shows] == ["PyTorch"]
    assert settings.shows[0].repo == "pytorch/pytorch"
    feed = Path(settings.feed_location(settings.shows[0]))
    assert feed.is_file() and feed == bundled_path("example-feed.xml")
    assert settings.slack_bot_token is None
    assert settings.slack_api_url == DEFAULT_SLACK_API_URL
    assert settings.database_url.startswith("sqlite")


def test_file_values_and_relative_feed(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, MINIMAL))
    assert settings.timezone == "Europe/Berlin"
    assert settings.schedule.poll_minutes == 5
    assert (settings.schedule.recap_day, settings.schedule.recap_hour) == ("fri", 17)
    assert settings.schedule.recap_minute == 30
    assert settings.schedule.sweep_seconds == 12.5
    assert settings.channels[0].keywords == ["inductor"]
    assert settings.channels[0].recap is False
    assert settings.feed_location(settings.shows[0]) == str(tmp_path / "feeds/pytorch.xml")


def test_environment_wins_over_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, 'database_url = "sqlite:///from-file.db"\n' + MINIMAL)
    assert load_settings(path).database_url == "sqlite:///from-file.db"
    monkeypatch.setenv("DATABASE_URL", "sqlite:///from-env.db")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.setenv("PORT", "8123")
    settings = load_settings(path)
    assert settings.database_url == "sqlite:///from-env.db"
    assert settings.slack_api_url == "http://127.0.0.1:9/api/"
    assert settings.port == 8123


def test_digestbot_config_env_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIGESTBOT_CONFIG", str(write(tmp_path, MINIMAL)))
    assert load_settings().timezone == "Europe/Berlin"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('timezone = "Mars/Olympus"', "timezone: unknown timezone 'Mars/Olympus'"),
        ("[schedule]\nrecap = 'someday'", "schedule.recap: must look like 'mon 09:00'"),
        ("[schedule]\npoll_minutes = 0", "schedule.poll_minutes:"),
        ("[schedule]\nsweep_seconds = -1", "schedule.sweep_seconds:"),
        ("[[channels]]\nid = 'general'", "channels.0.id:"),
        ("[[shows]]\nname = 'X'\nfeed = 'f.xml'\nrepo = 'not a repo'", "shows.0.repo:"),
        ("colour = 'blue'", "colour: unknown key"),
        ("timezone = ", "is not valid TOML"),
    ],
)
def test_bad_file_is_one_clear_line(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = info.value.format_message()
    assert needle in message
    assert str(path) in message
    assert "\n" not in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
