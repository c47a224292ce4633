"""``digestbot`` command line: parse, render, run, serve, clock, worker, jobs, recap.

Every failure the user can fix ends as one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from config.settings import Settings, ShowConfig, load_settings
from digests.errors import DigestError, EpisodeNotFound
from digests.models import Episode
from digests.redact import redact_url

PROG = "digestbot"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Slack digests of developer-briefing podcast episodes."
    )
    parser.add_argument(
        "--config", metavar="PATH", help="TOML config file (default: $DIGESTBOT_CONFIG or bundled)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="the main job: web app + scheduler (or one poll with --once)")
    run.add_argument("--once", action="store_true", help="poll every show, deliver, exit")
    sub.add_parser("serve", help="HTTP handlers only (Procfile web)")
    sub.add_parser(
        "clock", help="scheduler and delivery only (on PostgreSQL: a worker, as `worker`)"
    )
    worker = sub.add_parser("worker", help="run the job queue's jobs (PostgreSQL; Procfile worker)")
    worker.add_argument("--name", help="the worker's name in logs and `jobs`")
    sub.add_parser("jobs", help="the job queue: jobs per queue and state, due polls")

    parse = sub.add_parser("parse", help="parse a feed or episode page")
    parse.add_argument("source", help="path or URL of a feed or an episode page")
    parse.add_argument("--json", action="store_true", help="print episodes as JSON (newest first)")
    _show_options(parse)

    render = sub.add_parser("render", help="render the digest of an episode")
    render.add_argument("source", help="path or URL of a feed or an episode page")
    render.add_argument("--episode", metavar="GUID", help="this episode instead of the newest")
    render.add_argument("--format", choices=("blocks", "text"), default="blocks")
    render.add_argument(
        "--no-github", action="store_true", help="no PR details from GitHub or the store"
    )
    _show_options(render)

    recap = sub.add_parser("recap", help="the weekly recap (Block Kit JSON or text)")
    recap.add_argument(
        "--week",
        metavar="WEEK",
        help="2026-W41, w41, last, this or a day in the week (default: last complete week)",
    )
    recap.add_argument("--show", metavar="NAME", action="append", help="only this show")
    recap.add_argument("--format", choices=("blocks", "text"), default="blocks")
    recap.add_argument("--post", action="store_true", help="post it to each --channel")
    recap.add_argument(
        "--channel", metavar="ID", action="append", help="Slack channel ID to post to (repeatable)"
    )
    return parser


def _show_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--show", metavar="NAME", help="show name (default: from the source)")
    parser.add_argument("--repo", metavar="OWNER/NAME", help="where 'PR 123' points")
    parser.add_argument(
        "--allow-private",
        action="store_true",
        help="let the source and its redirects reach private addresses",
    )


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    args = _parser().parse_args(argv)
    # One-shot commands report through their output and one error line; services log.
    one_shot = args.command in ("parse", "render", "recap") or getattr(args, "once", False)
    quiet = logging.ERROR if one_shot else logging.WARNING
    before = list(logging.getLogger().handlers)
    logging.basicConfig(
        level=logging.INFO if args.verbose else quiet,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        settings = load_settings(args.config)
        from bot import logs
        # Only the handler made here: one already there (a test's capture) keeps its format.
        logs.configure(settings, [h for h in logging.getLogger().handlers if h not in before])
        logs.redact_library_logs()  # -v: httpx's request lines without feed credentials
        _warn_stale_build(one_shot)
        return _dispatch(args, settings, out)
    except DigestError as exc:
        print(f"{PROG}: error: {exc.format_message()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `digestbot … | head`: the reader left; say nothing more, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _warn_stale_build(one_shot: bool) -> None:
    """A compiled module whose source changed since the build runs its old code: said once
    at start, where a developer who edited it will look (setup.py, digests/native.py). A
    one-shot command logs errors only, so it says so on stderr as it says its errors."""
    from digests import native

    for source in native.stale_modules():
        message = native.stale_message(source)
        if one_shot:
            print(f"{PROG}: warning: {message}", file=sys.stderr)
        else:
            logging.getLogger("digestbot").warning("%s", message)


def _dispatch(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    command = args.command
    if command == "parse":
        episodes = _episodes_from(settings, args.source, args.show, args.repo, args.allow_private)
        if args.json:
            json.dump([e.to_json() for e in episodes], out, indent=2, ensure_ascii=False)
            out.write("\n")
        else:
            from digests.models import UNKNOWN_DATE

            for episode in episodes:
                prs = len(episode.pull_requests)
                # The JSON keeps the contract's UTC ISO date (null: undated); people read the
                # day where they are, as every digest shows it, or a word.
                when = (
                    "undated"
                    if episode.published_at == UNKNOWN_DATE
                    else f"{episode.published_at.astimezone(settings.tz):%Y-%m-%d}"
                )
                count = f"{prs} PR" if prs == 1 else f"{prs} PRs"
                out.write(f"{when:<10}  {episode.headline}  ({count})\n")
        return 0
    if command == "render":
        episodes, settings = _read_source(
            settings, args.source, args.show, args.repo, args.allow_private
        )
        episode = _choose(episodes, args.episode, args.source)
        if settings.github_enabled and not args.no_github:
            from bot.jobs.enrichment import render_details

            episode = render_details(settings, episode)
        _print_rendered(settings, episode, args.format, out)
        return 0
    if command == "recap":
        return asyncio.run(_recap(settings, args, out))
    if command == "run" and args.once:
        return asyncio.run(_run_once(settings, out))
    from bot import service

    if command == "run":
        asyncio.run(service.run_all(settings))
    elif command == "serve":
        asyncio.run(service.run_web(settings))
    elif command == "clock":
        asyncio.run(service.run_clock(settings))
    elif command == "worker":
        asyncio.run(service.run_worker(settings, name=args.name))
    elif command == "jobs":
        return service.print_jobs(settings, out)
    return 0


def _episodes_from(
    settings: Settings,
    source: str,
    show: str | None,
    repo: str | None,
    allow_private: bool = False,
) -> list[Episode]:
    return _read_source(settings, source, show, repo, allow_private)[0]


def _read_source(
    settings: Settings,
    source: str,
    show: str | None,
    repo: str | None,
    allow_private: bool = False,
) -> tuple[list[Episode], Settings]:
    """The pipeline's fetch → parse → extract phases, and ``settings`` with the show among
    its shows when it is one added from Slack. The show: ``--show``, else the one the
    source names, else (a source naming none) the first configured. Its repository:
    ``--repo``, else the configured (or added) show's; a show neither configured nor added
    has none, so a PR it names without a link points where the source's own PR links do,
    or nowhere."""
    from bot.jobs.ingest import FeedRequest, extract_episodes, fetch_feed, parse_feed
    from digests.sources.fetch import make_http_client, private_policy

    request = FeedRequest(
        source, settings.max_feed_bytes, allow_private=private_policy(source, allow_private)
    )

    async def get() -> bytes:
        async with make_http_client() as client:
            result = await fetch_feed(client, request)
        return result.content or b""

    parsed = parse_feed(asyncio.run(get()), source)
    named = show or parsed.show_title
    configured = settings.show(named or "")
    if configured is None and named:
        configured = _added_show(settings, named)
        if configured is not None:
            settings = settings.model_copy(update={"shows": [*settings.shows, configured]})
    if configured is None and not named and settings.shows:
        configured = settings.shows[0]
    name = show or (configured.name if configured else None) or parsed.show_title or "Podcast"
    known = repo or (configured.repo if configured else None)
    if known:
        prs = configured.prs if configured is not None else "mentions"
        return list(extract_episodes(parsed, name, known, prs)), settings
    return [_unpointed(e) for e in extract_episodes(parsed, name, _NO_REPO)], settings


def _added_show(settings: Settings, name: str) -> ShowConfig | None:
    """The show called ``name`` that was added from Slack, read from ``DATABASE_URL``; None
    when there is none or no database yet (a SQLite file is not created for the asking)."""
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        path = url.database or ""
        if path in ("", ":memory:") or not Path(path).exists():
            return None
    from bot.catalog import find_show
    from digests.store import Store

    store = Store.open(settings.database_url)
    try:
        return find_show(settings, store, name)
    finally:
        store.close()


# Where extraction points a PR named without a link when the show's repository is unknown:
# a name no GitHub repository can have (a leading dot), replaced before anyone sees it.
_NO_REPO = ".digestbot/.unknown"
_NO_REPO_BASE = f"https://github.com/{_NO_REPO}/pull/"


def _unpointed(episode: Episode) -> Episode:
    """The episode's PRs named without a link, pointed at the one repository the episode
    links PRs of, or at nothing (several, or none): never at a guessed one."""
    from dataclasses import replace

    from digests.render.prs import pr_repo

    linked = {
        r.casefold(): r
        for pr in episode.pull_requests
        if not pr.url.startswith(_NO_REPO_BASE) and (r := pr_repo(pr.url))
    }
    base = f"https://github.com/{next(iter(linked.values()))}/pull/" if len(linked) == 1 else ""
    refs, seen = [], set()
    for pr in episode.pull_requests:
        if pr.url.startswith(_NO_REPO_BASE):
            pr = replace(pr, url=f"{base}{pr.number}" if base else "")
        key = pr.url or f"#{pr.number}"
        if key not in seen:
            seen.add(key)
            refs.append(pr)
    return episode.model_copy(update={"pull_requests": tuple(refs)})


def _choose(episodes: list[Episode], guid: str | None, source: str) -> Episode:
    if not episodes:
        raise EpisodeNotFound(f"{redact_url(source)} has no episodes")
    if guid is None:
        return episodes[0]
    for episode in episodes:
        if episode.guid == guid:
            return episode
    raise EpisodeNotFound(f"{redact_url(source)} has no episode with guid {guid!r}")


def _print_rendered(settings: Settings, episode: Episode, fmt: str, out: TextIO) -> None:
    from digests.render.renderer import Renderer

    renderer = Renderer.of(settings)
    if fmt == "text":
        out.write(renderer.digest_text(episode).rstrip("\n") + "\n")
    else:
        _dump(renderer.digest(episode), out)


def _dump(payload: Any, out: TextIO) -> None:
    json.dump(payload, out, indent=2, ensure_ascii=False)
    out.write("\n")


async def _run_once(settings: Settings, out: TextIO) -> int:
    from bot import service

    report = await service.run_once(settings, out)
    # Shows the cycle could not finish (the store failing mid-poll): one line, exit 2.
    errors: list[str] = list(getattr(report, "errors", None) or [])
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        print(f"{PROG}: error: {errors[0]}{more}", file=sys.stderr)
        return 2
    return 0 if report is None or not getattr(report, "fatal", False) else 1


async def _recap(settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    from bot import service

    return await service.recap(
        settings,
        out,
        week=args.week,
        shows=args.show,
        fmt=args.format,
        post=args.post,
        channels=args.channel or [],
    )
