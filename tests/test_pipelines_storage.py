"""The storage pipeline alone: an item in, a Tianwang record on disk (read by the spec reader)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.conftest import (
    WEB_HOSTS,
    WEB_SEED,
    crawl_command,
    project_crawler,
    start_until_stored,
    tianwang_cli,
)
from tests.spec_reader import SpecError, http_parts, read_records
from tianwang.config import SettingError
from tianwang.items import PageItem
from tianwang.pipelines.storage import TianwangStoragePipeline
from tianwang.testweb.launcher import TestWebProcess
from tianwang.testweb.model import SyntheticWeb

GBK_BODY = "<html><title>天网</title></html>".encode("gbk")


def make_item(**changes: object) -> PageItem:
    fields = {
        "url": "http://www.pku.edu.cn/news/",
        "requested_url": "http://www.pku.edu.cn/news",
        "status": 200,
        "headers": [
            (b"Content-Type", b"text/html; charset=gbk"),
            (b"Transfer-Encoding", b"chunked"),
            (b"Content-Length", b"9999"),
        ],
        "body": GBK_BODY,
        "ip": "162.105.131.160",
        "fetched_at": 1_100_000_000.0,  # `date -u -d @1100000000`: Tue, 09 Nov 2004 11:33:20
        "level": 2,
    }
    return PageItem(**{**fields, **changes})


def run_pipeline(data_dir: Path, items: list[PageItem], **settings: object) -> None:
    crawler = project_crawler(TIANWANG_DATA_DIR=str(data_dir), **settings)
    pipeline = TianwangStoragePipeline.from_crawler(crawler)
    crawler.stats.open_spider()
    pipeline.open_spider()
    for item in items:
        pipeline.process_item(item)
    pipeline.close_spider()


def test_item_becomes_a_compressed_record_in_its_host_file(tmp_path: Path) -> None:
    run_pipeline(tmp_path, [make_item()])
    files = list(tmp_path.glob("data_*/www.pku.edu.cn/page.dat"))
    assert len(files) == 1
    blob = files[0].read_bytes()
    (record,) = read_records(blob)
    assert record["names"] == ["version", "url", "origin", "date", "ip", "unzip-length", "length"]
    assert record["header"]["origin"] == "http://www.pku.edu.cn/news"
    assert record["header"]["date"] == "Tue, 09 Nov 2004 11:33:20 GMT"
    status, headers, body = http_parts(record["data"])
    assert (status, body) == (200, GBK_BODY)
    assert "transfer-encoding" not in headers and "content-length" not in headers
    # The project's default level (1), byte for byte.
    assert blob[blob.index(b"\n\n") + 2 : -1] == zlib.compress(record["data"], 1)


def test_compress_level_setting_is_honoured(tmp_path: Path) -> None:
    run_pipeline(tmp_path, [make_item()], TIANWANG_COMPRESS_LEVEL=9)
    blob = next(tmp_path.glob("data_*/*/page.dat")).read_bytes()
    (record,) = read_records(blob)
    assert blob[blob.index(b"\n\n") + 2 : -1] == zlib.compress(record["data"], 9)


def test_plain_form_and_no_origin_without_redirect(tmp_path: Path) -> None:
    item = make_item(requested_url="http://www.pku.edu.cn/news/")
    run_pipeline(tmp_path, [item, item], TIANWANG_COMPRESS=False)
    records = read_records(next(tmp_path.glob("data_*/*/page.dat")).read_bytes())
    assert len(records) == 2
    assert all(r["names"] == ["version", "url", "date", "ip", "length"] for r in records)
    assert records[0]["data"].startswith(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=gbk")


def test_a_data_dir_that_cannot_be_made_stops_the_crawl(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the directory should be")
    with pytest.raises(SettingError, match="TIANWANG_DATA_DIR"):
        run_pipeline(tmp_path / "blocked" / "data", [])


def _without_dac_override() -> None:
    """In the child, before exec: drop the capabilities that let root write anywhere (from
    its bounding set: what root gets at exec), so a mode of 555 holds for it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_data_dir_that_exists_but_cannot_be_written_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """Refused when the crawler is built: status 2, one line naming the setting, no
    traceback, and no word of an index moved aside (nothing was read, nothing moved)."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o555)
    command, env = crawl_command("site", {"seeds": "http://www.pku.edu.cn/"},
                                 {"TIANWANG_DATA_DIR": str(data)})
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120,
                            preexec_fn=_without_dac_override if os.geteuid() == 0 else None)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.rstrip().splitlines()[-1] == (
        f"tianwang: error: setting TIANWANG_DATA_DIR='{data}' is invalid: expected a "
        "writable directory (Permission denied)")
    assert "Traceback" not in result.stderr and "md5.sqlite" not in result.stderr
    assert "Spider opened" not in result.stderr  # refused before the crawl began
    assert list(data.iterdir()) == []


def complete_records(data_dir: Path) -> dict[Path, int]:
    """Per file, how many records read cleanly before the first damaged one."""
    counts = {}
    for path in data_dir.glob("data_*/*/page.dat"):
        blob, good = path.read_bytes(), 0
        try:
            for _ in read_records(blob):
                good += 1
        except (SpecError, ValueError, zlib.error):
            pass  # the unfinished record a kill leaves behind: counted as not complete
        counts[path] = good
    return counts


def kill_mid_crawl(proxy: str, seeds: list[str], tmp_path: Path) -> None:
    """Start a crawl into tmp_path/data and SIGKILL it once it has stored 2 MB."""
    data = tmp_path / "data"
    settings = {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(data)}
    command, env = crawl_command("site", {"seeds": ",".join(seeds)}, settings)
    proc = start_until_stored(command, env, tmp_path, data, 2_000_000, tmp_path / "crawl.log")
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_kill_9_mid_crawl_loses_no_complete_record(tmp_path: Path) -> None:
    # Its own test web: requests of the killed crawl must not reach the shared one's log.
    with TestWebProcess(WEB_SEED, WEB_HOSTS) as web:
        kill_mid_crawl(web.address, SyntheticWeb(WEB_SEED, WEB_HOSTS).homepages(), tmp_path)
    data = tmp_path / "data"
    before = complete_records(data)
    repair = tianwang_cli("records", "repair", str(data))
    assert repair.returncode == 0, repair.stderr
    verify = tianwang_cli("records", "verify", str(data))
    assert verify.returncode == 0, verify.stderr
    after = {path: len(read_records(path.read_bytes())) for path in before}
    assert after == before and sum(after.values()) > 100


# --- a full disk: the crawl stops, loses nothing, and the same command stores the rest ---

DISK_SEED, DISK_HOSTS, DISK_PAGES = 11, 40, 60  # about 680 pages, 2.7 MB on disk


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1 MB file system (tmpfs) at tmp_path/disk, and a way to grow it; root only."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.strip()}")

    def grow(size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)

    try:
        yield disk, grow
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def stored_urls(data: Path) -> list[str]:
    return [record["header"]["url"] for path in sorted(data.glob("data_*/*/page.dat"))
            for record in read_records(path.read_bytes())]


@pytest.mark.parametrize("watermark", ["0", "200000"], ids=["ENOSPC", "below_watermark"])
def test_a_full_disk_stops_the_crawl_and_the_same_command_stores_the_rest(
        tmp_path: Path, small_disk, watermark: str) -> None:
    """Records, the MD5 index and the JOBDIR's request log on one 1 MB file system: the
    crawl stops at the first write that fails (or below the watermark) with one line and
    status 1, marks nothing done it did not store, and after the disk grows, the same
    command stores exactly the pages the truth says, each once."""
    import subprocess

    from tests.truth import load_truth, reach
    from tianwang.testweb.launcher import write_seeds

    disk, grow = small_disk
    truth = load_truth(DISK_SEED, DISK_HOSTS, DISK_PAGES)
    homepages = SyntheticWeb(DISK_SEED, DISK_HOSTS, DISK_PAGES).homepages()
    seeds = write_seeds(tmp_path / "seeds.txt", homepages)
    with TestWebProcess(DISK_SEED, DISK_HOSTS, DISK_PAGES) as web:
        settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(disk / "data"),
                    "JOBDIR": str(disk / "job"), "TIANWANG_MAX_LEVELS": "0",
                    "TIANWANG_MIN_FREE_DISK": watermark}
        command, env = crawl_command("site", {"seeds": str(seeds)}, settings)
        first = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        grow("64m")
        second = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=300)
    assert first.returncode == 1, first.stderr[-3000:]
    assert "Traceback" not in first.stderr and len(first.stderr) < 60_000
    said = [line for line in first.stderr.splitlines() if "ERROR: disk full:" in line]
    assert len(said) == 1, first.stderr[-3000:]
    assert first.stderr.rstrip().splitlines()[-1].split("ERROR: ")[-1].startswith(
        "crawl FAILED (stopped: disk_full)")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Traceback" not in second.stderr
    want = reach(truth, homepages, max_levels=0).stored(truth)
    urls = stored_urls(disk / "data")
    assert len(urls) == len(set(urls))  # each page once
    assert set(urls) == want
