"""How a PR is named to a reader: ``#123`` in the show's own repository, ``owner/repo#123``
in any other, so a link to triton-lang/triton in a PyTorch digest is not read as PyTorch's.

Pure and small, shared by every surface (digest, thread, recap, week, ``pr`` answers).
"""

from __future__ import annotations

import re

__all__ = ["pr_label", "pr_repo"]

_PR_URL_RE = re.compile(r"^https?://(?:www\.)?github\.com/([\w.-]+)/([\w.-]+)/pull/\d+(?:[/?#]|$)")


def pr_repo(url: str | None) -> str | None:
    """``owner/repo`` of a GitHub pull request URL; ``None`` for anything else (no URL: a PR
    of no known repository)."""
    m = _PR_URL_RE.match(url or "")
    return f"{m.group(1)}/{m.group(2)}" if m else None


def pr_label(number: int | str, url: str | None, repo: str | None) -> str:
    """``#n`` for a PR of ``repo`` (the show's; GitHub names are case-insensitive), of no
    known repository, or when the show's repository is not known; ``owner/repo#n`` else."""
    other = pr_repo(url)
    if other is None or not repo or other.casefold() == repo.casefold():
        return f"#{number}"
    return f"{other}#{number}"
