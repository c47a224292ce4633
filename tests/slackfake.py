"""A Slack Web API fake: a real HTTP server on 127.0.0.1, in a background thread.

Use the ``slack_fake`` fixture (``tests/fixtures/slack.py``), or ``with SlackFake() as fake``.
Point the bot at it with ``SLACK_API_URL=fake.api_url`` (ends in ``/api/``) and the token
``fake.token`` (``"xoxb-test"``; add more to ``fake.tokens``). It is threaded: sync tests,
async tests, other threads and subprocesses can all call it, and ``latency`` does not
serialise concurrent calls.

Requests: POST form-encoded or JSON, or GET with a query string (slack_sdk sends
conversations.history as GET). ``blocks``/``attachments``/``metadata``/``view``/``unfurls``
may arrive as JSON strings inside a form; they are decoded. Token from
``Authorization: Bearer`` or a ``token`` param; none → ``not_authed``, unknown →
``invalid_auth``.

Methods: ``auth.test`` (team_id ``T0TEST``, user_id ``U0BOT``, bot_id ``B0BOT``),
``chat.postMessage`` (ts unique and increasing, from the wall clock), ``chat.postEphemeral``,
``chat.update``, ``chat.delete``, ``chat.unfurl``, ``views.publish``, ``conversations.history``
(messages this fake recorded in the channel, newest first; thread replies left out like Slack does),
``conversations.replies`` (a thread, parent first; ``thread_not_found``) — both honour
``limit``, ``cursor`` (``response_metadata.next_cursor``), ``oldest``, ``latest``,
``inclusive``, and include ``metadata`` only with ``include_all_metadata`` —
``conversations.join`` (clears a ``not_in_channel`` error), ``users.info`` (the users
``fake.add_user("U1", is_admin=True)`` made: ``is_admin``, ``is_owner``, ``is_primary_owner``,
``team_id``; anyone else ``user_not_found``).
Anything else → ``{"ok": false, "error": "unknown_method"}``.

Inspecting (all return copies; thread-safe)::

    fake.calls                          # list[Call]: method, params, token, status, response
    fake.calls_to("chat.postMessage")   # only that method (failed attempts included)
    fake.messages("C1")                 # posted messages in C1, oldest first, thread replies too
                                        # (dicts: ts, text, blocks, thread_ts, metadata, ...)
    fake.ephemerals("C1")               # chat.postEphemeral payloads
    fake.home_view("U1")                # last view published for U1 (or None)
    url = fake.response_url()           # "http://127.0.0.1:PORT/respond/<id>", for slash commands
    fake.responses(url)                 # JSON bodies POSTed there (id or URL); 5 uses, like Slack

Faults::

    fake.fail_next("chat.postMessage", status=429, retry_after=1, times=2)  # ratelimited;
        # Retry-After is sent as given ("0.2" too); Slack sends whole seconds and slack_sdk's
        # RateLimitErrorRetryHandler only parses whole seconds.
    fake.fail_next("chat.postMessage", status=500, times=1)                  # internal_error
    fake.fail_next("auth.test", error="invalid_auth")                        # HTTP 200, ok=false
    fake.channel_error("C1", "is_archived")   # persistent; None clears it
    fake.latency = 0.05                       # seconds added to every call
    fake.max_in_flight                        # most calls served at once (concurrency proof)
    fake.check_blocks = True                  # default: Block Kit limits → invalid_blocks /
                                              # msg_blocks_too_long (50 blocks, header 150,
                                              # section 3000, fields 10x2000, total text 12,000)
    fake.reset()                              # forget calls, messages and faults

Separate process: ``python -m tests.slackfake --port 0`` prints ``fake.api_url`` as its first
line and serves until killed. The same state is readable over HTTP at
``<base>/_fake/calls``, ``/_fake/messages?channel=C1``, ``/_fake/responses?id=...`` and faults
are set by POSTing JSON to ``/_fake/fail_next``, ``/_fake/channel_error``, ``/_fake/reset``,
``/_fake/configure`` (``latency``, ``check_blocks``);
:class:`RemoteSlackFake` wraps that (the ``slack_fake_process`` fixture yields one).
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.httpserver import BackgroundServer, LoopbackHandler, QuietHTTPServer

TEAM_ID = "T0TEST"
BOT_USER_ID = "U0BOT"
BOT_ID = "B0BOT"
APP_ID = "A0TEST"
DEFAULT_TOKEN = "xoxb-test"

# Fields Slack accepts as JSON strings inside a form body.
_JSON_FIELDS = ("blocks", "attachments", "metadata", "view", "unfurls")
_CHANNEL_METHODS = {
    "chat.postMessage",
    "chat.postEphemeral",
    "chat.update",
    "chat.delete",
    "chat.unfurl",
    "conversations.history",
    "conversations.replies",
    "conversations.join",
}
_CHANNEL_ERRORS = {"channel_not_found", "is_archived", "not_in_channel"}
# Called with the app's client id and secret (HTTP Basic), not a token.
_CLIENT_METHODS = {"oauth.v2.access"}
CLIENT_ID = "1111.2222"
CLIENT_SECRET = "fake-client-secret"
_RESPONSE_URL_USES = 5

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_HEADER = 150
MAX_SECTION = 3000
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_TOTAL_TEXT = 12_000


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None
    http_method: str
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))


@dataclass
class _Fault:
    status: int | None
    error: str | None
    retry_after: float | None
    times: int


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("1", "true", "yes")
    return bool(value)


def _text_of(obj: Any) -> str:
    if isinstance(obj, dict):
        text = obj.get("text")
        return text if isinstance(text, str) else ""
    return ""


def block_problems(blocks: Any, *, max_blocks: int = MAX_MESSAGE_BLOCKS) -> tuple[str, str] | None:
    """Return ``(error, pointer)`` for the first Block Kit limit ``blocks`` breaks, else None.

    ``error`` is what Slack answers: ``invalid_blocks`` or ``msg_blocks_too_long``.
    """
    if not isinstance(blocks, list):
        return ("invalid_blocks_format", "/blocks")
    if len(blocks) > max_blocks:
        return ("invalid_blocks", f"/blocks: more than {max_blocks} items")
    total = 0
    for i, block in enumerate(blocks):
        where = f"/blocks/{i}"
        if not isinstance(block, dict) or "type" not in block:
            return ("invalid_blocks", where)
        kind = block["type"]
        text = _text_of(block.get("text"))
        total += len(text)
        if kind == "header" and (not text or len(text) > MAX_HEADER):
            return ("invalid_blocks", f"{where}/text: must be 1-{MAX_HEADER} characters")
        if kind == "section":
            fields_ = block.get("fields") or []
            if "text" in block and not (1 <= len(text) <= MAX_SECTION):
                return ("invalid_blocks", f"{where}/text: must be 1-{MAX_SECTION} characters")
            if len(fields_) > MAX_FIELDS:
                return ("invalid_blocks", f"{where}/fields: more than {MAX_FIELDS} items")
            for j, f in enumerate(fields_):
                ftext = _text_of(f)
                total += len(ftext)
                if len(ftext) > MAX_FIELD:
                    return ("invalid_blocks", f"{where}/fields/{j}: more than {MAX_FIELD}")
        if kind == "context":
            elements = block.get("elements") or []
            if len(elements) > MAX_CONTEXT_ELEMENTS:
                return ("invalid_blocks", f"{where}/elements: more than {MAX_CONTEXT_ELEMENTS}")
            total += sum(len(_text_of(e)) for e in elements)
        if kind == "actions":
            elements = block.get("elements") or []
            if len(elements) > MAX_ACTIONS_ELEMENTS:
                return ("invalid_blocks", f"{where}/elements: more than {MAX_ACTIONS_ELEMENTS}")
            for j, e in enumerate(elements):
                if len(_text_of(e.get("text") if isinstance(e, dict) else None)) > 75:
                    return ("invalid_blocks", f"{where}/elements/{j}/text: more than 75")
    if total > MAX_TOTAL_TEXT:
        return ("msg_blocks_too_long", f"/blocks: {total} characters of text")
    return None


class SlackFake(BackgroundServer):
    """See the module docstring."""

    thread_name = "slackfake"
    queue_size = 256

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(_Handler, host, port)
        self._lock = threading.Lock()
        self.token = DEFAULT_TOKEN
        self.tokens: set[str] = {DEFAULT_TOKEN}
        self.latency = 0.0
        self.check_blocks = True
        # Highest number of API calls being served at once: shows that latency overlaps.
        self.max_in_flight = 0
        self._in_flight = 0
        self._calls: list[Call] = []
        self._messages: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._ephemerals: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._views: dict[str, dict[str, Any]] = {}
        self._faults: dict[str, list[_Fault]] = defaultdict(list)
        self._channel_errors: dict[str, str] = {}
        self._responses: dict[str, list[Any]] = {}
        self._response_ids = itertools.count(1)
        self._view_ids = itertools.count(1)
        self._last_ts = Decimal(0)
        self._oauth_init()

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    # programming -----------------------------------------------------------------------
    def fail_next(
        self,
        method: str,
        *,
        status: int | None = None,
        error: str | None = None,
        retry_after: float | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls to ``method`` fail (faults queue up in order)."""
        if status is None and error is None:
            raise ValueError("fail_next needs a status or an error")
        with self._lock:
            self._faults[method].append(_Fault(status, error, retry_after, times))

    def clear_faults(self) -> None:
        """Faults queued by :meth:`fail_next` and not used yet are dropped: Slack is back."""
        with self._lock:
            self._faults.clear()

    def channel_error(self, channel: str, error: str | None) -> None:
        """Every call naming ``channel`` answers ``error`` until cleared with None."""
        if error is not None and error not in _CHANNEL_ERRORS:
            raise ValueError(f"unsupported channel error {error!r}")
        with self._lock:
            if error is None:
                self._channel_errors.pop(channel, None)
            else:
                self._channel_errors[channel] = error

    def response_url(self) -> str:
        with self._lock:
            rid = f"R{next(self._response_ids):04d}"
            self._responses[rid] = []
        return f"{self.base_url}/respond/{rid}"

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self._messages.clear()
            self._ephemerals.clear()
            self._views.clear()
            self._faults.clear()
            self._channel_errors.clear()
            self._responses.clear()
            self._oauth_init()

    # inspecting ------------------------------------------------------------------------
    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def messages(self, channel: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(m) for m in self._messages.get(channel, [])]

    def ephemerals(self, channel: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(m) for m in self._ephemerals.get(channel, [])]

    def home_view(self, user_id: str) -> dict[str, Any] | None:
        with self._lock:
            view = self._views.get(user_id)
            return dict(view) if view is not None else None

    def responses(self, id_or_url: str) -> list[Any]:
        rid = id_or_url.rstrip("/").rsplit("/", 1)[-1]
        with self._lock:
            return list(self._responses.get(rid, []))

    # serving ---------------------------------------------------------------------------
    def _next_ts(self) -> str:
        # Real time, so `oldest=<when we tried>` filters behave as against Slack.
        now = Decimal(time.time_ns() // 1000) / Decimal(1_000_000)
        self._last_ts = max(now, self._last_ts + Decimal("0.000001"))
        return f"{self._last_ts:.6f}"

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.pop(0)
        return fault

    def handle_api(
        self, method: str, params: dict[str, Any], token: str | None, http_method: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Answer one Web API call: (HTTP status, JSON body, extra headers)."""
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.latency > 0:
                self._stopping.wait(self.latency)
        finally:
            with self._lock:
                self._in_flight -= 1
        with self._lock:
            status, body, headers = self._answer(method, params, token)
            self._calls.append(Call(method, params, token, http_method, status, body))
        return status, body, headers

    def _answer(
        self, method: str, params: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        fault = self._take_fault(method)
        if fault is not None:
            if fault.status == 429:
                after = fault.retry_after if fault.retry_after is not None else 1
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": f"{after:g}"}
            if fault.status is not None and fault.status >= 500:
                return fault.status, {"ok": False, "error": fault.error or "internal_error"}, {}
            return fault.status or 200, {"ok": False, "error": fault.error}, {}
        handler = _METHODS.get(method)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        if method in _CLIENT_METHODS:
            return 200, handler(self, params), {}
        if not token:
            return 200, {"ok": False, "error": "not_authed"}, {}
        if token not in self.tokens:
            return 200, {"ok": False, "error": self._refusals.get(token, "invalid_auth")}, {}
        if method in _CHANNEL_METHODS:
            channel = params.get("channel")
            if not channel:
                return 200, {"ok": False, "error": "channel_not_found"}, {}
            owner = self.channel_teams.get(str(channel))
            if owner is not None and self.token_teams.get(token, TEAM_ID) != owner:
                # A call about another workspace's channel, with this workspace's token.
                return 200, {"ok": False, "error": "channel_not_found"}, {}
            error = self._channel_errors.get(str(channel))
            if error is not None and not (
                method == "conversations.join" and error == "not_in_channel"
            ):
                return 200, {"ok": False, "error": error}, {}
        self._caller_token = token  # auth.test answers for the token's team
        return 200, handler(self, params), {}

    def handle_response_url(self, rid: str, payload: Any) -> tuple[int, bytes]:
        with self._lock:
            if rid not in self._responses:
                return 404, b"no_such_url"
            if len(self._responses[rid]) >= _RESPONSE_URL_USES:
                return 404, b"used_url"
            self._responses[rid].append(payload)
        return 200, b"ok"

    def _blocks_error(self, params: dict[str, Any], max_blocks: int) -> dict[str, Any] | None:
        if not self.check_blocks or "blocks" not in params:
            return None
        problem = block_problems(params["blocks"], max_blocks=max_blocks)
        if problem is None:
            return None
        error, pointer = problem
        return {"ok": False, "error": error, "errors": [pointer]}

    # OAuth (many workspaces) ------------------------------------------------------------
    def _oauth_init(self) -> None:
        self.client_id = CLIENT_ID
        self.client_secret = CLIENT_SECRET
        # token → team; channel → team (a call about it must carry that team's token).
        self.token_teams: dict[str, str] = {}
        self.channel_teams: dict[str, str] = {}
        # With rotation: tokens issued expire in this many seconds, with a refresh token.
        self.rotation_expires_in: int | None = None
        self._codes: dict[str, tuple[str, str]] = {}
        self._refusals: dict[str, str] = {}  # revoked token → what calls with it answer
        self._refresh_tokens: dict[str, str] = {}
        self._team_names: dict[str, str] = {}
        self._issued = itertools.count(1)
        self._caller_token: str | None = None
        self._users: dict[str, dict[str, Any]] = {}

    def add_install_code(self, code: str, team_id: str, team_name: str = "") -> None:
        """``code`` (once) → an installation in ``team_id`` from ``oauth.v2.access``."""
        with self._lock:
            self._codes[code] = (team_id, team_name or f"Team {team_id}")

    def add_team_channel(self, team_id: str, channel: str) -> None:
        with self._lock:
            self.channel_teams[channel] = team_id

    def revoke_team(self, team_id: str, error: str = "invalid_auth") -> None:
        """Every token the team has now stops working: each call answers ``error``
        (``invalid_auth``, ``token_revoked``, ``account_inactive``), as after an uninstall.
        Tokens issued later (a re-install) work."""
        with self._lock:
            for token in [t for t, team in self.token_teams.items() if team == team_id]:
                self.tokens.discard(token)
                self._refusals[token] = error

    def team_tokens(self, team_id: str) -> list[str]:
        with self._lock:
            return [t for t, team in self.token_teams.items() if team == team_id]

    def _issue(self, team_id: str) -> dict[str, Any]:
        n = next(self._issued)
        rotating = self.rotation_expires_in is not None
        token = f"xoxe.xoxb-{team_id}-{n}" if rotating else f"xoxb-{team_id}-{n}"
        self.tokens.add(token)
        self.token_teams[token] = team_id
        grant: dict[str, Any] = {"access_token": token, "token_type": "bot"}
        if rotating:
            refresh = f"xoxe-1-{team_id}-{n}"
            self._refresh_tokens[refresh] = team_id
            grant.update(refresh_token=refresh, expires_in=self.rotation_expires_in)
        return grant

    def _oauth_v2_access(self, params: dict[str, Any]) -> dict[str, Any]:
        if (params.get("client_id"), params.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ):
            return {"ok": False, "error": "invalid_client_id"}
        if params.get("grant_type") == "refresh_token":
            # Single use: a second refresh with the same token fails, as Slack's does.
            team = self._refresh_tokens.pop(str(params.get("refresh_token")), None)
            if team is None:
                return {"ok": False, "error": "invalid_refresh_token"}
            return {"ok": True, "team": {"id": team}, **self._issue(team)}
        found = self._codes.pop(str(params.get("code")), None)
        if found is None:
            return {"ok": False, "error": "invalid_code"}
        team, name = found
        self._team_names[team] = name
        return {
            "ok": True,
            "app_id": APP_ID,
            "authed_user": {"id": f"U0INST{team}"},
            "scope": "chat:write,commands",
            "bot_user_id": f"U0BOT{team}",
            "team": {"id": team, "name": name},
            "enterprise": None,
            "is_enterprise_install": False,
            **self._issue(team),
        }

    # methods (called with the lock held) -------------------------------------------------
    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        team = self.token_teams.get(self._caller_token or "")
        if team is not None:
            return {
                "ok": True,
                "url": f"https://{team.lower()}.slack.com/",
                "team": self._team_names.get(team, team),
                "user": "digestbot",
                "team_id": team,
                "user_id": f"U0BOT{team}",
                "bot_id": f"B0BOT{team}",
                "is_enterprise_install": False,
            }
        return {
            "ok": True,
            "url": "https://digestbot-test.slack.com/",
            "team": "Digestbot Test",
            "user": "digestbot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _message_from(self, params: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "message",
            "user": BOT_USER_ID,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "team": TEAM_ID,
            "text": params.get("text", ""),
        }
        for key in ("blocks", "attachments", "thread_ts", "metadata"):
            if params.get(key) is not None:
                message[key] = params[key]
        return message

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        if not any(params.get(k) for k in ("text", "blocks", "attachments")):
            return {"ok": False, "error": "no_text"}
        bad = self._blocks_error(params, MAX_MESSAGE_BLOCKS)
        if bad is not None:
            return bad
        channel = str(params["channel"])
        message = self._message_from(params)
        message["ts"] = self._next_ts()
        self._messages[channel].append(message)
        public = {k: v for k, v in message.items() if k != "metadata"}
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": public}

    def _post_ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("user"):
            return {"ok": False, "error": "user_not_in_channel"}
        if not any(params.get(k) for k in ("text", "blocks", "attachments")):
            return {"ok": False, "error": "no_text"}
        bad = self._blocks_error(params, MAX_MESSAGE_BLOCKS)
        if bad is not None:
            return bad
        ts = self._next_ts()
        self._ephemerals[str(params["channel"])].append({**params, "message_ts": ts})
        return {"ok": True, "message_ts": ts}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params["channel"])
        ts = str(params.get("ts", ""))
        for message in self._messages.get(channel, []):
            if message["ts"] == ts:
                bad = self._blocks_error(params, MAX_MESSAGE_BLOCKS)
                if bad is not None:
                    return bad
                for key in ("text", "blocks", "attachments", "metadata"):
                    if key in params:
                        message[key] = params[key]
                message["edited"] = {"user": BOT_USER_ID, "ts": self._next_ts()}
                return {
                    "ok": True,
                    "channel": channel,
                    "ts": ts,
                    "text": message.get("text", ""),
                    "message": {k: v for k, v in message.items() if k != "metadata"},
                }
        return {"ok": False, "error": "message_not_found"}

    def _delete(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params["channel"])
        ts = str(params.get("ts", ""))
        messages = self._messages.get(channel, [])
        for index, message in enumerate(messages):
            if message["ts"] == ts:
                del messages[index]
                return {"ok": True, "channel": channel, "ts": ts}
        return {"ok": False, "error": "message_not_found"}

    def _get_permalink(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(params.get("channel") or ""), str(params.get("message_ts") or "")
        if not any(m["ts"] == ts for m in self._messages.get(channel, [])):
            return {"ok": False, "error": "message_not_found"}
        link = f"https://fake.slack.test/archives/{channel}/p{ts.replace('.', '')}"
        return {"ok": True, "channel": channel, "permalink": link}

    def _unfurl(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("unfurls"):
            return {"ok": False, "error": "invalid_unfurls_format"}
        return {"ok": True}

    def _views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        user_id = params.get("user_id")
        view = params.get("view")
        if not user_id:
            return {"ok": False, "error": "invalid_arguments"}
        if not isinstance(view, dict) or view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments"}
        bad = self._blocks_error({"blocks": view.get("blocks", [])}, MAX_VIEW_BLOCKS)
        if bad is not None:
            return bad
        published = {**view, "id": f"V{next(self._view_ids):08d}", "team_id": TEAM_ID}
        self._views[str(user_id)] = published
        return {"ok": True, "view": published}

    def _window(self, params: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any]:
        """Filter by oldest/latest/inclusive, page by limit/cursor, drop metadata unless asked."""
        try:
            limit = int(params.get("limit") or 100)
            oldest = Decimal(str(params.get("oldest") or "0"))
            latest = Decimal(str(params["latest"])) if params.get("latest") else None
            start = int(params["cursor"].removeprefix("offset:")) if params.get("cursor") else 0
        except (ValueError, InvalidOperation, AttributeError):
            return {"ok": False, "error": "invalid_arguments"}
        limit = max(1, min(limit, 999))
        inclusive = _truthy(params.get("inclusive", False))
        with_metadata = _truthy(params.get("include_all_metadata", False))
        picked: list[dict[str, Any]] = []
        for message in candidates:
            ts = Decimal(message["ts"])
            if ts < oldest or (ts == oldest and not inclusive):
                continue
            if latest is not None and (ts > latest or (ts == latest and not inclusive)):
                continue
            shown = dict(message)
            if not with_metadata:
                shown.pop("metadata", None)
            picked.append(shown)
        more = len(picked) > start + limit
        return {
            "ok": True,
            "messages": picked[start : start + limit],
            "has_more": more,
            "pin_count": 0,
            "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""},
        }

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params["channel"])
        # Thread replies live in conversations.replies, not history (as in Slack).
        top_level = [
            m
            for m in reversed(self._messages.get(channel, []))
            if m.get("thread_ts") in (None, m["ts"])
        ]
        return self._window(params, top_level)

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params["channel"])
        parent = str(params.get("ts") or "")
        thread = [
            m
            for m in self._messages.get(channel, [])
            if m["ts"] == parent or m.get("thread_ts") == parent
        ]
        if not any(m["ts"] == parent for m in thread):
            return {"ok": False, "error": "thread_not_found"}
        return self._window(params, thread)  # oldest first, the parent leading

    # users.info ------------------------------------------------------------------------
    def add_user(
        self,
        user_id: str,
        *,
        team_id: str = TEAM_ID,
        is_admin: bool = False,
        is_owner: bool = False,
        is_primary_owner: bool = False,
    ) -> None:
        """A user ``users.info`` knows (anyone else: ``user_not_found``)."""
        with self._lock:
            self._users[user_id] = {
                "id": user_id,
                "team_id": team_id,
                "name": user_id.lower(),
                "deleted": False,
                "is_admin": is_admin,
                "is_owner": is_owner,
                "is_primary_owner": is_primary_owner,
                "is_bot": False,
            }

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self._users.get(str(params.get("user") or ""))
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": dict(user)}

    def _join(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params["channel"])
        if self._channel_errors.get(channel) == "not_in_channel":
            del self._channel_errors[channel]
        return {"ok": True, "channel": {"id": channel, "is_channel": True, "is_member": True}}


_METHODS = {
    "auth.test": SlackFake._auth_test,
    "oauth.v2.access": SlackFake._oauth_v2_access,
    "chat.postMessage": SlackFake._post_message,
    "chat.postEphemeral": SlackFake._post_ephemeral,
    "chat.update": SlackFake._update,
    "chat.delete": SlackFake._delete,
    "chat.unfurl": SlackFake._unfurl,
    "chat.getPermalink": SlackFake._get_permalink,
    "views.publish": SlackFake._views_publish,
    "conversations.history": SlackFake._history,
    "conversations.replies": SlackFake._replies,
    "conversations.join": SlackFake._join,
    "users.info": SlackFake._users_info,
}


def _decode_params(raw: bytes, content_type: str, query: str) -> dict[str, Any]:
    params: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    if raw:
        if "application/json" in content_type:
            loaded = json.loads(raw)
            if not isinstance(loaded, dict):
                raise ValueError("JSON body is not an object")
            params.update(loaded)
        else:
            params.update(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
    for key in _JSON_FIELDS:
        value = params.get(key)
        if isinstance(value, str) and value:
            try:
                params[key] = json.loads(value)
            except ValueError as exc:
                raise _BadField(f"invalid_{key}_format") from exc
    return params


class _BadField(ValueError):
    """A JSON-valued field that is not JSON; Slack names the field in its error."""


class _Handler(LoopbackHandler):
    server: QuietHTTPServer[SlackFake]

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        fake = self.server.owner
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        content_type = self.headers.get("Content-Type", "")
        if parts.path.startswith("/api/"):
            method = parts.path[len("/api/") :]
            try:
                params = _decode_params(raw, content_type, parts.query)
            except _BadField as exc:
                self._json(200, {"ok": False, "error": str(exc)})
                return
            except (ValueError, UnicodeDecodeError):
                self._json(200, {"ok": False, "error": "invalid_json"})
                return
            token = params.pop("token", None)
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                token = auth[len("Bearer ") :]
            elif auth.startswith("Basic "):
                client = base64.b64decode(auth[len("Basic ") :]).decode("utf-8", "replace")
                params["client_id"], _, params["client_secret"] = client.partition(":")
            status, body, headers = fake.handle_api(method, params, token, self.command)
            self._json(status, body, headers)
        elif parts.path.startswith("/respond/"):
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            status, text = fake.handle_response_url(parts.path.rsplit("/", 1)[-1], payload)
            self._send(status, text, "text/plain; charset=utf-8")
        elif parts.path.startswith("/_fake/"):
            self._control(fake, parts.path[len("/_fake/") :], parts.query, raw)
        else:
            self._send(404, b"not found", "text/plain")

    def _control(self, fake: SlackFake, what: str, query: str, raw: bytes) -> None:
        args: dict[str, Any] = dict(parse_qsl(query))
        if raw:
            args.update(json.loads(raw))
        result: Any = {"ok": True}
        if what == "calls":
            result = [asdict(c) for c in fake.calls]
        elif what == "messages":
            result = fake.messages(args["channel"])
        elif what == "responses":
            result = fake.responses(args["id"])
        elif what == "response_url":
            result = {"url": fake.response_url()}
        elif what == "fail_next":
            fake.fail_next(
                args["method"],
                status=args.get("status"),
                error=args.get("error"),
                retry_after=args.get("retry_after"),
                times=int(args.get("times", 1)),
            )
        elif what == "channel_error":
            fake.channel_error(args["channel"], args.get("error"))
        elif what == "configure":
            if args.get("latency") is not None:
                fake.latency = float(args["latency"])
            if args.get("check_blocks") is not None:
                fake.check_blocks = bool(args["check_blocks"])
            result = {"ok": True, "max_in_flight": fake.max_in_flight}
        elif what == "reset":
            fake.reset()
        else:
            self._send(404, b"unknown control", "text/plain")
            return
        self._json(200, result)

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body).encode(), "application/json; charset=utf-8", headers)

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class RemoteSlackFake:
    """Drive a fake running in another process (``python -m tests.slackfake``) over HTTP."""

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url
        self.base_url = api_url.removesuffix("/").removesuffix("/api")
        self.token = DEFAULT_TOKEN

    def _get(self, what: str, **query: str) -> Any:
        qs = urlencode(query)
        with urllib.request.urlopen(f"{self.base_url}/_fake/{what}?{qs}", timeout=10) as r:
            return json.loads(r.read())

    def _post(self, what: str, **body: Any) -> Any:
        req = urllib.request.Request(
            f"{self.base_url}/_fake/{what}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    @property
    def calls(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._get("calls")
        return result

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["method"] == method]

    def messages(self, channel: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._get("messages", channel=channel)
        return result

    def response_url(self) -> str:
        return str(self._post("response_url")["url"])

    def responses(self, id_or_url: str) -> list[Any]:
        rid = id_or_url.rstrip("/").rsplit("/", 1)[-1]
        result: list[Any] = self._get("responses", id=rid)
        return result

    def fail_next(
        self,
        method: str,
        *,
        status: int | None = None,
        error: str | None = None,
        retry_after: float | None = None,
        times: int = 1,
    ) -> None:
        self._post(
            "fail_next",
            method=method,
            status=status,
            error=error,
            retry_after=retry_after,
            times=times,
        )

    def channel_error(self, channel: str, error: str | None) -> None:
        self._post("channel_error", channel=channel, error=error)

    def configure(self, *, latency: float | None = None, check_blocks: bool | None = None) -> None:
        self._post("configure", latency=latency, check_blocks=check_blocks)

    def reset(self) -> None:
        self._post("reset")


def bench_team(n: int) -> str:
    return f"T{n:05d}"


def bench_token(team: str) -> str:
    return f"xoxb-{team}-bench"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the Slack Web API fake.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument(
        "--teams", type=int, default=0, help="workspaces T00000…: token xoxb-T00000-bench each"
    )
    args = parser.parse_args(argv)
    fake = SlackFake(args.host, args.port)
    fake.latency = args.latency
    for n in range(args.teams):
        fake.tokens.add(bench_token(bench_team(n)))
        fake.token_teams[bench_token(bench_team(n))] = bench_team(n)
    fake.start()
    print(fake.api_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
