"""The Slack app manifest declares everything the app listens to."""

from __future__ import annotations

from typing import Any

import yaml

from bot.listeners.interactivity import KEY_PRS_ACTION, NEARBY_ACTION
from bot.messages.basics import COMMAND
from config.settings import bundled_path
from digests.render.environment import default_templates_dir


def manifest() -> dict[str, Any]:
    data = yaml.safe_load(bundled_path("slack-manifest.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_command_scopes_events_interactivity_home_socket_mode() -> None:
    m = manifest()
    (command,) = m["features"]["slash_commands"]
    assert command["command"] == COMMAND
    assert len(command["description"]) <= 100 and len(command["usage_hint"]) <= 1000
    assert command["should_escape"] is False  # we parse the raw text ourselves
    scopes = set(m["oauth_config"]["scopes"]["bot"])
    assert {"commands", "chat:write", "links:read", "links:write"} <= scopes
    settings = m["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "app_home_opened",
        "link_shared",
        "user_change",  # a deactivated person's follows are forgotten
    }
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
    assert m["features"]["app_home"]["home_tab_enabled"] is True
    assert m["features"]["unfurl_domains"]


def test_every_request_url_is_the_one_bolt_serves() -> None:
    m = manifest()
    urls = [
        m["features"]["slash_commands"][0]["url"],
        m["settings"]["event_subscriptions"]["request_url"],
        m["settings"]["interactivity"]["request_url"],
    ]
    assert all(url.endswith("/slack/events") for url in urls)


def test_button_action_ids_match_the_digest_template() -> None:
    # The renderer owns the buttons; a renamed action would leave our listener deaf.
    text = (default_templates_dir() / "digest.j2").read_text()
    assert f"{KEY_PRS_ACTION} " in text and f"{NEARBY_ACTION} " in text
