"""`digestbot render` with PR details: asked of GitHub (the fake) and stored; `--no-github`
asks nothing and renders as without GitHub."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.cli import run_cli
from tests.githubfake import GitHubFake
from tests.test_cli import EXAMPLE_FEED


def env_for(fake: GitHubFake, tmp_path: Path) -> dict[str, str]:
    return {
        "GITHUB_API_URL": fake.api_url,
        "GITHUB_TOKEN": fake.token,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }


def test_render_shows_titles_from_github(github_fake: GitHubFake, tmp_path: Path) -> None:
    github_fake.add_pr(
        "pytorch/pytorch",
        199720,
        title="Stack-aware merges",
        state="closed",
        labels=["Merged", "release notes: distributed"],
    )
    result = run_cli("render", str(EXAMPLE_FEED), env=env_for(github_fake, tmp_path))
    assert result.returncode == 0, result.stderr
    assert "*Stack-aware merges* · merged · distributed" in result.stdout
    assert len(github_fake.calls) == 1
    again = run_cli("render", str(EXAMPLE_FEED), env=env_for(github_fake, tmp_path))
    assert "Stack-aware merges" in again.stdout and len(github_fake.calls) == 1  # stored


def test_no_github_asks_nothing(github_fake: GitHubFake, tmp_path: Path) -> None:
    github_fake.add_pr("pytorch/pytorch", 199720, title="Stack-aware merges")
    plain = run_cli("render", str(EXAMPLE_FEED))
    skipped = run_cli(
        "render", str(EXAMPLE_FEED), "--no-github", env=env_for(github_fake, tmp_path)
    )
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout == plain.stdout and github_fake.calls == []


def test_github_unreachable_still_renders(tmp_path: Path) -> None:
    env = {"GITHUB_API_URL": "http://127.0.0.1:9", "DATABASE_URL": f"sqlite:///{tmp_path}/d.db"}
    result = run_cli("render", str(EXAMPLE_FEED), "--format", "text", env=env)
    assert result.returncode == 0, result.stderr
    assert "#199720" in result.stdout
