"""The Tianwang record format: read, write and store records (no Scrapy import here)."""

from tianwang.formats.http import HttpMessage, build_http_response, parse_http_response
from tianwang.formats.pagefile import PageFile, repair_file
from tianwang.formats.record import (
    Record,
    RecordError,
    check_file,
    encode_record,
    format_date,
    iter_records,
    valid_end,
)
from tianwang.formats.store import (
    RecordStore,
    host_bucket,
    host_dirname,
    iter_tree,
    page_path,
    record_files,
)

__all__ = [
    "HttpMessage",
    "PageFile",
    "Record",
    "RecordError",
    "RecordStore",
    "build_http_response",
    "check_file",
    "encode_record",
    "format_date",
    "host_bucket",
    "host_dirname",
    "iter_records",
    "iter_tree",
    "page_path",
    "parse_http_response",
    "record_files",
    "repair_file",
    "valid_end",
]
