"""A newcomer follows one episode from its feed to Slack through the folders in order: the
numbered stages of docs/architecture.md are folders, and the functions the pipeline calls
for each stage live in that stage's folder, in that order — no back-and-forth."""

from __future__ import annotations

import re
from pathlib import Path

from bot.delivery.deliverer import Deliverer
from bot.jobs import ingest, pipeline, plan
from digests.decide.deliveries import decide
from digests.decide.update import decide_upsert
from digests.extract.episodes import build_episodes
from digests.linked.transcripts import linked_documents_phase
from digests.parse import parse_bytes
from digests.render.renderer import Renderer
from digests.sources.fetch import fetch
from digests.store.episodes import EpisodesMixin

ROOT = Path(__file__).resolve().parent.parent
_STAGE = re.compile(r"^\*\*(\d+b?) [^*]+\*\* — `([\w/]+)/`", re.M)

# What the pipeline calls at each stage, in the order an episode meets them.
CALLED = (
    fetch,
    parse_bytes,
    build_episodes,
    linked_documents_phase,
    EpisodesMixin.upsert_episodes,
    decide_upsert,
    decide,
    Renderer.digest,
    Deliverer.deliver,
)


def stages() -> list[str]:
    return [folder for _, folder in _STAGE.findall((ROOT / "docs/architecture.md").read_text())]


def folder_of(function: object) -> str:
    module = getattr(function, "__module__", "")
    return "/".join(module.split(".")[:2])


def test_each_numbered_stage_is_a_folder() -> None:
    assert stages()[:3] == ["digests/sources", "digests/parse", "digests/extract"]
    assert all((ROOT / folder).is_dir() for folder in stages())


def test_the_pipeline_calls_each_stage_in_its_folder_in_flow_order() -> None:
    order = stages()
    folders = [folder_of(function) for function in CALLED]
    assert all(folder in order for folder in folders), folders
    positions = [order.index(folder) for folder in folders]
    assert positions == sorted(positions), folders


def test_the_orchestration_of_a_poll_is_in_one_folder() -> None:
    # The pipeline's phase functions, from the read of a feed to its delivery, are jobs'.
    assert {m.__name__.rsplit(".", 1)[0] for m in (ingest, pipeline, plan)} == {"bot.jobs"}
    assert ingest.read_feed.__module__ == "bot.jobs.ingest"
    assert pipeline.poll_show.__module__ == "bot.jobs.pipeline"


def test_a_subcommand_is_in_one_folder() -> None:
    """Adding one touches ``bot/listeners/commands/``: its record, its handler and the table
    between them are there, and every command has a handler there."""
    import typing

    from bot.listeners import commands
    from bot.listeners.commands import model

    handled = commands._HANDLERS
    assert set(typing.get_args(model.Command)) == set(handled)
    for handler in handled.values():
        assert handler.__module__.startswith("bot.listeners.commands"), handler
