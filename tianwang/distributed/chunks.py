"""A chunk: the requests of a node's queue past its window, packed (docs/design.md section 10).

Data only, as a request is (schema.py): zlib over msgpack of ``[version, buckets, ids,
scores, requests]``, the entries sorted by request so that a host's urls sit together and
zlib finds what they share. A member is "<bucket>:<id>"; a score is an integer in a double
(tianwang/order.py), kept as an int. Inflating is bounded: a chunk is a thousand requests,
and a blob that would inflate past MAX_BYTES, or is not of this shape, is ChunkError (the
frontier sets it aside). No Scrapy import here.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import msgpack

VERSION = 1
LEVEL = 6
MAX_BYTES = 64 << 20  # a chunk of 1,000 requests inflates to about 100 KB


class ChunkError(ValueError):
    """A blob that is no chunk of this version."""


def pack_chunk(entries: Sequence[tuple[bytes, str, float]]) -> bytes:
    """(request, member, score) entries, as one chunk."""
    ordered = sorted(entries)
    buckets, ids = [], []
    for _blob, member, _score in ordered:
        bucket, ident = member.split(":", 1)
        buckets.append(int(bucket))
        ids.append(int(ident))
    body = [VERSION, buckets, ids, [int(score) for _b, _m, score in ordered],
            [blob for blob, _m, _s in ordered]]
    return zlib.compress(msgpack.packb(body, use_bin_type=True), LEVEL)


def unpack_chunk(data: bytes) -> list[tuple[str, int, bytes]]:
    """(member, score, request) of each entry of a chunk; ChunkError for a blob that is none."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ChunkError("not a whole chunk, or one past its bound")
        version, buckets, ids, scores, blobs = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except (zlib.error, ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData) as error:
        raise ChunkError(f"no chunk ({error})") from None
    columns = (buckets, ids, scores, blobs)
    if version != VERSION or not all(isinstance(c, list) and len(c) == len(ids) for c in columns):
        raise ChunkError(f"not a chunk of version {VERSION}")
    if not all(isinstance(v, int) and not isinstance(v, bool)
               for v in (*buckets, *ids, *scores)) or not all(isinstance(b, bytes) for b in blobs):
        raise ChunkError("a chunk's columns are not of their types")
    rows = zip(buckets, ids, scores, blobs, strict=True)
    return [(f"{bucket}:{ident}", score, blob) for bucket, ident, score, blob in rows]
