"""Export a Tianwang record tree to WARC, for the web-archive tools people already use.

One `response` record per stored page: WARC-Target-URI is the url the page was stored
under, WARC-Date its crawl time, WARC-IP-Address the address it came from, and the
payload digest (sha1 of the body as the server sent it) is computed by warcio. A page
stored after a redirect also carries the url first asked for, as `WARC-Tianwang-Origin`.
No Scrapy import here.
"""

from __future__ import annotations

import io
import os
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path

from warcio.warcwriter import WARCWriter

from tianwang.formats.atomic import replacing
from tianwang.formats.http import parse_http_head
from tianwang.formats.record import OnDamage, Record, RecordError
from tianwang.formats.store import iter_tree

ORIGIN_HEADER = "WARC-Tianwang-Origin"


def warc_date(record_date: str | None) -> str:
    """A record's RFC 1123 date as WARC's ISO 8601 form; ValueError if it has none."""
    if not record_date:
        raise ValueError("record has no date")
    try:
        moment = parsedate_to_datetime(record_date)
    except (TypeError, ValueError):
        raise ValueError(f"record date {record_date!r} is not an RFC 1123 date") from None
    if moment.tzinfo is None:  # "-0000" means UTC with no zone given
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_record(writer: WARCWriter, record: Record) -> None:
    """One WARC response record holding record.data (status line, headers, body)."""
    headers = {"WARC-Date": warc_date(record.date)}
    if record.ip:
        headers["WARC-IP-Address"] = record.ip
    if record.origin and record.origin != record.url:
        headers[ORIGIN_HEADER] = record.origin
    warc = writer.create_warc_record(
        record.url,
        "response",
        payload=io.BytesIO(record.data),
        length=len(record.data),
        warc_headers_dict=headers,
    )
    writer.write_record(warc)


def export_tree(
    data_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    on_damage: OnDamage | None = None,
) -> int:
    """Write every record of data_dir to the gzipped WARC file out; the records written.

    The file appears whole or not at all: it is written beside out and renamed into place,
    so a bad record (RecordError, ValueError naming file and offset) leaves nothing behind.
    Given on_damage, a bad record goes to it instead and the export goes on without it.
    """
    out = Path(out)
    with replacing(out) as file:
        return _write_all(WARCWriter(file, gzip=True), data_dir, out.name, on_damage)


def _write_all(
    writer: WARCWriter,
    data_dir: str | os.PathLike[str],
    filename: str,
    on_damage: OnDamage | None,
) -> int:
    info = {"software": "tianwang", "format": "WARC File Format 1.0", "source": str(data_dir)}
    writer.write_record(writer.create_warcinfo_record(filename, info))
    count = 0
    for path, record in iter_tree(data_dir, on_damage=on_damage):
        try:
            parse_http_head(record.data)  # warcio's own error would not say where
            write_record(writer, record)  # a bad date is found before anything is written
        except ValueError as exc:
            error = RecordError(str(path), record.offset, str(exc))
            if on_damage is None:
                raise error from None
            on_damage(error)
            continue
        count += 1
    return count
