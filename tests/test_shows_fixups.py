"""The tester's findings with three shows (fix-up A1–A5), through signed slash requests to
the real app with the Slack fake, SQLite and PostgreSQL (the ``shows_app`` of
tests/test_shows_commands.py: PyTorch, JAX, Triton)."""

from __future__ import annotations

from tests.fixtures.app import RunningApp
from tests.test_shows_commands import ask, shows_app, text_of

__all__ = ["shows_app"]  # the fixture, used by name


def test_a_misspelt_show_in_preview_gets_a_hint_with_several_shows(
    shows_app: RunningApp,
) -> None:
    body = ask(shows_app, "preview Pytroch x")
    assert "There is no show called Pytroch — did you mean PyTorch?" in text_of(body)
    assert "There is no show called `Nope`" in text_of(ask(shows_app, "preview Nope x"))


def test_a_multi_show_subscribe_offers_a_preview_of_each_show(shows_app: RunningApp) -> None:
    body = ask(shows_app, "subscribe PyTorch JAX fsdp")
    assert (
        "Which recent episodes this lets through: `/episodes preview PyTorch fsdp` · "
        "`/episodes preview JAX fsdp`"
    ) in text_of(body)

