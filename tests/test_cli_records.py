"""`tianwang records ls|cat|verify|repair` as a user runs them: the real command, a subprocess."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tianwang.formats.record import Record, encode_record
from tianwang.formats.store import RecordStore, iter_tree

ROOT = Path(__file__).resolve().parent.parent
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"
GBK_BODY = "<p>\u5929\u7f51</p>".encode("gbk") + b"\xff\x00"  # not UTF-8, with a NUL


def tianwang(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "tianwang.cli", *map(str, args)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    )


def bucket(host_dir: str) -> str:
    k = int.from_bytes(hashlib.md5(host_dir.encode()).digest()[:4], "big") % 256
    return f"data_{k}/{host_dir}/page.dat"


def response(status: bytes, body: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\n\r\n" + body


# (host, record) in the order they are written
PAGES = [
    ("a.test", Record("http://a.test/", response(b"200 OK", GBK_BODY), DATE, "127.0.0.1")),
    ("a.test", Record("http://a.test/gone", response(b"404 Not Found", b"no"), DATE)),
    ("b.test:8080", Record("http://b.test:8080/x", response(b"200 OK", b"bbb"), DATE, "10.0.0.2")),
    (
        "a.test",
        Record(
            "http://a.test/new",
            response(b"200 OK", b"moved here"),
            DATE,
            origin="http://a.test/old",
        ),
    ),
    ("c.test", Record("http://c.test/", response(b"200 OK", b""), DATE)),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with RecordStore(data) as store:
        for host, record in PAGES:
            store.write(host, record)
    return data


def offsets_in(file_records: list[Record]) -> list[int]:
    sizes = [len(encode_record(record)) for record in file_records]
    return [sum(sizes[:i]) for i in range(len(sizes))]


def test_ls_lists_every_record(tree: Path) -> None:
    a_records = [record for host, record in PAGES if host == "a.test"]
    a_offsets = offsets_in(a_records)
    expected = [
        (bucket("a.test"), a_offsets[0], 200, len(GBK_BODY), "http://a.test/"),
        (bucket("a.test"), a_offsets[1], 404, 2, "http://a.test/gone"),
        (bucket("a.test"), a_offsets[2], 200, 10, "http://a.test/new"),
        (bucket("b.test_8080"), 0, 200, 3, "http://b.test:8080/x"),
        (bucket("c.test"), 0, 200, 0, "http://c.test/"),
    ]
    by_file = sorted(expected, key=lambda row: (row[0], row[1]))  # files in sorted order
    result = tianwang("records", "ls", tree)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == ["\t".join(map(str, row)) for row in by_file]


def test_ls_stops_at_a_bad_record_after_printing_what_it_listed(tree: Path) -> None:
    path = tree / bucket("a.test")
    good_size = path.stat().st_size
    cut = b"version: 1.0\nurl: http://a.test/cut\nlength: 900\n\n<html>"
    with path.open("ab") as file:
        file.write(cut)
    result = tianwang("records", "ls", tree)
    assert result.returncode == 1
    listed = result.stdout.decode().splitlines()
    assert [line.split("\t")[-1] for line in listed if line.startswith(bucket("a.test"))] == [
        "http://a.test/",
        "http://a.test/gone",
        "http://a.test/new",
    ]
    assert f"{path}: offset {good_size} ({len(cut)} bytes skipped): truncated" in (
        result.stderr.decode()
    )


def test_repair_cuts_only_the_unfinished_record_then_verify_passes(tree: Path) -> None:
    path = tree / bucket("a.test")
    good_size = path.stat().st_size
    cut = b"version: 1.0\nurl: http://a.test/cut\nlength: 900\n\n<html>"
    with path.open("ab") as file:
        file.write(cut)
    assert tianwang("records", "verify", tree).returncode == 1
    result = tianwang("records", "repair", tree)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == [
        f"{path}: cut {len(cut)} bytes at offset {good_size} (truncated record (length 900, "
        f"only 6 bytes left); kept in page.dat.cut-{good_size})",
        "repaired 1 of 3 files",
    ]
    assert path.stat().st_size == good_size
    assert path.with_name(f"page.dat.cut-{good_size}").read_bytes() == cut
    assert tianwang("records", "verify", tree).stdout.decode().startswith("OK: 5 records")
    assert tianwang("records", "repair", tree).stdout.decode() == "repaired 0 of 3 files\n"


def test_verify_passes_a_good_tree(tree: Path) -> None:
    files = sorted(tree.glob("data_*/*/page.dat"))
    size = sum(file.stat().st_size for file in files)
    result = tianwang("records", "verify", tree)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == f"OK: 5 records in 3 files, {size} bytes\n"


def test_verify_names_each_bad_file_and_offset_and_keeps_checking(tree: Path) -> None:
    a_path, c_path = tree / bucket("a.test"), tree / bucket("c.test")
    second = offsets_in([record for host, record in PAGES if host == "a.test"])[1]
    blob = bytearray(a_path.read_bytes())
    blob[blob.index(b"\nlength: ", second) + len(b"\nlength: ")] = ord("x")  # 2nd record's length
    a_path.write_bytes(bytes(blob))
    c_size = c_path.stat().st_size
    with c_path.open("ab") as file:
        file.write(
            encode_record(Record("http://c.test/2", b"HTTP/1.1 200 OK\r\n\r\nfull", DATE))[:-7]
        )
    result = tianwang("records", "verify", tree)
    assert result.returncode == 1
    errors = result.stderr.decode().splitlines()
    third = offsets_in([record for host, record in PAGES if host == "a.test"])[2]
    # The damaged record costs its own span only: the reader goes on at the next one.
    assert f"{a_path}: offset {second} ({third - second} bytes skipped): bad length header 'x" in (
        errors[0]
    )
    assert errors[1].startswith(f"{c_path}: offset {c_size} (")
    assert "truncated record" in errors[1]
    assert "(4 good records read)" in errors[-1]
    assert result.stdout == b""


def test_verify_flags_a_record_filed_under_the_wrong_host(tmp_path: Path) -> None:
    wrong = tmp_path / bucket("a.test")
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(encode_record(Record("http://b.test/", b"HTTP/1.1 200 OK\r\n\r\n", DATE)))
    result = tianwang("records", "verify", tmp_path)
    assert result.returncode == 1
    assert f"{wrong}: offset 0: " in result.stderr.decode()
    assert bucket("b.test").rsplit("/", 1)[0] in result.stderr.decode()  # where it belongs


def test_verify_flags_data_that_is_not_an_http_response(tmp_path: Path) -> None:
    path = tmp_path / bucket("a.test")
    path.parent.mkdir(parents=True)
    good = encode_record(Record("http://a.test/", b"HTTP/1.1 200 OK\r\n\r\nok", DATE))
    path.write_bytes(good + encode_record(Record("http://a.test/2", b"<html>no status", DATE)))
    result = tianwang("records", "verify", tmp_path)
    assert result.returncode == 1
    assert f"{path}: offset {len(good)}: " in result.stderr.decode()
    assert "HTTP" in result.stderr.decode()


def test_verify_a_missing_dir_exits_2_and_an_empty_one_is_ok(tmp_path: Path) -> None:
    missing = tianwang("records", "verify", tmp_path / "nope")
    assert missing.returncode == 2
    assert b"nope" in missing.stderr
    empty = tianwang("records", "verify", tmp_path)
    assert (empty.returncode, empty.stdout) == (0, b"OK: 0 records in 0 files, 0 bytes\n")


def test_cat_by_url_prints_header_lines_a_blank_line_and_the_response(tree: Path) -> None:
    result = tianwang("records", "cat", tree, "--url", "http://a.test/")
    assert result.returncode == 0, result.stderr
    data = response(b"200 OK", GBK_BODY)
    assert result.stdout == (
        b"version: 1.0\nurl: http://a.test/\ndate: " + DATE.encode() + b"\nip: 127.0.0.1\n"
        b"length: " + str(len(data)).encode() + b"\n\n" + data
    )


def test_cat_body_prints_the_body_bytes_exactly(tree: Path) -> None:
    result = tianwang("records", "cat", tree, "--url", "http://a.test/", "--body")
    assert (result.returncode, result.stdout) == (0, GBK_BODY)


def test_cat_finds_a_redirect_by_its_origin_and_a_port_host(tree: Path) -> None:
    moved = tianwang("records", "cat", tree, "--url", "http://a.test/old", "--body")
    assert moved.stdout == b"moved here"
    port = tianwang("records", "cat", tree, "--url", "http://b.test:8080/x", "--body")
    assert port.stdout == b"bbb"


def test_cat_by_offset_in_one_file(tree: Path) -> None:
    path = tree / bucket("a.test")
    offset = offsets_in([record for host, record in PAGES if host == "a.test"])[1]
    result = tianwang("records", "cat", path, "--offset", str(offset), "--body")
    assert (result.returncode, result.stdout) == (0, b"no")
    inside = tianwang("records", "cat", path, "--offset", str(offset + 3))
    assert inside.returncode == 1 and f"offset {offset + 3}" in inside.stderr.decode()


def test_cat_finds_a_record_filed_elsewhere_by_scanning(tmp_path: Path) -> None:
    odd = tmp_path / "data_0" / "old-layout" / "page.dat"
    odd.parent.mkdir(parents=True)
    odd.write_bytes(encode_record(Record("http://z.test/", b"HTTP/1.1 200 OK\r\n\r\nzz", DATE)))
    result = tianwang("records", "cat", tmp_path, "--url", "http://z.test/", "--body")
    assert (result.returncode, result.stdout) == (0, b"zz")


def test_cat_prints_the_latest_visit_of_a_url(tmp_path: Path) -> None:
    with RecordStore(tmp_path) as store:
        for body in (b"first", b"second"):
            store.write("a.test", Record("http://a.test/", b"HTTP/1.1 200 OK\r\n\r\n" + body, DATE))
    result = tianwang("records", "cat", tmp_path, "--url", "http://a.test/", "--body")
    assert result.stdout == b"second"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--url", "http://a.test/missing"], 1),
        (["--url", "http://nowhere.test/"], 1),
        (["--offset", "0"], 2),  # --offset needs a file, not the data dir
    ],
)
def test_cat_not_found(tree: Path, args: list[str], code: int) -> None:
    result = tianwang("records", "cat", tree, *args)
    assert (result.returncode, result.stdout) == (code, b"")
    assert result.stderr.strip()


# -- damage at random: every record it does not touch is read back -------------------------


def run_cli(*args: str) -> tuple[int, str, str]:
    """A command in this process (a subprocess per hypothesis example would be too slow)."""
    import contextlib
    import io

    from tianwang.cli import main

    out, err = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
        out.flush()
        err.flush()
    text = [stream.buffer.getvalue().decode("utf-8", "replace") for stream in (out, err)]
    return status, *text


def random_tree(root: Path) -> list[tuple[Path, int, int, str]]:
    """Three hosts of six compressed records, each url and body distinct: (file, offset,
    length, url) of each. Compressed, as the crawl writes: a plain record has no checksum,
    so damage to its DATA cannot be told from a page that says so."""
    written = []
    with RecordStore(root) as store:
        for n in range(18):
            host = f"h{n % 3}.test"
            url = f"http://{host}/p{n}"
            body = b"<p>page %d</p>" % n + bytes(range(n, n + 40))
            path, offset = store.write(host, Record(url, response(b"200 OK", body), DATE))
            written.append((path, offset, url))
    sizes = {path: path.stat().st_size for path, _o, _u in written}
    rows = []
    for path, offset, url in written:
        ends = [o for p, o, _u in written if p == path and o > offset] + [sizes[path]]
        rows.append((path, offset, min(ends) - offset, url))
    return rows


@st.composite
def corruptions(draw: st.DrawFn) -> list[tuple[int, str, float, bytes | int]]:
    """1-3 of: a bit flipped, a span cut out, garbage inserted; (file, kind, where 0-1, arg)."""
    kinds = st.sampled_from(["flip", "cut", "insert"])
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(kinds)
        arg = {"flip": st.integers(0, 7), "cut": st.integers(1, 300),
               "insert": st.binary(min_size=1, max_size=60)}[kind]
        ops.append((draw(st.integers(0, 2)), kind, draw(st.floats(0, 1)), draw(arg)))
    return ops


def corrupt(rows: list[tuple[Path, int, int, str]], ops: list) -> set[str]:
    """Apply ops (none overlapping another: the later ones are dropped) to the files; the
    urls of the records they touched."""
    files = sorted({row[0] for row in rows})
    spans: dict[Path, list[tuple[int, int, str, object]]] = {path: [] for path in files}
    for index, kind, where, arg in ops:
        path = files[index]
        size = path.stat().st_size
        start = min(int(where * size), size - 1)
        end = start + (1 if kind == "flip" else arg if kind == "cut" else 0)
        end = min(end, size)
        if all(end < s or start > e for s, e, _k, _a in spans[path]):
            spans[path].append((start, end, kind, arg))
    touched = set()
    for path, edits in spans.items():
        blob = bytearray(path.read_bytes())
        for start, end, kind, arg in sorted(edits, reverse=True):  # later bytes first
            if kind == "flip":
                blob[start] ^= 1 << arg
            elif kind == "cut":
                del blob[start:end]
            else:
                blob[start:start] = arg
            for file, offset, length, url in rows:
                inside = offset < start < offset + length if kind == "insert" else (
                    start < offset + length and end > offset)
                if file == path and inside:
                    touched.add(url)
        path.write_bytes(bytes(blob))
    return touched


@settings(max_examples=25, deadline=None)
@given(ops=corruptions())
def test_random_damage_costs_only_the_records_it_touches(ops: list) -> None:
    import tempfile

    from warcio.archiveiterator import ArchiveIterator

    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "data"
        rows = random_tree(root)
        touched = corrupt(rows, ops)
        intact = {url for _p, _o, _l, url in rows} - touched

        status, out, err = run_cli("records", "verify", str(root))
        assert "Traceback" not in err
        good = int(err.split("(")[-1].split()[0]) if status else int(out.split()[1])
        assert good >= len(intact)

        status, out, err = run_cli("records", "ls", str(root))
        assert intact <= {line.split("\t")[-1] for line in out.splitlines()}
        assert status == (1 if "damaged" in err else 0) and "Traceback" not in err

        merged = Path(temp) / "merged"
        status, out, err = run_cli("dedup", str(root), "--out", str(merged), "--workers", "1",
                                   "--skip-damaged")
        assert status == 0, err
        assert intact <= {record.url for _path, record in iter_tree(merged)}

        warc = Path(temp) / "out.warc.gz"
        status, out, err = run_cli("records", "to-warc", str(root), str(warc), "--skip-damaged")
        assert status == 0, err
        with open(warc, "rb") as file:
            exported = {record.rec_headers.get_header("WARC-Target-URI")
                        for record in ArchiveIterator(file) if record.rec_type == "response"}
        assert intact <= exported


def damage_second_a_record(tree: Path) -> int:
    """Flip `version` of a.test's second record (http://a.test/gone); its offset."""
    path = tree / bucket("a.test")
    second = offsets_in([record for host, record in PAGES if host == "a.test"])[1]
    blob = path.read_bytes()
    assert blob[second:second + 8] == b"version:"
    path.write_bytes(blob[:second] + b"vErsion" + blob[second + 7:])
    return second


