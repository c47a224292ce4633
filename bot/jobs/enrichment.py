"""The enrich phase in the bot: PR details from GitHub, never in a digest's way.

The poll cycle posts with the details already stored (``attach_details``, in the plan
phase) and starts ``start_enrichment`` beside delivery; once GitHub has answered, the cycle
plans the enriched shows again, and the digests whose PRs now read differently have a new
content hash, so the ledger's edit path updates them (message and thread) in place. Only
when GitHub is enabled (``Settings.github_enabled``); otherwise nothing here runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import httpx

from bot.catalog import added_shows, find_show
from bot.messages.answers import PR_DETAILS, PR_DETAILS_AREA, PR_DETAILS_AUTHOR, PR_NOT_ON_GITHUB
from config.settings import Settings
from digests.enrich.client import USER_AGENT, GitHubClient
from digests.enrich.details import EnrichReport, enrich
from digests.models import Episode, PullRequestRef
from digests.pulls import PrRules, area, pr_key, shown_state, with_details
from digests.render import escape
from digests.sources.fetch import tls_context
from digests.store import Store
from digests.store.pr_details import PrDetailsStore

log = logging.getLogger(__name__)

# GraphQL cuts a query off at 10 s; a little more than that before we call it a timeout.
GITHUB_TIMEOUT = 15.0
# Episodes per show whose PRs are kept fresh: the ones a poll may still post or edit.
ENRICHED_PER_SHOW = 25


def make_github_http(
    observe: Callable[[httpx.Response], None] | None = None,
) -> httpx.AsyncClient:
    """GitHub is one fixed, trusted host (``GITHUB_API_URL``): no feed guards, but a timeout.
    ``observe`` sees every answer (metrics: status, rate budget)."""

    async def seen(response: httpx.Response) -> None:
        if observe is not None:
            observe(response)

    return httpx.AsyncClient(
        timeout=httpx.Timeout(GITHUB_TIMEOUT),
        headers={"User-Agent": USER_AGENT},
        verify=tls_context(trust_env=True),
        event_hooks={"response": [seen]} if observe is not None else None,
    )


def github_client(settings: Settings, http: httpx.AsyncClient) -> GitHubClient:
    return GitHubClient(
        http, settings.github_base_url, settings.github_token, backoff=settings.github_retry_seconds
    )


def _show_rules(settings: Settings, store: Store, show: str) -> tuple[str, PrRules]:
    """The show's repository and PR rules: the config file's show, else one added from
    Slack (its repository as ``add-show`` was given it)."""
    config = find_show(settings, store, show)
    if config is None:
        return "", PrRules()
    return config.repo, config.pr_rules()


def attach_details(settings: Settings, store: Store, episodes: Sequence[Episode]) -> list[Episode]:
    """``episodes`` carrying their stored PR details (unchanged when GitHub is off)."""
    if not settings.github_enabled or not any(e.pull_requests for e in episodes):
        return list(episodes)
    shows = {name: _show_rules(settings, store, name) for name in {e.show for e in episodes}}
    keys = [pr_key(pr, shows[e.show][0]) for e in episodes for pr in e.pull_requests]
    details = PrDetailsStore(store).get(keys)
    return [with_details(e, details, *shows[e.show]) for e in episodes]


def attach_one(settings: Settings, store: Store, episode: Episode | None) -> Episode | None:
    """One stored episode with its stored PR details (for answers: latest, Key PRs)."""
    return None if episode is None else attach_details(settings, store, [episode])[0]


async def enrich_shows(
    settings: Settings,
    store: Store,
    client: GitHubClient,
    shows: Sequence[str],
    now: datetime,
) -> EnrichReport:
    """Refresh what is due for the shows' newest episodes. Never raises: a failure is
    logged and reported as nothing learnt (the next cycle tries again)."""
    try:
        pairs: list[tuple[Episode, str]] = []
        for show in shows:
            repo = (await asyncio.to_thread(_show_rules, settings, store, show))[0]
            recent = await asyncio.to_thread(store.recent, ENRICHED_PER_SHOW, [show])
            pairs += [(e, repo) for e in recent if repo]
        report = await enrich(client, PrDetailsStore(store), pairs, now)
    except Exception:
        log.exception("GitHub enrichment failed")
        return EnrichReport(stopped="enrichment failed")
    if report.stopped:
        log.warning("GitHub: %s (learnt %d of %d)", report.stopped, report.learnt, report.asked)
    return report


class GitHubSession:
    """One GitHub client for a long-lived process (the clock's poll jobs): its calls are
    serialised across jobs (no concurrent bursts) and a rate limit's reset is remembered
    from one cycle to the next, so no call is made before it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._http: httpx.AsyncClient | None = None
        self._client: GitHubClient | None = None
        self.observe: Callable[[httpx.Response], None] | None = None  # every answer

    def client(self) -> GitHubClient | None:
        """The shared client (made on first use); None when GitHub is off."""
        if not self._settings.github_enabled:
            return None
        if self._client is None:
            self._http = make_github_http(self.observe)
            self._client = github_client(self._settings, self._http)
        return self._client

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        self._http = self._client = None


def start_enrichment(
    settings: Settings,
    store: Store,
    shows: Sequence[str],
    now: datetime,
    client: GitHubClient | None = None,
) -> asyncio.Task[EnrichReport] | None:
    """``enrich_shows`` as a task beside delivery, with ``client`` or a client of its own;
    None when GitHub is off or there is nothing to enrich."""
    if not settings.github_enabled or not shows:
        return None

    async def run() -> EnrichReport:
        if client is not None:
            return await enrich_shows(settings, store, client, shows, now)
        # The first client of the process loads the whole CA bundle: off the
        # loop, so the digests being posted meanwhile do not wait for it.
        async with await asyncio.to_thread(make_github_http) as http:
            return await enrich_shows(settings, store, github_client(settings, http), shows, now)

    return asyncio.create_task(run(), name="github-enrichment")


async def enrich_episode(
    settings: Settings, store: Store, episode: Episode, repo: str, now: datetime
) -> Episode:
    """One episode with fresh details, waiting for GitHub (the CLI's ``render``)."""
    async with make_github_http() as http:
        await enrich(github_client(settings, http), PrDetailsStore(store), [(episode, repo)], now)
    details = PrDetailsStore(store).get(pr_key(pr, repo) for pr in episode.pull_requests)
    rules = _show_rules(settings, store, episode.show)[1]
    return with_details(episode, details, repo, rules)


def pr_details_line(settings: Settings, store: Store, url: str | None, number: int) -> str | None:
    """``/episodes pr N``'s first line: title, state, author (and area) as stored, as mrkdwn;
    None when GitHub is off or nothing is known yet."""
    if not settings.github_enabled or url is None:
        return None
    repo = pr_key(PullRequestRef(number, url), "")[0]
    if not repo:
        return None
    details = PrDetailsStore(store).get([(repo, number)]).get((repo, number))
    if details is None:
        return None
    if details.missing:
        return escape.mrkdwn(PR_NOT_ON_GITHUB.format(number=number, repo=repo))
    shows = settings.shows
    if not any(s.repo == repo for s in shows):
        shows = [*shows, *added_shows(settings, store)]
    rules = next((s.pr_rules() for s in shows if s.repo == repo), PrRules())
    line = PR_DETAILS.format(
        title=escape.mrkdwn(escape.truncate(escape.oneline(details.title), 200)),
        state=shown_state(details, rules) or "",
    )
    if details.author:
        line += PR_DETAILS_AUTHOR.format(author=escape.mrkdwn(details.author))
    where = area(details.labels)
    if where:
        line += PR_DETAILS_AREA.format(area=escape.mrkdwn(escape.oneline(where)))
    return line


def render_details(settings: Settings, episode: Episode) -> Episode:
    """``digestbot render``: the episode with its PRs' details, asked of GitHub when due and
    kept in the store (``DATABASE_URL``) like the bot's own."""
    store = Store.open(settings.database_url)
    try:
        now = datetime.now(UTC)
        return asyncio.run(enrich_episode(settings, store, episode, "", now))
    finally:
        store.close()
