"""Socket Mode: the same Bolt app over a WebSocket Slack opens to us (no public URL needed).

Used when ``SLACK_APP_TOKEN`` (an app-level ``xapp-`` token with ``connections:write``) is
set. The WebSocket URL comes from ``apps.connections.open`` on the app's Web API client, so
it honours ``SLACK_API_URL`` like every other call.
"""

from __future__ import annotations

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient


async def start_socket_mode(
    app: AsyncApp, app_token: str, *, web_client: AsyncWebClient | None = None
) -> AsyncSocketModeHandler:
    """Connect and return the handler; it serves in the background until
    ``await handler.close_async()``."""
    handler = AsyncSocketModeHandler(app, app_token, web_client=web_client)
    await handler.connect_async()
    return handler
