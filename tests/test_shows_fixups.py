"""The tester's findings with three shows (fix-up A1–A5), through signed slash requests to
the real app with the Slack fake, SQLite and PostgreSQL (the ``shows_app`` of
tests/test_shows_commands.py: PyTorch, JAX, Triton)."""

from __future__ import annotations

from tests.fixtures.app import RunningApp
from tests.test_shows_commands import ask, sections, shows_app, text_of

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


def test_a_note_after_a_show_name_reads_mid_sentence(shows_app: RunningApp) -> None:
    ask(shows_app, "subscribe Triton fsdp")
    text = text_of(ask(shows_app, "subscribe JAX PyTorch Triton"))
    assert "*Triton*: it replaces the earlier filter" in text


def test_the_short_usage_shows_the_show_argument_of_the_queries(shows_app: RunningApp) -> None:
    text = text_of(ask(shows_app, "search " + "a" * 600))  # an error of no one subcommand
    assert "takes at most 500" in text
    for usage in ("recent [show] [n]", "latest [show]", "search [show] &lt;words&gt;", "pr [show]"):
        assert usage in text


def test_a_bare_show_name_answers_as_recent_does(shows_app: RunningApp) -> None:
    bare, recent = ask(shows_app, "PyTorch"), ask(shows_app, "recent PyTorch")
    assert "I don't know" not in text_of(bare)
    assert sections(bare) == sections(recent)
    assert sections(ask(shows_app, "jax")) == sections(ask(shows_app, "recent JAX"))


def test_commas_between_show_names_in_subscribe(shows_app: RunningApp) -> None:
    body = ask(shows_app, "subscribe JAX,PyTorch fsdp,dtensor")
    assert sections(body)[1].startswith("Now: *JAX*, *PyTorch* · keywords “fsdp”, “dtensor”")
    again = ask(shows_app, "subscribe JAX, Triton keywords: a,b")
    assert sections(again)[1].startswith("Now: *JAX*, *Triton* · keywords “a,b”")
