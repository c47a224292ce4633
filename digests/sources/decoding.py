"""Undo a response's Content-Encoding a bounded piece at a time.

httpx decodes each network chunk completely, layer after layer, before the caller sees a
byte: 64 KB of ``gzip, gzip`` zeros becomes gigabytes in one call, long before a size cap
can count it. Here every layer is asked for at most ``piece`` bytes per call (zlib's
``max_length``), and the caller counts and stops between pieces, so memory stays at the cap
plus a few pieces however deep the layers or wild the ratio.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

PIECE = 64 * 1024
# Real servers send one layer; a few more are tolerated, a header listing dozens is not
# (each layer holds its own zlib state).
MAX_LAYERS = 3
_GZIP = frozenset({"gzip", "x-gzip"})
_DEFLATE = frozenset({"deflate"})
_IGNORED = frozenset({"", "identity"})


class DecodingRefused(Exception):
    """The encoding cannot be decoded within bounds (too many layers) or is corrupt."""


class _Layer:
    """One zlib stream; ``deflate`` may be zlib-wrapped or raw, as servers disagree."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._raw_fallback = name in _DEFLATE
        wbits = zlib.MAX_WBITS | 16 if name in _GZIP else zlib.MAX_WBITS
        self._zlib = zlib.decompressobj(wbits)

    def decode(self, data: bytes, piece: int) -> Iterator[bytes]:
        pending = data
        while True:
            try:
                out = self._zlib.decompress(pending, piece)
            except zlib.error as exc:
                if not self._raw_fallback:
                    raise DecodingRefused(f"{self.name} data is corrupt") from exc
                self._raw_fallback = False
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._raw_fallback = False
            if out:
                yield out
            pending = self._zlib.unconsumed_tail
            # A full piece may leave output inside zlib even with no input left: ask again.
            if not pending and len(out) < piece:
                return

    def flush(self, piece: int) -> Iterator[bytes]:
        if self._zlib.eof:
            return
        yield from self.decode(b"", piece)


def layers_of(values: Sequence[str]) -> list[str]:
    """The Content-Encoding tokens to undo, in the order they were applied. Tokens we do
    not decode are skipped, as httpx does: the bytes then reach the parser as they are."""
    names = [v.strip().lower() for value in values for v in value.split(",")]
    return [n for n in names if n in _GZIP or n in _DEFLATE]


class BoundedDecoder:
    """Feed raw body chunks in; get decoded pieces of at most ``piece`` bytes out."""

    def __init__(self, encodings: Sequence[str], piece: int = PIECE) -> None:
        names = layers_of(encodings)
        if len(names) > MAX_LAYERS:
            raise DecodingRefused(f"{len(names)} stacked content encodings")
        # Undone last-applied first.
        self._layers = [_Layer(n) for n in reversed(names)]
        self._piece = piece

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._layers):
            if data:
                yield data
            return
        for out in self._layers[index].decode(data, self._piece):
            yield from self._through(index + 1, out)

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self._layers:
            # Identity: still cut into pieces so the caller's count stays fine-grained.
            for start in range(0, len(data), self._piece):
                yield data[start : start + self._piece]
            return
        yield from self._through(0, data)

    def flush(self) -> Iterator[bytes]:
        for index, layer in enumerate(self._layers):
            for out in layer.flush(self._piece):
                yield from self._through(index + 1, out)


__all__ = ["MAX_LAYERS", "PIECE", "BoundedDecoder", "DecodingRefused", "layers_of"]
