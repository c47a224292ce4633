"""Compressed bodies are decoded a bounded piece at a time: a gzip bomb,
stacked once, twice or three times, stops at the size cap with memory near the cap."""

from __future__ import annotations

import gzip
import zlib

import httpx
import pytest

from digests.errors import FetchError
from digests.sources.decoding import MAX_LAYERS, PIECE, BoundedDecoder, DecodingRefused
from digests.sources.fetch import fetch
from tests.feedserver import FeedServer
from tests.hostile import MB, encoding_header, fetch_peak_in_child, zeros_bomb

CAP = 20 * MB
RSS = b"<?xml version='1.0'?><rss version='2.0'><channel><title>T</title></channel></rss>"


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_gzip_bomb_peak_rss_stays_near_the_cap(feed_server: FeedServer, layers: int) -> None:
    # 256 MB of zeros: 265 KB on the wire in one layer, 672 bytes in two, 141 in three.
    # Before: the child grew 192 MB (one layer) and 771 MB (two, three) before refusing.
    body = zeros_bomb(256 * MB, layers)
    headers = {"Content-Encoding": encoding_header(layers)}
    url = feed_server.route("/bomb.xml", body, headers=headers)
    peak = fetch_peak_in_child(url, max_bytes=CAP)
    assert peak.error is not None and peak.error.endswith("larger than 20 MB")
    # The cap's worth of decoded pieces, plus a few pieces in flight and the client's state.
    assert peak.grew < CAP + 12 * MB, f"fetch grew the child by {peak.grew / MB:.0f} MB"


async def test_stacked_encodings_decode_to_the_original(feed_server: FeedServer) -> None:
    body = gzip.compress(zlib.compress(RSS))
    url = feed_server.route("/feed.xml", body, headers={"Content-Encoding": "deflate, gzip"})
    async with httpx.AsyncClient() as client:
        result = await fetch(client, url)
    assert result.content == RSS


async def test_too_many_layers_are_refused(feed_server: FeedServer) -> None:
    body = RSS
    for _ in range(MAX_LAYERS + 1):
        body = gzip.compress(body)
    url = feed_server.route(
        "/feed.xml", body, headers={"Content-Encoding": encoding_header(MAX_LAYERS + 1)}
    )
    async with httpx.AsyncClient() as client:
        with pytest.raises(FetchError, match="4 stacked content encodings"):
            await fetch(client, url)


async def test_corrupt_gzip_is_one_line(feed_server: FeedServer) -> None:
    url = feed_server.route("/feed.xml", b"not gzip at all", headers={"Content-Encoding": "gzip"})
    async with httpx.AsyncClient() as client:
        with pytest.raises(FetchError, match="could not be decoded") as info:
            await fetch(client, url)
    assert "\n" not in str(info.value)


async def test_only_decodable_encodings_are_offered(feed_server: FeedServer) -> None:
    url = feed_server.route("/feed.xml", RSS)
    async with httpx.AsyncClient() as client:
        await fetch(client, url)
    assert feed_server.requests[-1].header("Accept-Encoding") == "gzip, deflate"


# the decoder itself ------------------------------------------------------------------------


def _decode(decoder: BoundedDecoder, data: bytes, feed: int = 1000) -> list[bytes]:
    pieces: list[bytes] = []
    for start in range(0, len(data), feed):
        pieces.extend(decoder.feed(data[start : start + feed]))
    pieces.extend(decoder.flush())
    return pieces


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("encodings", "encode"),
    [
        ([], lambda b: b),
        (["identity"], lambda b: b),
        (["gzip"], gzip.compress),
        (["x-gzip"], gzip.compress),
        (["deflate"], zlib.compress),
        (["deflate"], _raw_deflate),  # servers that send raw deflate under that name
        (["gzip, gzip"], lambda b: gzip.compress(gzip.compress(b))),
        (["gzip", "deflate"], lambda b: zlib.compress(gzip.compress(b))),
        (["GZip , identity"], gzip.compress),
        (["br"], lambda b: b),  # not ours to decode: passed on as httpx does
    ],
)
def test_decoder_round_trips_in_bounded_pieces(encodings: list[str], encode: object) -> None:
    original = bytes(range(256)) * 2000 + b"\0" * (3 * PIECE)
    assert callable(encode)
    pieces = _decode(BoundedDecoder(encodings), encode(original))
    assert b"".join(pieces) == original
    assert max(len(p) for p in pieces) <= PIECE


def test_decoder_never_yields_more_than_a_piece_from_a_bomb() -> None:
    bomb = zeros_bomb(64 * MB, 2)
    decoder = BoundedDecoder(["gzip", "gzip"])
    seen = 0
    for piece in decoder.feed(bomb):
        assert len(piece) <= PIECE
        seen += len(piece)
        if seen > 4 * MB:
            break  # the caller stops here; nothing beyond was ever inflated
    assert seen > 4 * MB


def test_decoder_refuses_too_many_layers() -> None:
    with pytest.raises(DecodingRefused):
        BoundedDecoder(["gzip"] * (MAX_LAYERS + 1))
