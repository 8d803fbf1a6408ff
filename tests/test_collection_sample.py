"""`tianwang sample`: seed 004's size-stratified sample of a crawled, deduped test web,
checked against the sizes the test web's truth gives each site."""

from __future__ import annotations

import filecmp
import math
from pathlib import Path

import pytest

from tests.collection_crawl import CollectionCrawl, site_sizes
from tests.commandline import on_terminal
from tests.conftest import tianwang_cli
from tests.truth import host_of
from tianwang.collection.sample import kept_hosts
from tianwang.formats import iter_tree
from tianwang.formats.lines import iter_lines
from tianwang.formats.record import Record
from tianwang.formats.store import RecordStore, record_files
from tianwang.testweb.model import SyntheticWeb
from tianwang.testweb.sitebuilder import SiteBuilder

GROUP = 20  # seed 004: distinct sizes in groups of 20, 10 drawn from each


def groups_of(sizes: dict[str, int]) -> list[list[int]]:
    distinct = sorted(set(sizes.values()))
    return [distinct[i : i + GROUP] for i in range(0, len(distinct), GROUP)]


def hosts_in(tree: Path) -> set[str]:
    return {host_of(record.url) for _path, record in iter_tree(tree)}


def run_sample(crawl: CollectionCrawl, out: Path, seed: int, *extra: str):
    return tianwang_cli("sample", str(crawl.dedup), "--out", str(out), "--seed", str(seed),
                        *extra)


@pytest.fixture(scope="module")
def samples(collection_crawl: CollectionCrawl, tmp_path_factory: pytest.TempPathFactory):
    """Seed 1 twice, seed 2 once, and each run's output."""
    base = tmp_path_factory.mktemp("samples")
    runs = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        run = run_sample(collection_crawl, base / name, seed)
        assert run.returncode == 0, run.stderr
        runs[name] = (base / name, run.stdout)
    return runs


def test_the_deduped_crawl_holds_one_page_per_body_as_the_truth_says(
    collection_crawl: CollectionCrawl,
) -> None:
    stored = {record.url for _path, record in iter_tree(collection_crawl.dedup)}
    assert stored == set(collection_crawl.expected)
    groups = groups_of(site_sizes(collection_crawl.expected))
    assert [len(group) for group in groups] == [20, 17]  # a full group and a short one


