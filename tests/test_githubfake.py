"""The GitHub fake answers like GitHub: GraphQL through graphql-core (aliases, variables,
fragments, NOT_FOUND as null plus an error), REST with ETags and rate-limit headers."""

from __future__ import annotations

import httpx

from tests.githubfake import GitHubFake

QUERY = """
query Q($owner: String!, $name: String!, $n: Int!) {
  repo: repository(owner: $owner, name: $name) {
    a: pullRequest(number: $n) { ...bits }
    b: pullRequest(number: 9) { title }
  }
}
fragment bits on PullRequest { title state isDraft labels(first: 1) { nodes { name } } }
"""


def test_graphql_aliases_variables_fragments(github_fake: GitHubFake) -> None:
    github_fake.add_pr("o/r", 1, title="One", state="merged", labels=["x", "y"])
    answer = httpx.post(
        github_fake.api_url + "/graphql",
        json={"query": QUERY, "variables": {"owner": "o", "name": "r", "n": 1}},
        headers={"Authorization": f"bearer {github_fake.token}"},
    )
    body = answer.json()
    assert answer.status_code == 200
    assert body["data"]["repo"]["a"] == {
        "title": "One",
        "state": "MERGED",
        "isDraft": False,
        "labels": {"nodes": [{"name": "x"}]},
    }
    assert body["data"]["repo"]["b"] is None
    assert body["errors"][0]["type"] == "NOT_FOUND"
    assert body["errors"][0]["path"] == ["repo", "b"]
    assert github_fake.calls[0].keys == [("o/r", 1), ("o/r", 9)]
    assert answer.headers["x-ratelimit-remaining"] == "4999"


def test_graphql_rejects_what_github_would(github_fake: GitHubFake) -> None:
    auth = {"Authorization": f"bearer {github_fake.token}"}
    url = github_fake.api_url + "/graphql"
    bad_field = httpx.post(url, json={"query": "{ rateLimit { nope } }"}, headers=auth).json()
    assert "nope" in bad_field["errors"][0]["message"] and "data" not in bad_field
    missing_var = httpx.post(
        url, json={"query": "query($n: Int!) { rateLimit { cost } }"}, headers=auth
    ).json()
    assert missing_var["errors"]
    assert httpx.post(url, json={"query": "{ rateLimit { cost } }"}).status_code == 401


def test_rest_etag_and_budget(github_fake: GitHubFake) -> None:
    github_fake.add_pr("o/r", 1, title="One")
    url = github_fake.api_url + "/repos/o/r/pulls/1"
    first = httpx.get(url)
    assert first.status_code == 200 and first.json()["title"] == "One"
    again = httpx.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["x-ratelimit-remaining"] == "59"
    assert httpx.get(github_fake.api_url + "/repos/o/r/pulls/2").status_code == 404
    github_fake.rest_limit = 2
    limited = httpx.get(url)
    assert limited.status_code == 403 and limited.headers["x-ratelimit-remaining"] == "0"
    github_fake.fail_next("rest", status=403, retry_after=3)
    assert (
        httpx.get(url, headers={"If-None-Match": first.headers["etag"]}).headers["retry-after"]
        == "3"
    )
