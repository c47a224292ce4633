"""Parsing: bytes of a feed or page → ``ParsedSource``; detection by content, not name.

CONTRACT (implemented by the parse work):
``parse_bytes(data: bytes, source: str, content_type: str | None = None) -> ParsedSource``
raising ``FeedParseError``; then ``digests.extract.build_episodes(parsed, show, repo)``.
"""
