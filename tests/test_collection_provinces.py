"""Seed 004's table 4.4: a site's province from its domain or the operator's registry, and
`tianwang stats`'s province table on a hand-made record tree whose provinces are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tianwang_cli
from tests.test_collection_stats import number, tables
from tianwang.collection.provinces import (
    LABELS,
    OTHER,
    ProvinceError,
    parse_registry,
    province_of,
)
from tianwang.formats import Record, RecordStore, build_http_response

BEIJING, SHANGHAI, GUANGDONG, NEIMENG = ("Beijing 北京", "Shanghai 上海", "Guangdong 广东",
                                         "Inner Mongolia 内蒙古")


def test_31_provinces_and_other() -> None:
    assert len(LABELS) == 32 and LABELS[-1] == OTHER and len(set(LABELS)) == 32


@pytest.mark.parametrize(("host", "expected"), [
    ("www.abc.bj.cn", BEIJING),  # CNNIC's geographic domain
    ("abc.sh.cn:8080", SHANGHAI),  # a port does not count
    ("www.gd.gov.cn", GUANGDONG),  # a province's own government portal, by code...
    ("www.shanghai.gov.cn", SHANGHAI),  # ...or by name
    ("www.bj.edu.cn", BEIJING),
    ("www.pku.edu.cn", OTHER),  # a university: only the registry knows where it is
    ("www.bj.com.cn", OTHER),  # a company may take any name under com.cn
    ("www.abc.hk.cn", OTHER),  # Hong Kong, Macao and Taiwan are not among the 31
    ("bj.cn", OTHER),  # the suffix itself names no site
    ("www.sina.com", OTHER),
    ("10.0.0.1", OTHER),
    ("[::1]:80", OTHER),
])
def test_province_from_the_domain(host: str, expected: str) -> None:
    assert province_of(host) == expected


# Real sites' host names and where their owners are (public record), none made for the rule.
REAL_HOSTS = [
    ("www.qingdaonews.com", "Shandong 山东"), ("www.hangzhou.gov.cn", "Zhejiang 浙江"),
    ("www.wuhan.gov.cn", "Hubei 湖北"), ("www.chengdu.gov.cn", "Sichuan 四川"),
    ("www.shanghaidaily.com", SHANGHAI), ("www.xiamen.gov.cn", "Fujian 福建"),
    ("bj.58.com", BEIJING), ("sh.58.com", SHANGHAI), ("www.kunming.cn", "Yunnan 云南"),
    ("www.jinan.gov.cn", "Shandong 山东"), ("www.nanjing.gov.cn", "Jiangsu 江苏"),
    ("www.harbin.gov.cn", "Heilongjiang 黑龙江"), ("www.lanzhou.gov.cn", "Gansu 甘肃"),
    ("www.hefei.gov.cn", "Anhui 安徽"), ("www.guilin.gov.cn", "Guangxi 广西"),
    ("www.changsha.gov.cn", "Hunan 湖南"), ("www.guizhou.gov.cn", "Guizhou 贵州"),
    ("sh.sina.com.cn", SHANGHAI), ("www.dalian.gov.cn", "Liaoning 辽宁"),
    ("www.gz.gov.cn", GUANGDONG),  # Guangzhou's portal: gz is also Guizhou's code
    ("www.suzhou.gov.cn", "Jiangsu 江苏"),  # a pinyin two prefectures share
    ("www.sina.com.cn", BEIJING), ("www.pku.edu.cn", BEIJING), ("www.163.com", GUANGDONG),
    ("www.zju.edu.cn", "Zhejiang 浙江"),
]


def test_real_host_names_are_placed_by_the_places_they_name_and_never_wrongly() -> None:
    placed = {host: province_of(host) for host, _truth in REAL_HOSTS}
    wrong = {h: placed[h] for h, truth in REAL_HOSTS if placed[h] not in (truth, OTHER)}
    assert wrong == {}
    assert sum(placed[h] != OTHER for h, _t in REAL_HOSTS) == 19  # of 25; by the domain
    # rules alone (the CNNIC domains, the provinces' portals) 1, guizhou.gov.cn
    assert sum(province_of(h, names=False) != OTHER for h, _t in REAL_HOSTS) == 1


@pytest.mark.parametrize(("host", "expected"), [
    ("qingdao17.com", "Shandong 山东"),  # a label's word between digits
    ("www.beijing-hotel.com", BEIJING),  # and hyphens
    ("www.dalianonline.net", "Liaoning 辽宁"),  # a place and a word sites add to it
    ("www.shaanxi.gov.cn", "Shaanxi 陕西"), ("www.shanxinews.com", "Shanxi 山西"),
    ("xn--1lq90ic7f1rc.cn", BEIJING),  # 北京大学.cn
    ("www.bj.com.cn", OTHER),  # a code as the registered name says nothing
    ("js.example.com", OTHER),  # a province code other than a municipality's: a script host
    ("www.suzhou3.com", OTHER),  # Jiangsu's 苏州 or Anhui's 宿州
    ("www.fuzhou3.com", "Fujian 福建"),  # Fujian's capital over Jiangxi's 抚州
    ("www.xiangshan.com", OTHER),  # a word, not xian + something
    ("www.changshan.com", OTHER),
])
def test_places_in_host_names(host: str, expected: str) -> None:
    assert province_of(host) == expected


def test_the_registry_wins_and_its_longest_domain_first() -> None:
    registry = parse_registry([
        "# registrants' provinces",
        "pku.edu.cn   Beijing",
        "sina.com 上海  # the Chinese name",
        "news.sina.com gd",
        "abc.sh.cn InnerMongolia",
        "nm.example 内蒙",  # the paper's own spelling
    ])
    assert province_of("www.pku.edu.cn", registry) == BEIJING
    assert province_of("pku.edu.cn", registry) == BEIJING
    assert province_of("www.sina.com", registry) == SHANGHAI
    assert province_of("a.news.sina.com", registry) == GUANGDONG
    assert province_of("www.abc.sh.cn", registry) == NEIMENG  # before the domain's own rule
    assert province_of("www.xyz.sh.cn", registry) == SHANGHAI
    assert province_of("nm.example", registry) == NEIMENG
    assert province_of("xsina.com", registry) == OTHER  # a label, not a string suffix


@pytest.mark.parametrize(("line", "message"), [
    ("pku.edu.cn", "line 1: expected <domain> <province>"),
    ("pku.edu.cn Peking", "line 1: 'Peking' is not one of the 31 provinces"),
    ("a.hk.cn hk", "line 1: 'hk' is not one of the 31 provinces"),
])
def test_a_bad_registry_line_is_named(line: str, message: str) -> None:
    with pytest.raises(ProvinceError, match=message):
        parse_registry([line], "reg.txt")


# The tree: (host, pages, dynamic pages among them, province by construction)
SITES = [
    ("www.abc.bj.cn", 5, 2, BEIJING),
    ("news.pku.edu.cn", 3, 3, BEIJING),  # by the registry file
    ("www.sh.gov.cn", 4, 1, SHANGHAI),
    ("www.shop.gd.cn", 2, 0, GUANGDONG),
    ("www.sina.com", 6, 1, OTHER),
    ("www.abc.hk.cn", 1, 0, OTHER),
]


def write_tree(root: Path) -> None:
    date = "Mon, 23 Nov 2026 05:00:00 GMT"
    with RecordStore(root) as store:
        for host, pages, dynamic, _province in SITES:
            for k in range(pages):
                url = f"http://{host}/p{k}.php" if k < dynamic else f"http://{host}/p{k}.html"
                data = build_http_response(200, [(b"Content-Type", b"text/html")],
                                           f"<p>{host} {k}</p>".encode())
                store.write(host, Record(url, data, date))


def test_stats_province_table_on_a_tree_of_known_provinces(tmp_path: Path) -> None:
    write_tree(tmp_path / "tree")
    (tmp_path / "reg.txt").write_text("pku.edu.cn 北京\n", encoding="utf-8")
    run = tianwang_cli("stats", str(tmp_path / "tree"), "--provinces", str(tmp_path / "reg.txt"),
                       "--workers", "1")
    assert run.returncode == 0, run.stderr
    rows = tables(run.stdout)["Provinces"]
    expected: dict[str, list[int]] = {}
    for _host, pages, dynamic, province in SITES:
        row = expected.setdefault(province, [0, 0, 0])
        row[0] += pages
        row[1] += dynamic
        row[2] += 1
    got = {row[0]: [number(row[2]), number(row[3]), number(row[4])] for row in rows}
    assert {name: v for name, v in got.items() if v[0]} == expected
    assert len(rows) == 32  # every province, empty ones too, as the paper's table
    assert [row[0] for row in rows[:3]] == [BEIJING, SHANGHAI, GUANGDONG]  # most pages first
    assert rows[-1][0] == OTHER  # "other" last, as the paper's 其他
    assert rows[0][1] == f"{100 * 8 / 21:.3f}%"  # share of all 21 pages


def test_stats_without_a_registry_and_with_a_bad_one(tmp_path: Path) -> None:
    write_tree(tmp_path / "tree")
    run = tianwang_cli("stats", str(tmp_path / "tree"), "--workers", "1")
    got = {row[0]: number(row[2]) for row in tables(run.stdout)["Provinces"]}
    assert got[BEIJING] == 5 and got[OTHER] == 6 + 1 + 3  # pku.edu.cn is no longer known
    (tmp_path / "bad.txt").write_text("pku.edu.cn\n", encoding="utf-8")
    run = tianwang_cli("stats", str(tmp_path / "tree"), "--provinces", str(tmp_path / "bad.txt"))
    assert run.returncode == 1
    assert run.stderr.strip() == (f"tianwang stats: {tmp_path / 'bad.txt'}: line 1: expected "
                                  "<domain> <province>")
    run = tianwang_cli("stats", str(tmp_path / "tree"), "--provinces", str(tmp_path / "no.txt"))
    assert (run.returncode, run.stderr.strip()) == (
        1, f"tianwang stats: {tmp_path / 'no.txt'}: No such file or directory")
