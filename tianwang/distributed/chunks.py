"""A chunk: the requests of a node's queue past its window, packed (docs/design.md section 10).

Data only, as a request is (schema.py): zlib over msgpack of ``[version, buckets, ids,
ranks, arrivals, requests]``, the entries sorted by request so that a host's urls sit
together and zlib finds what they share. A member is "<bucket>:<id>"; a score is a rank and
an arrival (tianwang/order.py), kept apart: the ranks of a chunk's requests (its node's worst)
are few, and an arrival is the id but for a request raised by a link, so it is kept as the
difference (mostly 0): both compress, where the scores as doubles cost 9 bytes a request.
Inflating is bounded: a chunk is a thousand requests, and a blob that would inflate past
MAX_BYTES, or is not of this shape, is ChunkError (the frontier sets it aside). No Scrapy
import here.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import msgpack

from tianwang.order import ident_of, rank_in, score_of

VERSION = 1
LEVEL = 6
MAX_BYTES = 64 << 20  # a chunk of 1,000 requests inflates to about 100 KB


class ChunkError(ValueError):
    """A blob that is no chunk of this version."""


def pack_chunk(entries: Sequence[tuple[bytes, str, float]]) -> bytes:
    """(request, member, score) entries, as one chunk."""
    ordered = sorted(entries)
    buckets, ids, ranks, arrivals = [], [], [], []
    for _blob, member, score in ordered:
        bucket, ident = member.split(":", 1)
        buckets.append(int(bucket))
        ids.append(int(ident))
        ranks.append(rank_in(score))
        arrivals.append(ident_of(score) - ids[-1])
    body = [VERSION, buckets, ids, ranks, arrivals, [blob for blob, _m, _s in ordered]]
    return zlib.compress(msgpack.packb(body, use_bin_type=True), LEVEL)


def unpack_chunk(data: bytes) -> list[tuple[str, int, bytes]]:
    """(member, score, request) of each entry of a chunk; ChunkError for a blob that is none."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ChunkError("not a whole chunk, or one past its bound")
        version, buckets, ids, ranks, arrivals, blobs = msgpack.unpackb(
            raw, raw=False, strict_map_key=True)
    except (zlib.error, ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData) as error:
        raise ChunkError(f"no chunk ({error})") from None
    columns = (buckets, ids, ranks, arrivals, blobs)
    if version != VERSION or not all(isinstance(c, list) and len(c) == len(ids) for c in columns):
        raise ChunkError(f"not a chunk of version {VERSION}")
    if not all(isinstance(v, int) and not isinstance(v, bool)
               for v in (*buckets, *ids, *ranks, *arrivals)) or not all(
                   isinstance(b, bytes) for b in blobs):
        raise ChunkError("a chunk's columns are not of their types")
    try:
        return [(f"{bucket}:{ident}", int(score_of(ident + late, rank)), blob)
                for bucket, ident, rank, late, blob
                in zip(buckets, ids, ranks, arrivals, blobs, strict=True)]
    except ValueError as error:  # an arrival out of its range
        raise ChunkError(str(error)) from None
