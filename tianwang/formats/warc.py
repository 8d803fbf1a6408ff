"""Export a Tianwang record tree to WARC, for the web-archive tools people already use.

One `response` record per stored page: WARC-Target-URI is the url the page was stored
under, WARC-Date its crawl time, WARC-IP-Address the address it came from, and the
payload digest (sha1 of the body as the server sent it) is computed by warcio. A page
stored after a redirect also carries the url first asked for, as `WARC-Tianwang-Origin`.

A redirect: a Tianwang record keeps the page and the url first asked for, not the 3xx
response itself. So that a replay tool (pywb, OpenWayback) finds the page by the url a
reader knows, the export adds, for each such page, a `response` record for the first url:
`302 Found` with `Location:` the page's url, marked `WARC-Tianwang-Redirect: reconstructed`
(the status the server gave, 301 or 302 or 307, is not kept by the record format).

The file is gzipped per record when its name ends in .gz, plain otherwise; the warcinfo
record names the data directory, not its absolute path. No Scrapy import here.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path

from warcio.warcwriter import WARCWriter

from tianwang.formats.atomic import replacing
from tianwang.formats.http import parse_http_head
from tianwang.formats.record import OnDamage, Record, RecordError
from tianwang.formats.store import iter_tree

ORIGIN_HEADER = "WARC-Tianwang-Origin"
REDIRECT_HEADER = "WARC-Tianwang-Redirect"


@dataclass
class Exported:
    """What an export wrote: a response record per page, one per redirect rebuilt, and the
    warcinfo record."""

    pages: int = 0
    redirects: int = 0

    @property
    def responses(self) -> int:
        return self.pages + self.redirects


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


def write_record(writer: WARCWriter, record: Record) -> bool:
    """One WARC response record holding record.data (status line, headers, body), and one
    for its redirect if it came by one (then True)."""
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
    if record.origin and record.origin != record.url:
        write_redirect(writer, record.origin, record.url, headers["WARC-Date"])
        return True
    return False


def write_redirect(writer: WARCWriter, origin: str, target: str, date: str) -> None:
    """A reconstructed 302 from the url first asked for to the page stored."""
    head = (f"HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n"
            .encode("utf-8", "surrogateescape"))
    warc = writer.create_warc_record(
        origin, "response", payload=io.BytesIO(head), length=len(head),
        warc_headers_dict={"WARC-Date": date, REDIRECT_HEADER: "reconstructed"},
    )
    writer.write_record(warc)


def export_tree(
    data_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    on_damage: OnDamage | None = None,
) -> Exported:
    """Write every record of data_dir to the WARC file out (gzipped if its name ends in
    .gz); the records written.

    The file appears whole or not at all: it is written beside out and renamed into place,
    so a bad record (RecordError, ValueError naming file and offset) leaves nothing behind.
    Given on_damage, a bad record goes to it instead and the export goes on without it.
    """
    out = Path(out)
    with replacing(out) as file:
        writer = WARCWriter(file, gzip=out.name.endswith(".gz"))
        return _write_all(writer, data_dir, out.name, on_damage)


def _write_all(
    writer: WARCWriter,
    data_dir: str | os.PathLike[str],
    filename: str,
    on_damage: OnDamage | None,
) -> Exported:
    # The directory's name only: an absolute path tells a reader of the archive nothing and
    # gives away the crawling machine's layout.
    source = Path(data_dir).resolve().name
    info = {"software": "tianwang", "format": "WARC File Format 1.0", "source": source}
    writer.write_record(writer.create_warcinfo_record(filename, info))
    exported = Exported()
    for path, record in iter_tree(data_dir, on_damage=on_damage):
        try:
            parse_http_head(record.data)  # warcio's own error would not say where
            # a bad date is found before anything is written
            exported.redirects += write_record(writer, record)
        except ValueError as exc:
            error = RecordError(str(path), record.offset, str(exc))
            if on_damage is None:
                raise error from None
            on_damage(error)
            continue
        exported.pages += 1
    return exported