def test_repair_takes_damage_out_mid_file_and_the_indexes_follow(tree: Path) -> None:
    from tianwang.formats.linksfile import LinkGraphWriter, links_path
    from tianwang.formats.md5store import MD5Store

    with LinkGraphWriter(tree) as graph:
        for host, record in PAGES:
            graph.add(host, record.url, None, [])
    MD5Store(tree).close()  # the index of every body, as a crawl leaves it
    a_path = tree / bucket("a.test")
    a_blob = a_path.read_bytes()
    second = damage_second_a_record(tree)
    third = offsets_in([record for host, record in PAGES if host == "a.test"])[2]
    result = tianwang("records", "repair", tree)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith(f"{a_path}: cut {third - second} bytes at offset {second} (")
    assert lines[-1] == "repaired 1 of 3 files"
    assert a_path.read_bytes() == a_blob[:second] + a_blob[third:]  # every intact record kept
    assert a_path.with_name(f"page.dat.cut-{second}").read_bytes().startswith(b"vErsion")
    assert tianwang("records", "verify", tree).stdout.decode().startswith("OK: 4 records")
    links = links_path(tree, "a.test")
    assert [line.split("\t")[0] for line in links.read_text().splitlines()] == [
        "http://a.test/", "http://a.test/new"]
    assert "http://a.test/gone" in links.with_name("links.tsv.cut-pruned").read_text()
    with MD5Store(tree) as index:  # the lost body is no longer "stored"
        assert index.kept(hashlib.md5(b"no").digest()) is None
        assert index.kept(hashlib.md5(GBK_BODY).digest()) == "http://a.test/"


def test_to_warc_stops_at_damage_unless_told_to_skip_it(tree: Path, tmp_path: Path) -> None:
    second = damage_second_a_record(tree)
    out = tmp_path / "out.warc.gz"
    refused = tianwang("records", "to-warc", tree, out)
    assert refused.returncode == 1 and b"nothing written" in refused.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [tree]
    skipped = tianwang("records", "to-warc", tree, out, "--skip-damaged")
    assert skipped.returncode == 0, skipped.stderr
    assert f"{tree / bucket('a.test')}: offset {second} (" in skipped.stderr.decode()
    assert skipped.stdout.decode().splitlines() == [
        f"wrote 5 response records to {out}: 4 pages and 1 redirect rebuilt (a 302 from the "
        "url first asked for to the page stored), after a warcinfo record",
        "skipped 1 damaged records or spans"]
