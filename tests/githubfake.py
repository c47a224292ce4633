"""A GitHub API fake: a real HTTP server on 127.0.0.1, in a background thread.

Use the ``github_fake`` fixture (``tests/fixtures/github.py``) or ``with GitHubFake() as fake``;
point the bot at ``fake.api_url`` (``GITHUB_API_URL``). Serves:

- ``POST /graphql`` (and ``/api/graphql``, as Enterprise Server): the query is parsed,
  validated and executed by graphql-core against a subset of GitHub's schema (``SCHEMA``), so
  aliases, variables and fragments work as on GitHub. A PR or repository that does not exist
  is ``null`` with a ``NOT_FOUND`` error (HTTP 200). Needs a token in ``fake.tokens``
  (``Authorization: bearer …``), else 401. Each query costs 1 point of the GraphQL budget;
  when it is spent: HTTP 200 with a ``RATE_LIMITED`` error.
- ``GET /repos/{owner}/{repo}/pulls/{n}`` (and under ``/api/v3``): REST, with an ``ETag``
  per PR version; ``If-None-Match`` with the current one → 304, which costs nothing. Others
  cost 1 of the REST budget; when it is spent: 403 with ``x-ratelimit-remaining: 0``.
  Unknown PR → 404.

Every answer carries ``x-ratelimit-limit``/``-remaining``/``-reset``/``-used``.

Programming::

    fake.add_pr("pytorch/pytorch", 199720, title="…", state="closed", labels=["Merged"])
    fake.update_pr("pytorch/pytorch", 199720, labels=[...])   # new ETag
    fake.rest_limit = 60; fake.graphql_limit = 5000            # budgets (reset by reset())
    fake.fail_next("rest", status=500, times=2)                # "rest" | "graphql" | "any"
    fake.fail_next("graphql", status=403, retry_after=1)       # secondary rate limit
    fake.fail_next("rest", status=429, retry_after=0.1)
    fake.fail_next("any", delay=2.0)                           # slow answer, then normal
    fake.latency = 0.05                                        # added to every call

Inspecting: ``fake.calls`` (``Call``: kind, path, status, token, keys asked,
``if_none_match``), ``fake.calls_of("rest")``, ``fake.max_in_flight``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from graphql import (
    GraphQLError,
    GraphQLSchema,
    build_schema,
    graphql_sync,
)

from tests.httpserver import BackgroundServer, LoopbackHandler, QuietHTTPServer

DEFAULT_TOKEN = "ghp_test"

SCHEMA_SDL = """
scalar DateTime
enum PullRequestState { OPEN CLOSED MERGED }
type Query {
  repository(owner: String!, name: String!): Repository
  rateLimit: RateLimit
}
type RateLimit { cost: Int! limit: Int! remaining: Int! resetAt: DateTime! used: Int! }
type Repository {
  name: String!
  nameWithOwner: String!
  pullRequest(number: Int!): PullRequest
}
type User { login: String! }
type Label { name: String! }
type LabelConnection { nodes: [Label] totalCount: Int! }
type PullRequest {
  number: Int!
  title: String!
  url: String!
  state: PullRequestState!
  isDraft: Boolean!
  merged: Boolean!
  mergedAt: DateTime
  closedAt: DateTime
  closed: Boolean!
  author: User
  labels(first: Int, after: String): LabelConnection
}
"""

_REST_PULL = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/pulls/(\d+)$")


@dataclass
class FakePr:
    repo: str
    number: int
    title: str = ""
    state: str = "open"  # open | closed | merged
    draft: bool = False
    merged_at: str | None = None
    closed_at: str | None = None
    author: str | None = "octocat"
    labels: list[str] = field(default_factory=list)
    version: int = 1

    @property
    def etag(self) -> str:
        digest = hashlib.sha1(f"{self.repo}#{self.number}@{self.version}".encode()).hexdigest()
        return f'W/"{digest}"'

    def rest(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "html_url": f"https://github.com/{self.repo}/pull/{self.number}",
            "state": "open" if self.state == "open" else "closed",
            "draft": self.draft,
            "merged": self.state == "merged",
            "merged_at": self.merged_at,
            "closed_at": self.closed_at,
            "user": {"login": self.author} if self.author else None,
            "labels": [{"name": name} for name in self.labels],
        }

    def graphql(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "url": f"https://github.com/{self.repo}/pull/{self.number}",
            "state": self.state.upper(),
            "isDraft": self.draft,
            "merged": self.state == "merged",
            "mergedAt": self.merged_at,
            "closedAt": self.closed_at,
            "closed": self.state != "open",
            "author": {"login": self.author} if self.author else None,
            "labels": self.labels,  # sliced by the resolver
        }


@dataclass
class Call:
    kind: str  # "graphql" | "rest" | "other"
    path: str
    status: int
    token: str | None
    keys: list[tuple[str, int]] = field(default_factory=list)
    if_none_match: str | None = None


@dataclass
class _Fault:
    kind: str
    status: int | None
    retry_after: float | None
    delay: float
    times: int


class _NotFound(GraphQLError):
    def __init__(self, message: str) -> None:
        super().__init__(message, extensions={"type": "NOT_FOUND"})


class GitHubFake(BackgroundServer):
    """See the module docstring."""

    thread_name = "githubfake"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(_Handler, host, port)
        self._lock = threading.Lock()
        self.tokens: set[str] = {DEFAULT_TOKEN}
        self.token = DEFAULT_TOKEN
        self.latency = 0.0
        self.rest_limit = 60
        self.graphql_limit = 5000
        self.max_in_flight = 0
        self._in_flight = 0
        self._prs: dict[tuple[str, int], FakePr] = {}
        self._calls: list[Call] = []
        self._faults: list[_Fault] = []
        self._used = {"rest": 0, "graphql": 0}
        self._reset_at = int(time.time()) + 3600
        self.schema = _make_schema(self)

    @property
    def api_url(self) -> str:
        return self.base_url

    # programming ---------------------------------------------------------------------------
    def add_pr(self, repo: str, number: int, **fields: Any) -> FakePr:
        pr = FakePr(repo=repo, number=number, **fields)
        with self._lock:
            self._prs[(repo, number)] = pr
        return pr

    def update_pr(self, repo: str, number: int, **fields: Any) -> FakePr:
        with self._lock:
            pr = self._prs[(repo, number)]
            self._prs[(repo, number)] = updated = replace(pr, version=pr.version + 1, **fields)
        return updated

    def remove_pr(self, repo: str, number: int) -> None:
        with self._lock:
            self._prs.pop((repo, number), None)

    def fail_next(
        self,
        kind: str = "any",
        *,
        status: int | None = None,
        retry_after: float | None = None,
        delay: float = 0.0,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls of ``kind`` answer ``status`` (after ``delay`` seconds);
        a fault with only a delay is a slow but normal answer."""
        if status is None and delay <= 0:
            raise ValueError("fail_next needs a status or a delay")
        with self._lock:
            self._faults.append(_Fault(kind, status, retry_after, delay, times))

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self._faults.clear()
            self._used = {"rest": 0, "graphql": 0}
            self.max_in_flight = 0

    # inspecting ----------------------------------------------------------------------------
    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls_of(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.kind == kind]

    def pr(self, repo: str, number: int) -> FakePr | None:
        with self._lock:
            return self._prs.get((repo, number))

    def remaining(self, kind: str) -> int:
        limit = self.rest_limit if kind == "rest" else self.graphql_limit
        with self._lock:
            return max(0, limit - self._used[kind])

    # serving (handler threads) ---------------------------------------------------------------
    def _take_fault(self, kind: str) -> _Fault | None:
        for fault in self._faults:
            if fault.kind in (kind, "any"):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def _rate_headers(self, kind: str) -> dict[str, str]:
        limit = self.rest_limit if kind == "rest" else self.graphql_limit
        used = self._used.get(kind, 0)
        return {
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": str(max(0, limit - used)),
            "x-ratelimit-reset": str(self._reset_at),
            "x-ratelimit-used": str(used),
            "x-ratelimit-resource": "graphql" if kind == "graphql" else "core",
        }

    def serve(
        self, kind: str, path: str, token: str | None, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            fault = self._take_fault(kind)
        try:
            wait = self.latency + (fault.delay if fault else 0.0)
            if wait > 0:
                self._stopping.wait(wait)
            with self._lock:
                call = Call(kind, path, 0, token, if_none_match=headers.get("if-none-match"))
                status, extra, payload = self._answer(kind, path, token, body, fault, call)
                call.status = status
                self._calls.append(call)
                return status, {**self._rate_headers(kind), **extra}, payload
        finally:
            with self._lock:
                self._in_flight -= 1

    def _answer(
        self,
        kind: str,
        path: str,
        token: str | None,
        body: bytes,
        fault: _Fault | None,
        call: Call,
    ) -> tuple[int, dict[str, str], Any]:
        if fault is not None and fault.status is not None:
            extra = {}
            message = "Server Error"
            if fault.retry_after is not None:
                extra["retry-after"] = f"{fault.retry_after:g}"
            if fault.status in (403, 429):
                message = "You have exceeded a secondary rate limit. Please wait a few minutes."
            return fault.status, extra, {"message": message}
        if kind == "graphql":
            return self._graphql(token, body, call)
        if kind == "rest":
            return self._rest(path, token, call)
        return 404, {}, {"message": "Not Found"}

    def _rest(self, path: str, token: str | None, call: Call) -> tuple[int, dict[str, str], Any]:
        if token is not None and token not in self.tokens:
            return 401, {}, {"message": "Bad credentials"}
        match = _REST_PULL.match(path)
        assert match is not None
        key = (f"{match[1]}/{match[2]}", int(match[3]))
        call.keys.append(key)
        pr = self._prs.get(key)
        if pr is not None and call.if_none_match == pr.etag:
            return 304, {"etag": pr.etag}, None
        if self._used["rest"] >= self.rest_limit:
            return 403, {}, {"message": "API rate limit exceeded for 127.0.0.1."}
        self._used["rest"] += 1
        if pr is None:
            return 404, {}, {"message": "Not Found"}
        return 200, {"etag": pr.etag}, pr.rest()

    def _graphql(
        self, token: str | None, body: bytes, call: Call
    ) -> tuple[int, dict[str, str], Any]:
        if token is None or token not in self.tokens:
            return 401, {}, {"message": "This endpoint requires you to be authenticated."}
        try:
            request = json.loads(body)
        except ValueError:
            return 400, {}, {"message": "Problems parsing JSON"}
        if self._used["graphql"] >= self.graphql_limit:
            return (
                200,
                {},
                {"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]},
            )
        self._used["graphql"] += 1
        result = graphql_sync(
            self.schema,
            str(request.get("query", "")),
            variable_values=request.get("variables") or {},
            context_value=call,
        )
        payload: dict[str, Any] = {}
        if result.errors:
            payload["errors"] = [_github_error(e) for e in result.errors]
        if result.data is not None or not result.errors:
            payload["data"] = result.data
        return 200, {}, payload


def _github_error(error: GraphQLError) -> dict[str, Any]:
    """GitHub puts the error's type at the top level (``NOT_FOUND``), not in extensions."""
    formatted: dict[str, Any] = dict(error.formatted)
    kind = (error.extensions or {}).get("type")
    formatted["type"] = kind or ("INVALID" if error.path is None else "INTERNAL")
    formatted.pop("extensions", None)
    return formatted


def _make_schema(fake: GitHubFake) -> GraphQLSchema:
    schema = build_schema(SCHEMA_SDL)

    def repository(_root: Any, info: Any, owner: str, name: str) -> dict[str, Any]:
        repo = f"{owner}/{name}"
        if not any(key[0].casefold() == repo.casefold() for key in fake._prs):
            raise _NotFound(f"Could not resolve to a Repository with the name '{repo}'.")
        return {"name": name, "nameWithOwner": repo}

    def pull_request(repo: dict[str, Any], info: Any, number: int) -> dict[str, Any]:
        key = (repo["nameWithOwner"], number)
        info.context.keys.append(key)
        pr = fake._prs.get(key)  # the lock is held: serve() runs queries inside it
        if pr is None:
            raise _NotFound(f"Could not resolve to a PullRequest with the number of {number}.")
        return pr.graphql()

    def labels(pr: dict[str, Any], info: Any, first: int | None = None, **_: Any) -> Any:
        names = pr["labels"][: first if first is not None else 100]
        return {"nodes": [{"name": n} for n in names], "totalCount": len(pr["labels"])}

    def rate_limit(_root: Any, info: Any) -> dict[str, Any]:
        used = fake._used["graphql"]
        return {
            "cost": 1,
            "limit": fake.graphql_limit,
            "remaining": max(0, fake.graphql_limit - used),
            "resetAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(fake._reset_at)),
            "used": used,
        }

    query = schema.query_type
    assert query is not None
    query.fields["repository"].resolve = repository
    query.fields["rateLimit"].resolve = rate_limit
    repository_type = schema.get_type("Repository")
    pull_type = schema.get_type("PullRequest")
    repository_type.fields["pullRequest"].resolve = pull_request  # type: ignore[union-attr]
    pull_type.fields["labels"].resolve = labels  # type: ignore[union-attr]
    return schema


class _Handler(LoopbackHandler):
    server: QuietHTTPServer[GitHubFake]

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        fake = self.server.owner
        path = urlsplit(self.path).path.rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        auth = self.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if auth.lower().startswith(("bearer ", "token ")) else None
        path = path.removeprefix("/api/v3") if path.startswith("/api/v3/") else path
        if self.command == "POST" and path in ("/graphql", "/api/graphql"):
            kind = "graphql"
        elif self.command == "GET" and _REST_PULL.match(path):
            kind = "rest"
        else:
            kind = "other"
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, extra, payload = fake.serve(kind, path, token, headers, body)
        data = b"" if status == 304 else json.dumps(payload).encode()
        self.send_response(status)
        if status != 304:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
