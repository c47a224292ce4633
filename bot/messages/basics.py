"""What every part of the wording shares: the command's name, its length cap, counted nouns."""

COMMAND = "/episodes"
MAX_TEXT = 500


def plural(n: int, word: str) -> str:
    """``1 episode``, ``0 episodes``, ``2 episodes``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
