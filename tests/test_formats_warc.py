"""`tianwang records to-warc`: a record tree exported to WARC and read back with warcio."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import tianwang_cli
from tianwang.formats import Record, RecordStore, build_http_response, iter_tree

DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


def sha1_digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


def read_warc(path: Path) -> list[dict]:
    """Every response record of a WARC file, as warcio reads it."""
    found = []
    with open(path, "rb") as file:
        for record in ArchiveIterator(file):
            if record.rec_type != "response" or record.rec_headers.get_header(
                    "WARC-Tianwang-Redirect"):
                continue  # the 3xx records made for redirects: see the pywb test
            headers = record.rec_headers
            found.append(
                {
                    "url": headers.get_header("WARC-Target-URI"),
                    "date": headers.get_header("WARC-Date"),
                    "ip": headers.get_header("WARC-IP-Address"),
                    "origin": headers.get_header("WARC-Tianwang-Origin"),
                    "digest": headers.get_header("WARC-Payload-Digest"),
                    "status": record.http_headers.get_statuscode(),
                    "type": record.http_headers.get_header("Content-Type"),
                    "body": record.content_stream().read(),
                }
            )
    return found


def count_records(path: Path) -> dict[str, int]:
    """The records of a WARC file by type, as warcio reads it."""
    counts: dict[str, int] = {}
    with open(path, "rb") as file:
        for record in ArchiveIterator(file):
            counts[record.rec_type] = counts.get(record.rec_type, 0) + 1
    return counts


def page(url: str, body: bytes, **fields: str) -> Record:
    headers = [(b"Content-Type", b"text/html; charset=gbk"), (b"Server", b"test")]
    return Record(url=url, data=build_http_response(200, headers, body), **fields)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with RecordStore(data) as store:
        store.write("www.a.com", page("http://www.a.com/", b"<p>home</p>", date=DATE, ip="1.2.3.4"))
        store.write(
            "www.a.com",
            page(
                "http://www.a.com/new.html",
                "<p>\u4e2d\u56fd</p>".encode("gbk"),
                date=DATE,
                ip="1.2.3.4",
                origin="http://www.a.com/old.html",
            ),
        )
    with RecordStore(data, compress=False) as store:  # the plain form exports the same
        store.write("bbs.b.cn", page("http://bbs.b.cn/t?id=1", b"", date=DATE))
    return data


def test_round_trip_keeps_url_date_ip_origin_and_body(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "crawl.warc.gz"
    result = tianwang_cli("records", "to-warc", str(tree), str(out))
    assert result.returncode == 0, result.stderr
    # Every record the file holds is said: the 3 pages and the 302 rebuilt for the page
    # stored after a redirect.
    assert result.stdout.splitlines()[0] == (
        f"wrote 4 response records to {out}: 3 pages and 1 redirect rebuilt (a 302 from the "
        "url first asked for to the page stored), after a warcinfo record")
    assert count_records(out) == {"warcinfo": 1, "response": 4}
    by_url = {record["url"]: record for record in read_warc(out)}
    assert set(by_url) == {"http://www.a.com/", "http://www.a.com/new.html", "http://bbs.b.cn/t?id=1"}
    moved = by_url["http://www.a.com/new.html"]
    assert moved["origin"] == "http://www.a.com/old.html"
    assert moved["date"] == "2026-11-22T05:16:17Z" and moved["ip"] == "1.2.3.4"
    assert moved["body"] == "<p>\u4e2d\u56fd</p>".encode("gbk")  # bytes as sent, not re-encoded
    assert moved["type"] == "text/html; charset=gbk" and moved["status"] == "200"
    plain = by_url["http://bbs.b.cn/t?id=1"]
    assert plain["ip"] is None and plain["origin"] is None and plain["body"] == b""
    for record in by_url.values():
        assert record["digest"] == sha1_digest(record["body"])


def test_real_crawl_exports_one_response_per_record(mirror_crawl: dict, tmp_path: Path) -> None:
    out = tmp_path / "mirror.warc.gz"
    result = tianwang_cli("records", "to-warc", str(mirror_crawl["data"]), str(out))
    assert result.returncode == 0, result.stderr
    stored = [record for _path, record in iter_tree(mirror_crawl["data"])]
    exported = read_warc(out)
    assert len(stored) > 20
    assert [(r["url"], r["ip"], r["body"]) for r in exported] == [
        (r.url, r.ip, r.http.body) for r in stored
    ]
    assert all(r["digest"] == sha1_digest(r["body"]) for r in exported)
    # warcio's own validator: every block and payload digest checks out.
    check = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", "-v", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    redirects = sum(1 for r in stored if r.origin and r.origin != r.url)
    # and the warcinfo record, and a 3xx record per redirected page
    assert check.stdout.count("digest pass") == len(stored) + redirects + 1
    # The command says what the file holds.
    said = (f"wrote {len(stored) + redirects:,} response records to {out}: {len(stored):,} "
            f"pages and ")
    assert result.stdout.startswith(said), result.stdout
    assert count_records(out) == {"warcinfo": 1, "response": len(stored) + redirects}


def test_a_truncated_tree_gives_a_clear_error_and_no_file(tree: Path, tmp_path: Path) -> None:
    damaged = next(path for path, record in iter_tree(tree) if record.url.startswith("http://www"))
    size = damaged.stat().st_size
    with open(damaged, "r+b") as file:
        file.truncate(size - 10)
    out = tmp_path / "crawl.warc.gz"
    out.write_bytes(b"an older export")
    result = tianwang_cli("records", "to-warc", str(tree), str(out))
    assert result.returncode == 1
    assert str(damaged) in result.stderr and "truncated record" in result.stderr
    assert "nothing written" in result.stderr
    assert out.read_bytes() == b"an older export"  # the old export is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl.warc.gz", "data"]


def test_missing_directory_is_refused(tmp_path: Path) -> None:
    result = tianwang_cli("records", "to-warc", str(tmp_path / "none"), str(tmp_path / "o.warc.gz"))
    assert result.returncode == 2 and "no such directory" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_export_is_plain_by_name_with_the_umask_mode_and_no_absolute_path(tree: Path,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "crawl.warc"
    old = os.umask(0o027)
    try:
        assert tianwang_cli("records", "to-warc", str(tree), str(out)).returncode == 0
    finally:
        os.umask(old)
    assert out.read_bytes().startswith(b"WARC/1.0\r\n")  # .warc: not gzipped
    assert out.stat().st_mode & 0o777 == 0o640  # 0666 less the umask, as open() makes files
    gz = tmp_path / "crawl.warc.gz"
    assert tianwang_cli("records", "to-warc", str(tree), str(gz)).returncode == 0
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert str(tree.parent).encode() not in out.read_bytes()


def test_pywb_replays_a_redirected_page_by_the_url_first_asked_for(tmp_path: Path) -> None:
    """pywb (independent of the warcio the export writes with) finds a page stored after a
    redirect by its first url: without the export's 3xx record it answered 404."""
    from tests.pywb_replay import replaying

    data = tmp_path / "data"
    with RecordStore(data) as store:
        store.write("www.a.com", page("http://www.a.com/", b"<p>home</p>", date=DATE))
        store.write("www.a.com", page("http://www.a.com/new.html", b"<p>moved here</p>",
                                      date=DATE, origin="http://www.a.com/old.html"))
    warc = tmp_path / "crawl.warc.gz"
    assert tianwang_cli("records", "to-warc", str(data), str(warc)).returncode == 0
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
    with replaying(warc, tmp_path) as base:
        with pytest.raises(urllib.error.HTTPError) as moved:
            opener.open(f"{base}/crawl/20261122051617mp_/http://www.a.com/old.html", timeout=30)
        moved.value.close()
        assert moved.value.code == 302
        location = moved.value.headers["Location"]
        assert location.endswith("/crawl/20261122051617mp_/http://www.a.com/new.html"), location
        with opener.open(urllib.parse.urljoin(base, location), timeout=30) as replayed:
            assert replayed.status == 200
            assert b"<p>moved here</p>" in replayed.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a 3xx is raised as HTTPError, to be looked at
