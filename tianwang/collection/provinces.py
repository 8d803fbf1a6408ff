"""The province of a site, for seed 004's table 4.4 ("pages by province": pages, dynamic pages
and sites of each of the 31 provinces and "other"). Pure python.

The paper gives the table, not its method. Its numbers show the domain alone cannot be it:
Beijing holds 21% of the pages and 12,664 sites while the province .cn domains (bj.cn, ...)
hold 1.5% of the pages in its own table 4.2, so most sites were placed by who registered their
domain. Here a site's province comes, first match wins, from:

1. the operator's registry (`tianwang stats --provinces FILE`): lines `<domain> <province>`,
   e.g. `pku.edu.cn Beijing`, from the registrant records of the domains (WHOIS), which this
   tool cannot look up itself without the network. A domain covers itself and every host
   under it; the longest listed domain of a host wins. A province is given by its code (bj),
   its name (Beijing; Inner Mongolia may be written InnerMongolia) or its Chinese name (北京).
   `#` starts a comment.
2. the geographic domain: a host under `<code>.cn`, the province domains CNNIC gives each
   province (www.abc.bj.cn is Beijing's);
3. a government or education registered domain named for a province, by code or name:
   www.sh.gov.cn, www.beijing.gov.cn, www.bj.edu.cn (the provinces' own portals).

Anything else is "other": other domains (.com, .net, a .com.cn the registry does not list),
Hong Kong, Macao and Taiwan (hk.cn, mo.cn, tw.cn: the paper's 31 are the mainland's), IP
addresses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

# The 31 mainland provinces (GB/T 2260 order): CNNIC's code under .cn, name, Chinese name.
PROVINCES = (
    ("bj", "Beijing", "北京"), ("tj", "Tianjin", "天津"), ("he", "Hebei", "河北"),
    ("sx", "Shanxi", "山西"), ("nm", "Inner Mongolia", "内蒙古"), ("ln", "Liaoning", "辽宁"),
    ("jl", "Jilin", "吉林"), ("hl", "Heilongjiang", "黑龙江"), ("sh", "Shanghai", "上海"),
    ("js", "Jiangsu", "江苏"), ("zj", "Zhejiang", "浙江"), ("ah", "Anhui", "安徽"),
    ("fj", "Fujian", "福建"), ("jx", "Jiangxi", "江西"), ("sd", "Shandong", "山东"),
    ("ha", "Henan", "河南"), ("hb", "Hubei", "湖北"), ("hn", "Hunan", "湖南"),
    ("gd", "Guangdong", "广东"), ("gx", "Guangxi", "广西"), ("hi", "Hainan", "海南"),
    ("cq", "Chongqing", "重庆"), ("sc", "Sichuan", "四川"), ("gz", "Guizhou", "贵州"),
    ("yn", "Yunnan", "云南"), ("xz", "Tibet", "西藏"), ("sn", "Shaanxi", "陕西"),
    ("gs", "Gansu", "甘肃"), ("qh", "Qinghai", "青海"), ("nx", "Ningxia", "宁夏"),
    ("xj", "Xinjiang", "新疆"),
)
OTHER = "other"
# A report's row labels, "Beijing 北京", in table order before sorting; "other" last.
LABELS = tuple(f"{name} {chinese}" for _code, name, chinese in PROVINCES) + (OTHER,)
_BY_CODE = {code: label for (code, _n, _c), label in zip(PROVINCES, LABELS, strict=False)}
PORTAL_TYPES = ("gov", "edu")  # second levels whose province-named domains are provinces'
_IPV4 = re.compile(r"[0-9.]+\Z")


def _squash(name: str) -> str:
    return name.lower().replace(" ", "")


# Every spelling a registry line (or a portal's domain) may use for a province -> its label.
SPELLINGS: dict[str, str] = {}
for (_code, _name, _chinese), _label in zip(PROVINCES, LABELS, strict=False):
    SPELLINGS.update({_code: _label, _squash(_name): _label, _chinese: _label})
SPELLINGS["内蒙"] = _BY_CODE["nm"]  # the paper's table writes it so


class ProvinceError(ValueError):
    """A registry file that cannot be read; the message names the file and line."""


def province_of(host: str, registry: Mapping[str, str] | None = None) -> str:
    """The row label of a host's province (module docstring), or "other"."""
    name = host.lower().rstrip(".").rsplit(":", 1)[0] if not host.startswith("[") else ""
    if not name or _IPV4.match(name):
        return OTHER
    labels = name.split(".")
    if registry:
        for start in range(len(labels)):  # the longest listed domain first
            found = registry.get(".".join(labels[start:]))
            if found is not None:
                return found
    if len(labels) >= 3 and labels[-1] == "cn":
        if labels[-2] in _BY_CODE:
            return _BY_CODE[labels[-2]]
        if labels[-2] in PORTAL_TYPES:
            return SPELLINGS.get(labels[-3], OTHER) if labels[-3].isascii() else OTHER
    return OTHER


def load_registry(path: str | Path) -> dict[str, str]:
    """The operator's `<domain> <province>` lines as domain -> row label."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProvinceError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_registry(text.splitlines(), str(path))


def parse_registry(lines: Iterable[str], name: str = "registry") -> dict[str, str]:
    registry: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split(None, 1)
        if not words:
            continue
        if len(words) != 2:
            raise ProvinceError(f"{name}: line {number}: expected <domain> <province>")
        domain, province = words[0].lower().strip("."), words[1].strip()
        label = SPELLINGS.get(province) or SPELLINGS.get(_squash(province))
        if label is None:
            raise ProvinceError(f"{name}: line {number}: {province!r} is not one of the 31 "
                                "provinces (a code such as bj, a name or a Chinese name)")
        registry[domain] = label
    return registry


def report_order(pages: Mapping[str, int]) -> list[str]:
    """Row labels as table 4.4 lists them: most pages first (ties in code order), "other"
    last."""
    provinces = sorted(LABELS[:-1], key=lambda label: -pages.get(label, 0))
    return [*provinces, OTHER]