def test_every_host_of_a_drawn_size_is_kept_and_half_the_sizes_of_each_group(
    collection_crawl: CollectionCrawl, samples: dict,
) -> None:
    sizes = site_sizes(collection_crawl.expected)
    kept = hosts_in(samples["a"][0])
    kept_sizes = {sizes[host] for host in kept}
    assert kept == {host for host, size in sizes.items() if size in kept_sizes}
    for group in groups_of(sizes):
        drawn = kept_sizes & set(group)
        assert len(drawn) == (GROUP // 2 if len(group) == GROUP else math.ceil(len(group) / 2))


def test_the_sample_keeps_about_half_the_sites_of_each_size_band(
    collection_crawl: CollectionCrawl, samples: dict,
) -> None:
    sizes = site_sizes(collection_crawl.expected)
    for out, _stdout in samples.values():
        kept = hosts_in(out)
        for group in groups_of(sizes):
            band = {host for host, size in sizes.items() if size in group}
            assert 0.25 <= len(band & kept) / len(band) <= 0.75, (group, len(band))


def test_on_thousands_of_sites_each_band_keeps_close_to_half() -> None:
    """The draw alone, on the sizes the test web's model gives 10,000 sites."""
    seed, hosts, max_pages = 11, 10_000, 300
    web = SyntheticWeb(seed, hosts, max_pages)
    sizes = {web.hosts[i]: SiteBuilder(seed, i, hosts, web.hosts.__getitem__, max_pages).size
             for i in range(hosts)}
    _bands, kept = kept_hosts(sizes, seed=5)
    groups = groups_of(sizes)
    assert len(groups) >= 10
    for group in groups:
        band = {host for host, size in sizes.items() if size in group}
        assert abs(len(band & kept) / len(band) - 0.5) < 0.12, (group, len(band))


def test_kept_hosts_are_copied_whole_into_the_same_layout(
    collection_crawl: CollectionCrawl, samples: dict,
) -> None:
    out = samples["a"][0]
    files = [path.relative_to(out) for path in record_files(out)]
    assert files
    for relative in files:
        for name in ("page.dat", "links.tsv"):
            source = collection_crawl.dedup / relative.parent / name
            assert source.is_file()
            assert filecmp.cmp(source, out / relative.parent / name, shallow=False)


def test_mirror_lines_of_kept_pages_are_kept(
    collection_crawl: CollectionCrawl, samples: dict,
) -> None:
    out = samples["a"][0]
    pages = {record.url for _path, record in iter_tree(out)}
    every = list(iter_lines(collection_crawl.dedup / "mirrors.tsv"))
    kept = list(iter_lines(out / "mirrors.tsv"))
    assert kept == [line for line in every if line[2] in pages]
    assert kept and len(kept) < len(every)


def test_the_same_seed_gives_the_same_sample_and_another_seed_another(samples: dict) -> None:
    (a, a_out), (b, b_out), (c, _c_out) = samples["a"], samples["b"], samples["c"]
    assert a_out.replace(str(a), "OUT") == b_out.replace(str(b), "OUT")
    compared = filecmp.dircmp(a, b)
    assert compared.left_list == compared.right_list and not compared.diff_files
    assert all(filecmp.cmp(x, b / x.relative_to(a), shallow=False)
               for x in a.glob("data_*/*/*"))
    assert hosts_in(a) != hosts_in(c)


def test_the_count_line_says_what_was_kept(
    collection_crawl: CollectionCrawl, samples: dict,
) -> None:
    out, stdout = samples["a"]
    sizes = site_sizes(collection_crawl.expected)
    kept = hosts_in(out)
    pages = sum(sizes[host] for host in kept)
    assert stdout.startswith(f"sample: kept {len(kept)} of {len(sizes)} sites, {pages} of "
                             f"{len(collection_crawl.expected)} pages")


def test_an_existing_output_is_refused_unless_forced(
    collection_crawl: CollectionCrawl, tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    run = run_sample(collection_crawl, out, 1)
    assert run.returncode == 1 and "--force" in run.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    run = run_sample(collection_crawl, out, 1, "--force")
    assert run.returncode == 0, run.stderr
    assert not (out / "keep.txt").exists() and record_files(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary left


def test_an_output_inside_the_input_is_refused(collection_crawl: CollectionCrawl) -> None:
    run = run_sample(collection_crawl, collection_crawl.dedup / "sample", 1)
    assert run.returncode == 1 and "inside input" in run.stderr
    assert not (collection_crawl.dedup / "sample").exists()


def test_a_damaged_input_writes_nothing_and_names_the_file(
    collection_crawl: CollectionCrawl, tmp_path: Path,
) -> None:
    page = collection_crawl.data.parent / "damaged" / "data_1" / "a.com" / "page.dat"
    page.parent.mkdir(parents=True)
    page.write_bytes(b"version: 1.0\nurl: http://a.com/\nlength: 99\n\nshort")
    run = tianwang_cli("sample", str(page.parents[2]), "--out", str(tmp_path / "out"))
    assert run.returncode == 1 and str(page) in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_progress_bar_on_a_terminal(collection_crawl: CollectionCrawl, tmp_path: Path) -> None:
    code, stdout, shown = on_terminal("sample", str(collection_crawl.dedup), "--out",
                                      str(tmp_path / "out"))
    assert code == 0 and stdout.startswith(b"sample: kept ")
    for phase in (b"count", b"copy"):
        assert phase in shown
    assert shown.count(b"100.0%") >= 2


def test_damaged_data_behind_good_headers_is_never_copied_unsaid(tmp_path: Path) -> None:
    # Counting reads headers only; the copy must not carry a record whose DATA is damaged.
    tree = tmp_path / "tree"
    with RecordStore(tree) as store:
        for host in ("a.com", "b.com", "c.com"):
            for n in range(2):
                body = b"HTTP/1.1 200 OK\r\n\r\n" + host.encode() * (n + 5)
                date = "Sun, 22 Nov 2026 05:16:17 GMT"
                store.write(host, Record(f"http://{host}/{n}", body, date))
    for page in record_files(tree):
        blob = bytearray(page.read_bytes())
        blob[blob.index(b"\n\n") + 6] ^= 0xFF  # inside the first record's compressed DATA
        page.write_bytes(bytes(blob))
    run = tianwang_cli("sample", str(tree), "--out", str(tmp_path / "out"))
    assert run.returncode == 1 and "damaged record file" in run.stderr
    assert "offset 0" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()
