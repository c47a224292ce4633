"""Bolt's request path with its per-request waste taken out; what each request sees is the same.

Measured with bench_slash (a cached `/episodes recent`, in-process): Bolt's own dispatch
was most of the app's CPU per request, and most of that was bookkeeping that does not
depend on the request:

- the body parsed with ``urllib.parse.parse_qsl`` (about half of building the request);
  :func:`bolt_request` builds the same ``AsyncBoltRequest`` with a form parser that gives
  the same dict (``parse_form``; anything that is not a plain form goes to Bolt's parser);
- a new ``AsyncWebClient`` per request, whose constructor recomputes the user agent from
  ``platform`` and reads four proxy environment variables each time: :class:`DigestApp`
  still gives each request its own client (bolt-python#714: a listener may change its
  token), filled in from values read once;
- every listener matcher and listener called through ``build_async_required_kwargs``, which
  builds every argument any listener could ask for (say, respond, complete, fail, the
  assistant utilities, eight payload views) to pass the one or four asked for:
  :class:`CommandListener` matches the command by its name and passes only what its
  function names;
- ``AsyncCallableAuthorize`` doing the same for the authorize function:
  :class:`FunctionAuthorize` calls it with the three ids it takes;
- ``ack(...)`` encoding the reply's JSON for every request, the largest single cost of a
  cached answer: :func:`ephemeral_body` gives the same text, which an answer keeps.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import cached_property
from typing import Any, TypeVar
from urllib.parse import unquote

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.error import BoltError
from slack_bolt.listener.async_listener import AsyncCustomListener
from slack_bolt.logger import get_bolt_app_logger
from slack_bolt.request.async_internals import build_async_context
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import (
    build_normalized_headers,
    extract_content_type,
    parse_body,
    parse_query,
)
from slack_bolt.request.payload_utils import to_command
from slack_bolt.response import BoltResponse
from slack_bolt.util.utils import is_callable_coroutine
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import async_default_handlers
from slack_sdk.proxy_env_variable_loader import load_http_proxy_from_env
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.internal_utils import get_user_agent
from starlette.requests import Request

from digests.render.limits import Message

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
Ids = str | None
AuthorizeFunction = Callable[[Ids, Ids, Ids], Awaitable[AuthorizeResult | None]]


# -- the request ---------------------------------------------------------------------------


def parse_form(text: str) -> dict[str, str]:
    """``dict(parse_qsl(text, keep_blank_values=True))`` (what Bolt's ``parse_body`` does with
    a form), at less than half the cost: a value without ``+`` or ``%`` is used as it is."""
    fields: dict[str, str] = {}
    for pair in text.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "+" in name:
            name = name.replace("+", " ")
        if "%" in name:
            name = unquote(name)
        if "+" in value:
            value = value.replace("+", " ")
        if "%" in value:
            value = unquote(value)
        fields[name] = value
    return fields


def parse_payload(text: str, content_type: str | None) -> dict[str, Any]:
    """Bolt's ``parse_body``: JSON and ``payload=`` forms go to it, plain forms to ours."""
    if not text or content_type == "application/json" or text.startswith("{") or "payload" in text:
        return parse_body(text, content_type)
    return parse_form(text)


class FormRequest(AsyncBoltRequest):
    """``AsyncBoltRequest(body=text, query=..., headers=...)`` in HTTP mode, attribute for
    attribute (tests compare the two), with :func:`parse_payload` as the body parser."""

    def __init__(
        self,
        *,
        body: str,
        query: dict[str, Sequence[str]] | None = None,
        headers: dict[str, str | Sequence[str]] | None = None,
    ) -> None:
        self.raw_body = body
        self.query = parse_query(query)
        self.headers = build_normalized_headers(headers)
        self.content_type = extract_content_type(self.headers)
        self.body = parse_payload(body, self.content_type)
        self.context = build_async_context(AsyncBoltContext({}), self.body)
        self.lazy_only = bool(self.headers.get("x-slack-bolt-lazy-only", [False])[0])
        self.lazy_function_name = self.headers.get("x-slack-bolt-lazy-function-name", [None])[0]
        self.mode = "http"


def bolt_request(request: Request, body: bytes) -> AsyncBoltRequest:
    """What Bolt's Starlette adapter (``to_async_bolt_request``) makes of a request and its
    body; a body that is not UTF-8 raises ``UnicodeDecodeError`` as there."""
    text = body.decode("utf-8")
    headers: dict[str, str | Sequence[str]] = {}
    for name, value in request.headers.items():  # the last of repeated headers, as Bolt
        headers[name] = [value]
    query: dict[str, Sequence[str]] | None = None
    if request.scope.get("query_string"):
        query = {name: [value] for name, value in request.query_params.items()}
    return FormRequest(body=text, query=query, headers=headers)


# -- the response ----------------------------------------------------------------------------


def ephemeral_body(message: Message) -> str:
    """The body of ``ack(response_type="ephemeral", text=..., blocks=...)``'s response, as
    Bolt's ack encodes it (the same keys in the same order; tests compare the two)."""
    body: dict[str, Any] = {"text": message["text"], "response_type": "ephemeral"}
    if message["blocks"]:
        body["blocks"] = list(message["blocks"])
    return json.dumps(body)


