"""The one module that reads settings: environment over the TOML file over defaults."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from digests.decide.daily import DEFAULT_TIME, BadTime, parse_time_of_day
from digests.errors import ConfigError
from digests.pulls import PrRules
from digests.types import MENTIONS, PrMode

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
DEFAULT_GITHUB_API_URL = "https://api.github.com"
DEFAULT_SLACK_AUTHORIZE_URL = "https://slack.com/oauth/v2/authorize"
# What an installed bot may do, and nothing more (the Marketplace asks for least privilege).
DEFAULT_BOT_SCOPES = (
    "chat:write",
    "chat:write.public",
    "channels:join",
    "channels:history",
    "commands",
    "links:read",
    "links:write",
    "users:read",  # `/episodes add-show`: is the person a workspace admin or owner?
)
# Labels that mean merged / reverted where a repository lands PRs by bot (they end closed).
REPO_STATE_LABELS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pytorch/pytorch": (("Merged",), ("Reverted",)),
}
# What moves a PR up (or down) among an episode's key PRs, unless a show says otherwise.
DEFAULT_LABEL_WEIGHTS: dict[str, int] = {
    "topic: bc breaking": 3,
    "topic: new features": 2,
    "topic: performance": 2,
    "topic: not user facing": -3,
}
# Where "PR 123" points when a configured show names no repository.
DEFAULT_REPO = "pytorch/pytorch"
# Public channels (C), private ones and group DMs (G), DMs (D).
CHANNEL_ID_PATTERN = r"^[CGD][A-Z0-9]{2,}$"
# The store's column widths (digests/store/schema.py): a longer value fails on PostgreSQL
# (SQLite does not check), so it is refused here, when the file is read.
MAX_SHOW_NAME = 200
MAX_REPO = 200
MAX_SLACK_ID = 32
_REPO_RE = re.compile(r"[\w.-]+/[\w.-]+")
# The repository's page on GitHub, as people paste it: read as its owner/name.
_GITHUB_PAGE_RE = re.compile(r"(?:https?://)?(?:www\.)?github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?")
_NOT_ON_GITHUB = (
    "{repo!r} is not a GitHub repository (owner/name); for a show whose repository is not on "
    'GitHub or that has none, leave `repo` out and set prs = "off" (or "links": only '
    "github.com/…/pull/N links count)"
)
_RECAP_RE = re.compile(r"^(mon|tue|wed|thu|fri|sat|sun)\s+([01]?\d|2[0-3]):([0-5]\d)$")


def bundled_path(name: str) -> Path:
    """A file shipped inside the ``config`` package (works from a wheel as from a checkout)."""
    return Path(str(resources.files("config").joinpath(name)))


def default_config_path() -> Path:
    return bundled_path("digestbot.toml")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


ShowName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SHOW_NAME)]


# A slotted dataclass, not a model: a worker holds every show of the config file from its
# start, and a model's instance costs about four times the memory.
@pydantic_dataclass(slots=True, config=ConfigDict(extra="forbid"))
class ShowConfig:
    """One show of the config file (``[[shows]]``)."""

    name: ShowName
    feed: str = Field(min_length=1)
    repo: str = Field(default=DEFAULT_REPO, max_length=MAX_REPO)
    # Which PRs its episodes name: "PR 123" and links (pointing into `repo`), only
    # github.com/…/pull/N links ("links"), or none ("off"): for a show whose repository is
    # not on GitHub, where "PR 2 of the series" is a mailing-list patch.
    prs: PrMode = MENTIONS
    # The feed (and where it redirects) may be on a private network. Without it, only a
    # feed that names a private host itself (a file, localhost, a literal private address)
    # may be private, and its redirects must stay on that host or reach public addresses.
    allow_private: bool = False
    # PR labels: None takes the repository's default (REPO_STATE_LABELS, DEFAULT_LABEL_WEIGHTS).
    merged_labels: list[str] | None = None
    reverted_labels: list[str] | None = None
    label_weights: dict[str, int] | None = None

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str) -> str:
        if _REPO_RE.fullmatch(value):
            return value
        if page := _GITHUB_PAGE_RE.fullmatch(value):
            return page.group(1)
        raise ValueError(_NOT_ON_GITHUB.format(repo=value))

    def pr_rules(self) -> PrRules:
        merged, reverted = REPO_STATE_LABELS.get(self.repo.casefold(), ((), ()))
        return PrRules.of(
            merged=merged if self.merged_labels is None else self.merged_labels,
            reverted=reverted if self.reverted_labels is None else self.reverted_labels,
            weights=DEFAULT_LABEL_WEIGHTS if self.label_weights is None else self.label_weights,
        )


class ChannelConfig(_Strict):
    id: str = Field(pattern=CHANNEL_ID_PATTERN, max_length=MAX_SLACK_ID)
    team: str = Field(default="", max_length=MAX_SLACK_ID)
    shows: list[ShowName] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    recap: bool = True


class ScheduleConfig(_Strict):
    poll_minutes: int = Field(default=15, ge=1, le=24 * 60)
    jitter_seconds: int = Field(default=30, ge=0)
    recap: str = "mon 09:00"
    max_backoff_minutes: int = Field(default=24 * 60, ge=1)
    # How often a clock looks for deliveries a dead clock left unfinished.
    sweep_seconds: float = Field(default=30.0, gt=0, le=3600)

    @field_validator("recap")
    @classmethod
    def _recap(cls, value: str) -> str:
        value = value.strip().lower()
        if not _RECAP_RE.match(value):
            raise ValueError("must look like 'mon 09:00' (weekday and 24-hour time)")
        return value

    @property
    def recap_day(self) -> str:
        return self.recap.split()[0]

    @property
    def recap_hour(self) -> int:
        return int(self.recap.split()[1].split(":")[0])

    @property
    def recap_minute(self) -> int:
        return int(self.recap.split()[1].split(":")[1])


class Settings(BaseSettings):
    """Everything the bot reads from the outside world, validated once."""

    model_config = SettingsConfigDict(extra="forbid", env_prefix="", case_sensitive=False)

    # From the TOML file.
    timezone: str = "UTC"
    shows: list[ShowConfig] = Field(default_factory=list)
    channels: list[ChannelConfig] = Field(default_factory=list)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    backfill: int = Field(default=1, ge=0, le=50)
    # The time of day (in `timezone`) of a daily digest when `subscribe … daily` names none.
    daily_at: str = DEFAULT_TIME
    thread_replies: bool = True
    quiet_week: bool = False
    templates_dir: str | None = None
    team_id: str = Field(default="T0LOCAL", min_length=1, max_length=MAX_SLACK_ID)
    max_feed_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    # `/episodes add-show`: who may add and remove shows from Slack besides the workspace's
    # admins and owners (Slack user ids), how many shows one workspace may add, and the
    # size cap of an added show's feed.
    admins: list[Annotated[str, StringConstraints(pattern=r"^[UW][A-Z0-9]{2,}$")]] = Field(
        default_factory=list
    )
    max_added_shows: int = Field(default=10, ge=0, le=1000)
    added_feed_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)

    # From the environment (also allowed in the file, but secrets belong in the environment).
    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL
    # OAuth mode (many workspaces): a client id and secret and no bot token. Each team's
    # token then comes from its installation, stored with the rest of the data.
    slack_client_id: str | None = None
    slack_client_secret: str | None = None
    slack_scopes: list[str] = Field(default_factory=lambda: list(DEFAULT_BOT_SCOPES))
    # Fernet keys (comma-separated, the first seals) for the installations' tokens at rest;
    # unset: stored plain, with a warning at start-up. See docs/security.md.
    digestbot_secret_key: str | None = None
    slack_redirect_uri: str | None = None
    # Where the "Add to Slack" button sends the browser (Slack's own page unless testing).
    slack_authorize_url: str = DEFAULT_SLACK_AUTHORIZE_URL
    # With token rotation on, a token is refreshed this long before it expires (Slack's
    # tokens live 12 hours).
    slack_token_refresh_minutes: int = Field(default=120, ge=1, le=11 * 60)
    # The first wait before retrying a Slack 5xx or a failed connection; each retry doubles
    # it, plus a random jitter of up to twice it (slack_sdk's own backoff at 0.5).
    slack_retry_seconds: float = Field(default=0.5, ge=0, le=30)
    # Seconds between two posts to one channel (Slack allows about one a second).
    slack_post_interval: float = Field(default=1.0, ge=0, le=60)
    database_url: str = "sqlite:///digestbot.sqlite3"
    # `digestbot worker` (PostgreSQL, docs/operating.md): jobs one worker runs at once,
    # feeds it fetches at once, Slack calls it has in flight, posts per second to one
    # workspace (every worker together: a workspace's deliveries run one job at a time),
    # and how long a worker may miss heartbeats before its jobs are run again elsewhere.
    worker_concurrency: int = Field(default=16, ge=1, le=256)
    fetch_concurrency: int = Field(default=16, ge=1, le=256)
    delivery_concurrency: int = Field(default=50, ge=1, le=1000)
    team_posts_per_second: float = Field(default=20.0, ge=0, le=1000)
    worker_stalled_seconds: float = Field(default=60.0, ge=2, le=3600)
    # GitHub: PR titles and states. Asked only when enabled: `github = true` in the file, or
    # GITHUB_TOKEN / GITHUB_API_URL set; `github = false` turns it off whatever is set.
    github: bool | None = None
    github_api_url: str | None = None
    github_token: str | None = None
    # The first wait before retrying a GitHub 5xx or timeout; each retry doubles it.
    github_retry_seconds: float = Field(default=0.5, ge=0, le=30)
    # How long a new digest waits for GitHub before it is posted without PR titles (and
    # edited once they arrive): answered in time, it is posted complete, never "(edited)".
    github_first_post_seconds: float = Field(default=2.0, ge=0, le=10)
    port: int = 3000
    # Operating (docs/operating.md): a listener for /metrics, /healthz and /readyz besides
    # PORT (the clock's only one), per-show metric series (small deployments), log lines.
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_per_show: bool = False
    log_format: Literal["text", "json"] = "text"
    # The HTTP server: a request whose headers are not all in after this many seconds is
    # closed; connections per process at most (default: 4096, or fewer under a lower
    # file-descriptor limit). See bot/server/http_guard.py.
    http_header_timeout: float = Field(default=10.0, gt=0, le=300)
    http_max_connections: int | None = Field(default=None, ge=1)

    # Where the file was read from; relative feed paths resolve against its folder.
    config_path: str = ""

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown timezone {value!r}") from exc
        return value

    @field_validator("daily_at")
    @classmethod
    def _daily_at(cls, value: str) -> str:
        try:
            return parse_time_of_day(value)  # "5pm" → "17:00", as `daily 5pm` reads it
        except BadTime:
            raise ValueError("must be a time of day like '17:00' or '5pm'") from None

    @field_validator("slack_api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"

    @model_validator(mode="after")
    def _channels_once(self) -> Settings:
        # Subscriptions are keyed by (channel, show): a second entry for the same pair would
        # be dropped silently (its keywords and recap lost), so it is refused instead.
        seen: set[tuple[str, str]] = set()
        names = [s.name for s in self.shows]
        for index, channel in enumerate(self.channels):
            for show in channel.shows or names:
                key = (channel.id, show.casefold())
                if key in seen:
                    raise ValueError(
                        f"channels.{index}: channel {channel.id} is listed twice for show "
                        f"{show}; merge the entries"
                    )
                seen.add(key)
        return self

    @model_validator(mode="after")
    def _channel_teams(self) -> Settings:
        # In OAuth mode there is no one workspace a config channel could default to.
        if self.oauth_mode:
            for index, channel in enumerate(self.channels):
                if not channel.team:
                    raise ValueError(
                        f"channels.{index}: channel {channel.id} needs a team (T…) when the "
                        "bot serves many workspaces (SLACK_CLIENT_ID without SLACK_BOT_TOKEN)"
                    )
        return self

    @property
    def oauth_mode(self) -> bool:
        """Many workspaces: client credentials set and no single bot token."""
        return bool(self.slack_client_id and self.slack_client_secret and not self.slack_bot_token)

    @field_validator("github_api_url")
    @classmethod
    def _github_url(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else None

    @property
    def github_enabled(self) -> bool:
        if self.github is not None:
            return self.github
        return bool(self.github_token or self.github_api_url)

    @property
    def github_base_url(self) -> str:
        return self.github_api_url or DEFAULT_GITHUB_API_URL

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def show(self, name: str) -> ShowConfig | None:
        wanted = name.casefold()
        return next((s for s in self.shows if s.name.casefold() == wanted), None)

    def feed_location(self, show: ShowConfig) -> str:
        """The show's feed as a URL or an absolute path (relative paths: next to the file)."""
        feed = show.feed
        if "://" in feed or Path(feed).is_absolute() or not self.config_path:
            return feed
        return str(Path(self.config_path).parent / feed)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment first, then what load_settings passed in (the TOML file), then defaults.
        return (env_settings, init_settings)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror}") from exc


def _describe(error: ValidationError, path: Path) -> str:
    first = error.errors()[0]
    key = ".".join(str(part) for part in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    # A check across keys names them in its message (there is no single key to point at).
    return f"config file {path}: {key}: {msg}" if key else f"config file {path}: {msg}"


def load_settings(path: str | Path | None = None) -> Settings:
    """Read settings once. ``path`` wins over ``DIGESTBOT_CONFIG``, which wins over the default."""
    chosen = Path(path or os.environ.get("DIGESTBOT_CONFIG") or default_config_path())
    data = _read_toml(chosen)
    data["config_path"] = str(chosen.resolve())
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, chosen)) from exc
