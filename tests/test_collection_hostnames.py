"""`tianwang hosts clean`: malformed host names out of D0, each with its reason (D1).

Every reason class is made from a url a user could have in a list, counted by `hosts count`
and cleaned, and its reason is the one the module docstring gives, worked out by hand.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import tianwang_cli
from tianwang.collection.hostnames import clean, load_tlds, malformed
from tianwang.collection.sitelist import SiteListError, read_sites

LONG_LABEL = "a" * 64
LABEL_63 = "b" * 63
LONG_NAME = ".".join([LABEL_63] * 4) + ".com"  # 4*63 + 3 dots + 4 = 259 characters

# url in the list -> (site in D0, reason or None for kept)
CASES = {
    "http://www.pku.edu.cn/": ("http://www.pku.edu.cn:80/", None),
    "http://news.sina.com.cn:8080/": ("http://news.sina.com.cn:8080/", None),
    "http://\u5317\u4eac\u5927\u5b66.\u4e2d\u56fd/": (  # 北京大学.中国: an IDN, .中国 TLD
        "http://xn--1lq90ic7fzpc.xn--fiqs8s:80/", None),
    "http://xn--1lq90i.cn/": ("http://xn--1lq90i.cn:80/", None),
    "http://a-b.example.org/": ("http://a-b.example.org:80/", None),
    "http://61.135.169.125/": ("http://61.135.169.125:80/", None),  # IPs stay (D4 drops them)
    "http://[2001:db8::1]/": ("http://[2001:db8::1]:80/", None),
    "http://" + ".".join([LABEL_63] * 3) + ".cn/": (
        "http://" + ".".join([LABEL_63] * 3) + ".cn:80/", None),  # 63 is not too long
    "http://1.2.3.456/": ("http://1.2.3.456:80/", "bad-ip"),
    "http://[::1/": ("http://[::1:80/", "bad-ip"),
    "http://a_b.example.com/": ("http://a_b.example.com:80/", "bad-char"),
    "http://a<b.example.com/": ("http://a<b.example.com:80/", "bad-char"),
    "http://www.pku.edu.cn*/": ("http://www.pku.edu.cn*:80/", "bad-char"),
    "http://\u5317<\u4eac.cn/": ("http://\u5317<\u4eac.cn:80/", "bad-char"),  # 北<京.cn
    "http://xn--zz.com/": ("http://xn--zz.com:80/", "bad-idna"),
    "http://\u5317\uff1c\u4eac.cn/": (  # full-width <, which IDNA maps to <
        "http://\u5317\uff1c\u4eac.cn:80/", "bad-idna"),
    "http://www..pku.edu.cn/": ("http://www..pku.edu.cn:80/", "empty-label"),
    "http://.pku.edu.cn/": ("http://.pku.edu.cn:80/", "empty-label"),
    "http://\u5317\u4eac..cn/": ("http://\u5317\u4eac..cn:80/", "empty-label"),
    f"http://{LONG_LABEL}.com/": (f"http://{LONG_LABEL}.com:80/", "long-label"),
    f"http://{LONG_NAME}/": (f"http://{LONG_NAME}:80/", "long-name"),
    "http://-www.pku.edu.cn/": ("http://-www.pku.edu.cn:80/", "bad-hyphen"),
    "http://www-.pku.edu.cn/": ("http://www-.pku.edu.cn:80/", "bad-hyphen"),
    "http://localhost/": ("http://localhost:80/", "no-dot"),
    "http://intranet:8080/": ("http://intranet:8080/", "no-dot"),
    "http://www.pku.edu.c0m/": ("http://www.pku.edu.c0m:80/", "bad-tld"),
    "http://www.sina.con/": ("http://www.sina.con:80/", "bad-tld"),
    "http://www.site.yu/": ("http://www.site.yu:80/", "bad-tld"),  # gone from the root zone
}


@pytest.fixture
def d0(tmp_path: Path) -> Path:
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"{url}\n" for url in CASES), encoding="utf-8")
    out = tmp_path / "D0"
    run = tianwang_cli("hosts", "count", str(urls), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert {site for site, _ in read_sites(out)} == {site for site, _ in CASES.values()}
    return out


def test_each_malformed_name_removed_with_its_reason(d0: Path, tmp_path: Path) -> None:
    out = tmp_path / "D1"
    run = tianwang_cli("hosts", "clean", str(d0), "--out", str(out))
    assert run.returncode == 0, run.stderr
    kept = sorted(site for site, reason in CASES.values() if reason is None)
    removed = sorted((site, reason) for site, reason in CASES.values() if reason)
    assert [site for site, _ in read_sites(out)] == kept
    assert [(site, reason) for site, _, reason in read_sites(f"{out}.removed", 3)] == removed
    assert run.stdout.strip() == (
        f"D1: {len(kept)} sites kept, {len(removed)} removed (bad-ip 2, bad-char 4, "
        "bad-idna 2, empty-label 3, long-label 1, long-name 1, bad-hyphen 2, no-dot 2, "
        "bad-tld 3)")


def test_pages_carried_over_and_first_reason_wins(tmp_path: Path) -> None:
    d0 = tmp_path / "D0"
    d0.write_text("http://a_b..cn:80/\t7\nhttp://www.pku.edu.cn:80/\t12\n"
                  "http://WWW.PKU.EDU.CN:80/\t3\n")  # upper case is not D0's: a bad character
    removed = tmp_path / "gone.tsv"
    run = tianwang_cli("hosts", "clean", str(d0), "-o", str(tmp_path / "D1"),
                       "--removed", str(removed))
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "D1").read_text() == "http://www.pku.edu.cn:80/\t12\n"
    assert removed.read_text() == ("http://WWW.PKU.EDU.CN:80/\t3\tbad-char\n"
                                   "http://a_b..cn:80/\t7\tbad-char\n")


def test_another_tld_list(d0: Path, tmp_path: Path) -> None:
    tlds = tmp_path / "tlds.txt"
    tlds.write_text("# Version 2005, the root zone of the thesis's time\nCN\nCOM\nYU\n")
    out = tmp_path / "D1"
    run = tianwang_cli("hosts", "clean", str(d0), "-o", str(out), "--tlds", str(tlds))
    assert run.returncode == 0, run.stderr
    removed = {site: reason for site, _, reason in read_sites(f"{out}.removed", 3)}
    assert "http://www.site.yu:80/" not in removed
    assert removed["http://a-b.example.org:80/"] == "bad-tld"
    assert removed["http://xn--1lq90ic7fzpc.xn--fiqs8s:80/"] == "bad-tld"


@pytest.mark.parametrize("line", [
    "http://www.pku.edu.cn/\t3\n",  # no port
    "www.pku.edu.cn:80/\t3\n",
    "http://www.pku.edu.cn:80/\tthree\n",
    "http://www.pku.edu.cn:80/\t0\n",
    "http://www.pku.edu.cn:80/\n",
    "http://a.cn:80/\t1\n",  # twice
])
def test_a_malformed_d0_is_refused_naming_the_line(tmp_path: Path, line: str) -> None:
    d0 = tmp_path / "D0"
    d0.write_text("http://a.cn:80/\t1\n" + line)
    with pytest.raises(SiteListError, match="D0: (line 2|http://a.cn:80/ is listed twice)"):
        clean(d0, load_tlds())


def test_a_malformed_d0_writes_nothing(tmp_path: Path) -> None:
    d0 = tmp_path / "D0"
    d0.write_text("http://a.cn:80/\t1\nhttp://www.pku.edu.cn/\t3\n")
    run = tianwang_cli("hosts", "clean", str(d0), "-o", str(tmp_path / "D1"))
    assert run.returncode == 1
    assert f"{d0}: line 2" in run.stderr and "not written" in run.stderr
    assert os.listdir(tmp_path) == ["D0"]


# An independent reading of RFC 1123 host names plus the root zone list, for ASCII names
# whose last label is not a number (so never an IPv4 address): clean keeps exactly these.
TLDS = {line.strip().lower() for line in
        (Path(__file__).resolve().parent.parent / "tianwang" / "collection"
         / "tlds-alpha-by-domain.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")}
TLD_SET = load_tlds()
RFC_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def rfc_host(host: str) -> bool:
    labels = host.split(".")
    return (len(labels) >= 2 and len(host) <= 253 and labels[-1] in TLDS
            and all(RFC_LABEL.fullmatch(label) for label in labels))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.text("ab0-_.", max_size=70) | st.sampled_from(["a" * 63, "b" * 64, "xn--1lq90i"]),
             max_size=6),
    st.sampled_from(["cn", "com", "org", "c", "zzz", "c0m", "cn-", "Com"]),
)
def test_kept_exactly_when_rfc_host_name(labels: list[str], tld: str) -> None:
    host = ".".join([*labels, tld])
    assert (malformed(host, TLD_SET) is None) == rfc_host(host), host