def acked(body: str) -> BoltResponse:
    """The response a listener returns instead of calling ``ack``: Bolt answers with it."""
    return BoltResponse(status=200, body=body)


# -- authorization -------------------------------------------------------------------------


class FunctionAuthorize(AsyncAuthorize):
    """An ``authorize(enterprise_id, team_id, user_id)`` function as Bolt calls it, without
    ``AsyncCallableAuthorize``'s per-request reading of the function's argument names."""

    def __init__(self, func: AuthorizeFunction) -> None:
        self.func = func

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult | None:
        try:
            return await self.func(enterprise_id, team_id, user_id)
        except SlackApiError as err:  # as AsyncCallableAuthorize: Bolt's refusal follows
            log.debug("authorize failed for team %s: %s", team_id, err.response)
            return None


# -- listeners -----------------------------------------------------------------------------

# The listener arguments that cost nothing to give; a function asking for any other gets
# Bolt's own argument building.
_ARGUMENTS: dict[str, Callable[[AsyncBoltRequest], Any]] = {
    "ack": lambda req: req.context.ack,
    "respond": lambda req: req.context.respond,
    "say": lambda req: req.context.say,
    "client": lambda req: req.context.client,
    "context": lambda req: req.context,
    "body": lambda req: req.body,
    "command": lambda req: to_command(req.body),
}


class CommandListener(AsyncCustomListener):
    """``app.command(name)(function)`` for a command named by a string, matched by that
    name and called with the arguments it names (see the module docstring)."""

    def __init__(
        self, app_name: str, command: str, function: F, base_logger: logging.Logger | None
    ) -> None:
        super().__init__(
            app_name=app_name,
            ack_function=function,
            lazy_functions=[],
            matchers=[],
            middleware=[],
            base_logger=base_logger,
        )
        self.command = command
        names = list(self.arg_names)
        known = all(name in _ARGUMENTS for name in names)
        self._arguments = [(name, _ARGUMENTS[name]) for name in names] if known else None

    async def async_matches(self, *, req: AsyncBoltRequest, resp: BoltResponse) -> bool:
        # Bolt's builtin command matcher: a slash command whose "command" is this one.
        body = req.body
        return "command" in body and body["command"] == self.command

    async def run_ack_function(
        self, *, request: AsyncBoltRequest, response: BoltResponse
    ) -> BoltResponse | None:
        if self._arguments is None:
            return await super().run_ack_function(request=request, response=response)
        kwargs = {name: get(request) for name, get in self._arguments}
        return await self.ack_function(**kwargs)


# -- the app -------------------------------------------------------------------------------


class DigestApp(AsyncApp):
    """``AsyncApp`` with the cheaper per-request context and :meth:`command_listener`."""

    @cached_property
    def _client_constants(self) -> tuple[str, str | None]:
        """What AsyncWebClient's constructor computes each time, the same for every request:
        the user agent and the proxy (the app's client's, else the environment's)."""
        base = self._async_client
        proxy = base.proxy
        if proxy is None or not proxy.strip():
            proxy = load_http_proxy_from_env(base.logger) or proxy
        return get_user_agent(), proxy

    def command_listener(self, command: str) -> Callable[[F], F]:
        """``self.command(command)`` for a listener with no lazy functions or middleware."""

        def register(function: F) -> F:
            if not is_callable_coroutine(function):
                raise BoltError(f"the listener for {command} must be a coroutine function")
            listener = CommandListener(self.name, command, function, self._base_logger)
            self._async_listeners.append(listener)
            return function

        return register

    def request_client(self, team_id: str | None) -> AsyncWebClient:
        """The client Bolt's ``_init_context`` constructs for each request (same attributes,
        its own retry handler list and default params), without the constructor's work."""
        base = self._async_client
        client: AsyncWebClient = AsyncWebClient.__new__(AsyncWebClient)
        token = self._token
        client.token = None if token is None else token.strip()
        client.base_url = base.base_url
        client.timeout = base.timeout
        client.ssl = base.ssl
        user_agent, client.proxy = self._client_constants
        client.session = base.session
        client.trust_env_in_session = base.trust_env_in_session
        # Shared with the app's client, as Bolt shares it; the constructor resets the agent.
        client.headers = base.headers or {}
        client.headers["User-Agent"] = user_agent
        client.default_params = {} if team_id is None else {"team_id": team_id}
        client._logger = base.logger
        handlers = base.retry_handlers
        client.retry_handlers = async_default_handlers() if handlers is None else handlers.copy()
        return client

    def _init_context(self, req: AsyncBoltRequest) -> None:
        # AsyncApp._init_context with request_client() for its AsyncWebClient(...).
        logger = get_bolt_app_logger(app_name=self.name, base_logger=self._base_logger)
        req.context["logger"] = logger
        req.context["token"] = self._token
        req.context["client"] = self.request_client(req.context.team_id)
        req.context["listener_runner"] = self.listener_runner
