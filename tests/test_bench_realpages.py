"""bench/realpages.py measures what it claims: each crawler it compares fetches the whole
served tree (Debian's documentation trees as wget mirrored them, served by nginx), and the
stack stores every page of it, byte for byte, once."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.realpages import command
from tests.docs_web import DocsWeb, mirror_docs, tree_paths
from tests.spec_reader import http_parts, read_records


def crawl(crawler: str, web: DocsWeb, seeds: list[str], work: Path) -> list[dict]:
    """Run the benchmark's command for `crawler`; the access log lines of its requests."""
    work.mkdir()
    argv, env = command(crawler, web.address, seeds, work)
    since = web.log_size()
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == (8 if crawler == "wget" else 0), done.stderr[-3000:]
    return web.requests(since)


def test_the_served_tree_is_crawled_completely_by_each_crawler(tmp_path: Path) -> None:
    mirror = mirror_docs(tmp_path / "docs")
    files = {(host, path): root / path.lstrip("/") for host, root in mirror.items()
             for path in tree_paths(root)}
    assert len(files) > 1500  # two real trees, not an empty mirror
    seeds = [f"http://{host}/index.html" for host in mirror]
    with DocsWeb(mirror, tmp_path / "web") as web:
        logs = {crawler: crawl(crawler, web, seeds, tmp_path / crawler)
                for crawler in ("tianwang", "wget", "plain")}
    for crawler, log in logs.items():
        served = [(line["host"], line["path"]) for line in log if line["status"] == 200]
        assert sorted(served) == sorted(files), crawler  # every file, each once
        # The rest: robots.txt and the trees' own broken links (not in the tree).
        missed = {(line["host"], line["path"]) for line in log if line["status"] != 200}
        assert {line["status"] for line in log if line["status"] != 200} <= {404}, crawler
        assert not missed & set(files), crawler
    records = [record for page_file in sorted((tmp_path / "tianwang" / "data").rglob("page.dat"))
               for record in read_records(page_file.read_bytes())]
    stored = {}
    for record in records:
        status, _headers, body = http_parts(record["data"])
        assert status == 200
        stored[record["header"]["url"]] = body
    assert len(records) == len(stored) == len(files)  # each page once
    assert stored == {f"http://{host}{path}": path_file.read_bytes()
                      for (host, path), path_file in files.items()}
