"""Wiring: builds the real parts from settings. The only place that knows all of them."""

from __future__ import annotations

import gc
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from config.settings import Settings
from digests.errors import ConfigError, SlackError

if TYPE_CHECKING:
    from bot.delivery.outbox import Outbox
    from digests.store import Store

log = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


# The web app's store: a database that does not answer within this many seconds fails
# the request (the reply says so) while Slack still waits for it (3 s).
REQUEST_DB_WAIT = 1.0


def open_store(settings: Settings, *, wait: float | None = None) -> Store:
    """The store, migrated, with every configured show known to it; ``wait``: see
    :class:`digests.store.database.Database` (None for batch work)."""
    # Imported here: a process that fails before it opens the store never loads it.
    from digests.store import Store

    store = Store.open(settings.database_url, wait=wait)
    for show in settings.shows:
        store.ensure_show(show.name, settings.feed_location(show), show.repo)
    return store


async def tokens_at_rest(settings: Settings) -> None:
    """OAuth mode, once the store is migrated: every stored Slack token sealed with the
    first key of DIGESTBOT_SECRET_KEY (plain ones, and ones an older key sealed), or a
    warning that they are stored plain."""
    if not settings.oauth_mode:
        return
    if not settings.digestbot_secret_key:
        log.warning(
            "DIGESTBOT_SECRET_KEY is not set: Slack bot and refresh tokens are stored "
            "unencrypted in the database"
        )
        return
    from digests.store.installations import Installations

    installations = Installations(
        settings.database_url, settings.slack_client_id or "", settings.digestbot_secret_key
    )
    try:
        count = await installations.reseal()
    finally:
        await installations.close()
    if count:
        log.warning("%d stored Slack tokens sealed with DIGESTBOT_SECRET_KEY's first key", count)


def settle_heap() -> None:
    """After startup, before the first request: what startup built (modules, the app, the
    store's engine) is kept for the process's life, so the collector stops walking it;
    and a young collection waits for more new objects than one answer keeps alive.

    Every answer leaves a few thousand objects promoted to the oldest generation, and
    now and then one sets off a full collection of the whole heap, startup's objects
    included: frozen, a full collection walks only what requests made. An answer holds
    some thousands of objects at once (a week's episodes, their PRs, the rendered lines):
    at Python's default threshold (700) each is walked by several young collections
    before it dies; at 10,000 it mostly dies unwalked. (Numbers: docs/benchmarks.md.)
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNG_OBJECTS, older, oldest)


# New objects (net of freed ones) before a young collection; Python's default is 700.
_YOUNG_OBJECTS = 10_000


def sync_config_channels(
    settings: Settings, store: Store, team_id: str, *, only_team: str | None = None
) -> int:
    """Subscribe the channels named in the config file (``only_team``: those of that team);
    returns how many were added.

    An existing subscription is left alone so a paused one (archived channel, say) stays
    paused across restarts instead of failing again on every start, and one a user
    unsubscribed by slash command (a tombstone) stays unsubscribed. One stored under the
    show's name in another case (as syncs before December 2026 stored ``shows =
    ["triton"]``; the poll never read it) is repaired first (``_repair_case``).
    """
    added = 0
    all_shows = [s.name for s in settings.shows]
    for channel in settings.channels:
        for named in channel.shows or all_shows:
            config = settings.show(named)
            if config is None:
                raise ConfigError(
                    f"channel {channel.id} follows show {named!r}, which is not configured"
                )
            show = config.name  # as the show is called: the file may name it in any case
            # In OAuth mode every channel names its team (settings check it).
            team = channel.team or team_id
            if only_team is not None and team != only_team:
                continue
            _repair_case(store, team, channel.id, show, all_shows)
            if store.subscriptions(
                team_id=team, channel_id=channel.id, show=show, include_unsubscribed=True
            ):
                continue
            store.subscribe(
                team,
                channel.id,
                show,
                keywords=channel.keywords,
                recap=channel.recap,
                source="config",
            )
            added += 1
    return added


CONFIG_CHANNELS = "config_channels"


def sync_config_channels_once(settings: Settings, store: Store, team_id: str) -> int | None:
    """:func:`sync_config_channels` unless the config file's channels (and shows, and the
    team) are what the last sync subscribed: a hash of them is kept in the store, so a
    worker or clock restarting with the same file does no per-channel work. None: skipped."""
    import hashlib
    import json

    named = {
        "team": team_id,
        "shows": [s.name for s in settings.shows],
        "channels": [c.model_dump(mode="json") for c in settings.channels],
    }
    digest = hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()
    if store.state_value(CONFIG_CHANNELS) == digest:
        return None
    added = sync_config_channels(settings, store, team_id)
    store.set_state_value(CONFIG_CHANNELS, digest)
    return added


def _repair_case(store: Store, team: str, channel_id: str, show: str, known: Sequence[str]) -> None:
    """The channel's subscriptions to ``show`` under another case of its name (not itself a
    configured show's) renamed to ``show``, or dropped beside one already of that name."""
    for sub in store.subscriptions(team_id=team, channel_id=channel_id, include_unsubscribed=True):
        if sub.show != show and sub.show not in known and sub.show.casefold() == show.casefold():
            store.rename_subscription(team, channel_id, sub.show, show)
            log.info("config channel %s: subscription %r is now %r", channel_id, sub.show, show)


async def resolve_team_id(settings: Settings) -> str:
    """The workspace the bot token belongs to (``auth.test``), or the configured default."""
    if not settings.slack_bot_token:
        return settings.team_id
    from bot.delivery.slack import make_web_client

    client = make_web_client(settings)
    try:
        response = await client.auth_test()
    except Exception as exc:  # slack_sdk raises several unrelated types for one failure
        raise SlackError("auth.test", f"cannot reach {settings.slack_api_url} ({exc})") from exc
    return str(response.get("team_id") or settings.team_id)


def make_outbox(settings: Settings, stream: TextIO, store: Store | None = None) -> Outbox:
    """Slack when there is a bot token (each team's in OAuth mode: ``store`` pauses a team
    found without an installation), else the print outbox on ``stream``."""
    # Imported here: a process that fails before it posts never loads Slack's client.
    from bot.delivery.outbox import PrintOutbox, SlackOutbox
    from bot.delivery.tokens import team_outbox

    if settings.oauth_mode:
        return team_outbox(settings, store)
    if settings.slack_bot_token:
        return SlackOutbox.from_settings(settings)
    return PrintOutbox(stream)
