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


LONG_NAME = "P" * 201


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        # Columns of the store are this wide; PostgreSQL would refuse the whole poll.
        (
            f"[[shows]]\nname = '{LONG_NAME}'\nfeed = 'f.xml'",
            "shows.0.name: String should have at most 200",
        ),
        (
            f"[[shows]]\nname = 'X'\nfeed = 'f.xml'\nrepo = 'o/{'r' * 199}'",
            "shows.0.repo: String should have at most 200",
        ),
        ("[[channels]]\nid = 'C" + "A" * 32 + "'", "channels.0.id: String should have at most 32"),
        ("[[channels]]\nid = 'C1A'\nteam = '" + "T" * 33 + "'", "channels.0.team:"),
        (f"[[channels]]\nid = 'C1A'\nshows = ['{LONG_NAME}']", "channels.0.shows.0:"),
        ("team_id = '" + "T" * 33 + "'", "team_id: String should have at most 32"),
    ],
)
def test_values_wider_than_the_store_are_refused(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = info.value.format_message()
    assert needle in message and str(path) in message
    assert "\n" not in message


def test_the_widest_allowed_show_name_loads(tmp_path: Path) -> None:
    name = "P" * 200
    settings = load_settings(write(tmp_path, f"[[shows]]\nname = '{name}'\nfeed = 'f.xml'"))
    assert settings.shows[0].name == name


TWO_SHOWS = """
[[shows]]
name = "PyTorch"
feed = "p.xml"
[[shows]]
name = "Rust"
feed = "r.xml"
"""


@pytest.mark.parametrize(
    ("channels", "needle"),
    [
        (
            '[[channels]]\nid = "C1AB"\nshows = ["PyTorch"]\nkeywords = ["inductor"]\n'
            '[[channels]]\nid = "C1AB"\nshows = ["pytorch", "Rust"]\nkeywords = ["fsdp"]\n',
            "channels.1: channel C1AB is listed twice for show pytorch; merge the entries",
        ),
        # No shows means every show: it overlaps any other entry for the channel.
        (
            '[[channels]]\nid = "C1AB"\n[[channels]]\nid = "C1AB"\nshows = ["Rust"]\n',
            "channels.1: channel C1AB is listed twice for show Rust; merge the entries",
        ),
    ],
)
def test_a_channel_listed_twice_for_a_show_is_refused(
    tmp_path: Path, channels: str, needle: str
) -> None:
    path = write(tmp_path, TWO_SHOWS + channels)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = info.value.format_message()
    assert message == f"config file {path}: {needle}"


def test_one_channel_may_have_separate_entries_for_separate_shows(tmp_path: Path) -> None:
    channels = (
        '[[channels]]\nid = "C1AB"\nshows = ["PyTorch"]\nkeywords = ["inductor"]\n'
        '[[channels]]\nid = "C1AB"\nshows = ["Rust"]\n'
        '[[channels]]\nid = "C2AB"\nshows = ["PyTorch"]\n'
    )
    settings = load_settings(write(tmp_path, TWO_SHOWS + channels))
    assert [c.id for c in settings.channels] == ["C1AB", "C1AB", "C2AB"]
