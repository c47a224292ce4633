"""GitHub's wire formats for pull-request details: the GraphQL batch query and the REST
answer, turned into :class:`PrDetails`. Pure (no HTTP), so the client only moves bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from digests.types import GitHubState, PrDetails, PrKey

# GraphQL cost counts connections per 100 nodes: 100 PRs with their labels cost 1 point.
MAX_BATCH = 100
LABELS_PER_PR = 50

PR_FRAGMENT = f"""fragment pr on PullRequest {{
  number
  title
  state
  isDraft
  merged
  mergedAt
  closedAt
  author {{ login }}
  labels(first: {LABELS_PER_PR}) {{ nodes {{ name }} }}
}}"""


def graphql_url(api_url: str) -> str:
    """GitHub.com serves GraphQL next to REST; Enterprise Server at ``/api/graphql`` while
    REST is under ``/api/v3``."""
    base = api_url.rstrip("/")
    if base.endswith("/api/v3"):
        return base.removesuffix("/v3") + "/graphql"
    return base + "/graphql"


def batches(keys: Sequence[PrKey], size: int = MAX_BATCH) -> list[list[PrKey]]:
    size = max(1, min(size, MAX_BATCH))
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


def batch_query(keys: Sequence[PrKey]) -> tuple[str, dict[str, str], dict[str, PrKey]]:
    """One query for PRs across repositories: ``r<i>`` aliases a repository (owner and name
    as variables, so nothing from a config file is spliced into the query text) and
    ``p<n>`` a PR in it. Returns the query, its variables, and alias path → key."""
    repos: dict[str, list[int]] = {}
    for repo, number in keys:
        repos.setdefault(repo, []).append(int(number))
    params: list[str] = []
    fields: list[str] = []
    variables: dict[str, str] = {}
    paths: dict[str, PrKey] = {}
    for index, (repo, numbers) in enumerate(repos.items()):
        owner, _, name = repo.partition("/")
        variables[f"o{index}"], variables[f"n{index}"] = owner, name
        params.append(f"$o{index}: String!, $n{index}: String!")
        pulls = []
        for number in dict.fromkeys(numbers):
            pulls.append(f"    p{number}: pullRequest(number: {number}) {{ ...pr }}")
            paths[f"r{index}.p{number}"] = (repo, number)
        fields.append(
            f"  r{index}: repository(owner: $o{index}, name: $n{index}) {{\n"
            + "\n".join(pulls)
            + "\n  }"
        )
    query = (
        f"query PullRequests({', '.join(params)}) {{\n"
        + "\n".join(fields)
        + "\n  rateLimit { cost remaining resetAt }\n}\n"
        + PR_FRAGMENT
    )
    return query, variables, paths


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _closed_at(state: GitHubState, value: Any) -> datetime | None:
    """A closed PR's close time stands in for its merge time: where a bot lands PRs (closed,
    with a merge label) that is when it landed; the shown state decides whether it counts."""
    return _when(value) if state == "closed" else None


def _labels(nodes: Any) -> tuple[str, ...]:
    if not isinstance(nodes, list):
        return ()
    return tuple(
        str(n["name"]) for n in nodes if isinstance(n, Mapping) and isinstance(n.get("name"), str)
    )


def _login(author: Any) -> str | None:
    if isinstance(author, Mapping) and isinstance(author.get("login"), str):
        return str(author["login"])
    return None  # a deleted account ("ghost") comes back as null


def from_graphql(key: PrKey, node: Mapping[str, Any], now: datetime) -> PrDetails:
    raw = str(node.get("state") or "OPEN").lower()
    state: GitHubState = (
        "merged"
        if node.get("merged") or raw == "merged"
        else ("closed" if raw == "closed" else "open")
    )
    labels = node.get("labels")
    return PrDetails(
        repo=key[0],
        number=key[1],
        title=str(node.get("title") or ""),
        state=state,
        draft=bool(node.get("isDraft")),
        merged_at=_when(node.get("mergedAt")) or _closed_at(state, node.get("closedAt")),
        author=_login(node.get("author")),
        labels=_labels(labels.get("nodes") if isinstance(labels, Mapping) else None),
        fetched_at=now,
    )


def from_rest(key: PrKey, body: Mapping[str, Any], now: datetime, etag: str | None) -> PrDetails:
    merged = bool(body.get("merged")) or body.get("merged_at") is not None
    state: GitHubState = (
        "merged" if merged else ("closed" if body.get("state") == "closed" else "open")
    )
    return PrDetails(
        repo=key[0],
        number=key[1],
        title=str(body.get("title") or ""),
        state=state,
        draft=bool(body.get("draft")),
        merged_at=_when(body.get("merged_at")) or _closed_at(state, body.get("closed_at")),
        author=_login(body.get("user")),
        labels=_labels(body.get("labels")),
        fetched_at=now,
        etag=etag,
    )


def missing(key: PrKey, now: datetime) -> PrDetails:
    return PrDetails(repo=key[0], number=key[1], fetched_at=now, missing=True)


def read_graphql(
    body: Mapping[str, Any], paths: Mapping[str, PrKey], now: datetime
) -> tuple[list[PrDetails], list[PrKey]]:
    """Details found and keys GitHub says do not exist. A key in neither (an error other
    than NOT_FOUND) is left for the next poll."""
    data = body.get("data") if isinstance(body.get("data"), Mapping) else {}
    assert isinstance(data, Mapping)
    not_found: set[str] = set()
    for error in body.get("errors") or ():
        if isinstance(error, Mapping) and error.get("type") == "NOT_FOUND":
            not_found.add(".".join(str(p) for p in error.get("path") or ()))
    found: list[PrDetails] = []
    gone: list[PrKey] = []
    for path, key in paths.items():
        repo_alias, pr_alias = path.split(".")
        repo_node = data.get(repo_alias)
        if repo_node is None:
            if repo_alias in not_found:
                gone.append(key)  # no such repository: none of its PRs exist
            continue
        node = repo_node.get(pr_alias) if isinstance(repo_node, Mapping) else None
        if isinstance(node, Mapping):
            found.append(from_graphql(key, node, now))
        elif path in not_found:
            gone.append(key)
    return found, gone


def rate_limited(body: Mapping[str, Any]) -> bool:
    """GraphQL reports its primary limit as HTTP 200 with a RATE_LIMITED error."""
    return any(
        isinstance(e, Mapping) and e.get("type") == "RATE_LIMITED" for e in body.get("errors") or ()
    )


def json_body(content: bytes) -> dict[str, Any]:
    try:
        loaded = json.loads(content)
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}
