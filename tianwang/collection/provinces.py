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
   www.sh.gov.cn, www.beijing.gov.cn, www.bj.edu.cn (the provinces' own portals; not gz,
   which is Guangzhou's portal, gz.gov.cn, where Guizhou's is guizhou.gov.cn);
4. a place named in the host name (the operator gives no file, and most sites are placed so):
   a label, or a word of a label between digits and hyphens, that is a province's pinyin
   name (guangdong, shaanxi, neimenggu...) or a prefecture-level city's (qingdao, hangzhou,
   xian...), alone (www.hangzhou.gov.cn, qingdao17.com, beijing-hotel.com) or followed by
   one of a few words sites add to their city's name (qingdaonews.com, shanghaidaily.com,
   dalianonline); a subdomain label naming a municipality by its code (bj.58.com,
   sh.sina.com.cn: the four whose codes no site uses for anything else); an IDN label whose
   Chinese holds a province's name (北京大学.cn).

Rule 4 names only what the name says: a city whose pinyin two prefectures share (suzhou:
Jiangsu's 苏州 and Anhui's 宿州; taizhou, yichun, yulin) is placed only when one of them is a
provincial capital (fuzhou: Fujian's), and words shorter than four letters or also common
for something else (ali, aba, chaoyang, a Beijing district too) are left out. A name with no
place in it (sina.com, pku.edu.cn) stays "other": only the registry knows where it is.

Anything else is "other": other domains (.com, .net, a .com.cn the registry does not list),
Hong Kong, Macao and Taiwan (hk.cn, mo.cn, tw.cn: the paper's 31 are the mainland's), IP
addresses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from tianwang.domains import registered_domain

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
_WORD = re.compile(r"[a-z]+")

# Pinyin of the prefecture-level divisions, by province code (rule 4). Left out: names two
# prefectures share, unless one is a capital (module docstring), names under four letters,
# and names that are as often something else.
CITIES = {
    "bj": "", "tj": "", "sh": "", "cq": "",
    "he": "shijiazhuang tangshan qinhuangdao handan xingtai baoding zhangjiakou chengde "
          "cangzhou langfang hengshui",
    "sx": "taiyuan datong yangquan changzhi jincheng shuozhou jinzhong yuncheng xinzhou "
          "linfen lvliang",
    "nm": "huhehaote hohhot baotou wuhai chifeng tongliao eerduosi ordos hulunbeier "
          "bayannaoer wulanchabu",
    "ln": "shenyang dalian anshan fushun benxi dandong jinzhou yingkou fuxin liaoyang panjin "
          "tieling huludao",
    "jl": "changchun siping liaoyuan tonghua baishan songyuan baicheng yanbian",
    "hl": "haerbin harbin qiqihaer jixi hegang shuangyashan daqing jiamusi qitaihe "
          "mudanjiang heihe suihua",
    "js": "nanjing wuxi xuzhou changzhou nantong lianyungang huaian yancheng yangzhou "
          "zhenjiang suqian",
    "zj": "hangzhou ningbo wenzhou jiaxing huzhou shaoxing jinhua quzhou zhoushan lishui",
    "ah": "hefei wuhu bengbu huainan maanshan huaibei tongling anqing huangshan chuzhou "
          "fuyang bozhou chizhou xuancheng",
    "fj": "fuzhou xiamen putian sanming quanzhou zhangzhou nanping longyan ningde",
    "jx": "nanchang jingdezhen pingxiang jiujiang xinyu yingtan ganzhou shangrao",
    "sd": "jinan qingdao zibo zaozhuang dongying yantai weifang jining taian weihai rizhao "
          "linyi dezhou liaocheng binzhou heze",
    "ha": "zhengzhou kaifeng luoyang pingdingshan anyang hebi xinxiang jiaozuo puyang "
          "xuchang luohe sanmenxia nanyang shangqiu xinyang zhoukou zhumadian",
    "hb": "wuhan huangshi shiyan yichang xiangyang xiangfan ezhou jingmen xiaogan jingzhou "
          "huanggang xianning suizhou enshi",
    "hn": "changsha zhuzhou xiangtan hengyang shaoyang yueyang changde zhangjiajie yiyang "
          "chenzhou yongzhou huaihua loudi xiangxi",
    "gd": "guangzhou shaoguan shenzhen zhuhai shantou foshan jiangmen zhanjiang maoming "
          "zhaoqing huizhou meizhou shanwei heyuan yangjiang qingyuan dongguan zhongshan "
          "chaozhou jieyang yunfu",
    "gx": "nanning liuzhou guilin wuzhou beihai fangchenggang qinzhou guigang baise hezhou "
          "hechi laibin chongzuo",
    "hi": "haikou sanya sansha danzhou",
    "sc": "chengdu zigong panzhihua luzhou deyang mianyang guangyuan suining neijiang leshan "
          "nanchong meishan yibin guangan dazhou yaan bazhong ziyang ganzi liangshan",
    "gz": "guiyang liupanshui zunyi anshun bijie tongren",
    "yn": "kunming qujing yuxi zhaotong lijiang puer lincang chuxiong honghe wenshan "
          "xishuangbanna dali dehong nujiang diqing",
    "xz": "lasa lhasa rikaze shigatse changdu linzhi shannan naqu",
    "sn": "xian tongchuan baoji xianyang weinan yanan hanzhong ankang shangluo",
    "gs": "lanzhou jiayuguan jinchang baiyin tianshui wuwei zhangye pingliang jiuquan "
          "qingyang dingxi longnan linxia gannan",
    "qh": "xining haidong geermu golmud haixi",
    "nx": "yinchuan shizuishan guyuan zhongwei",
    "xj": "wulumuqi urumqi kelamayi karamay tulufan turpan hami kashi kashgar hetian hotan "
          "akesu kuerle korla changji shihezi",
}
# Pinyin spellings of the provinces beyond their English names (rule 4).
PROVINCE_PINYIN = {"nm": "neimenggu neimeng", "xz": "xizang", "hl": "heilongjiang hlj"}
# What sites add to a place's name in their own (qingdaonews, shanghaidaily).
SITE_WORDS = ("news", "daily", "online", "ol", "tv", "net", "web", "info", "city", "bbs",
              "gov", "edu", "ren", "wang", "bao", "ribao", "wanbao", "zaixian", "hr", "job",
              "jobs", "house", "fang", "travel", "tour", "hotel", "bus", "metro", "airport",
              "port", "bank", "law", "univ", "hospital", "library", "lib")
MUNICIPALITY_CODES = ("bj", "sh", "tj", "cq")  # as a subdomain label (rule 4)


def _squash(name: str) -> str:
    return name.lower().replace(" ", "")


# Every spelling a registry line (or a portal's domain) may use for a province -> its label.
SPELLINGS: dict[str, str] = {}
for (_code, _name, _chinese), _label in zip(PROVINCES, LABELS, strict=False):
    SPELLINGS.update({_code: _label, _squash(_name): _label, _chinese: _label})
SPELLINGS["内蒙"] = _BY_CODE["nm"]  # the paper's table writes it so

# Rule 3's names; gz.gov.cn is Guangzhou's portal (Guangdong), Guizhou's is guizhou.gov.cn.
PORTAL_CODES = {k: v for k, v in SPELLINGS.items() if k.isascii() and k != "gz"}

# Rule 4's words: pinyin place name -> row label.
PLACES: dict[str, str] = {}
for _code, _label in _BY_CODE.items():
    _names = f"{CITIES[_code]} {PROVINCE_PINYIN.get(_code, '')}".split()
    _names.append(_squash(_label.split(" ")[0] if _code != "nm" else "innermongolia"))
    PLACES.update(dict.fromkeys(_names, _label))
PLACES["shanxi"] = _BY_CODE["sx"]  # 山西; 陕西 is spelled shaanxi
PLACES["shaanxi"] = _BY_CODE["sn"]
PLACES["tibet"] = _BY_CODE["xz"]
_CHINESE = sorted(((c, label) for (_k, _n, c), label in zip(PROVINCES, LABELS, strict=False)),
                  key=lambda item: -len(item[0]))


class ProvinceError(ValueError):
    """A registry file that cannot be read; the message names the file and line."""


def province_of(host: str, registry: Mapping[str, str] | None = None,
                names: bool = True) -> str:
    """The row label of a host's province (module docstring), or "other"; `names` False
    leaves rule 4 out (to measure what it adds)."""
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
        if labels[-2] in PORTAL_TYPES and labels[-3] in PORTAL_CODES:
            return PORTAL_CODES[labels[-3]]
    return named_place(name) if names else OTHER


def named_place(host: str) -> str:
    """Rule 4: the province a place named in the host's labels says, or "other"."""
    labels = host.split(".")
    subdomains = len(labels) - registered_domain(host).count(".") - 1
    for index, label in enumerate(labels[:-1]):  # the top-level domain names no place
        if label.startswith("xn--"):
            found = _chinese_place(label)
            if found:
                return found
            continue
        if index < subdomains and label in MUNICIPALITY_CODES:
            return _BY_CODE[label]
        for word in _WORD.findall(label):
            found = PLACES.get(word) or _place_and_site_word(word)
            if found:
                return found
    return OTHER


def _place_and_site_word(word: str) -> str | None:
    for suffix in SITE_WORDS:
        if word.endswith(suffix) and len(word) > len(suffix):
            found = PLACES.get(word[:-len(suffix)])
            if found:
                return found
    return None


def _chinese_place(label: str) -> str | None:
    try:
        text = label.encode("ascii").decode("idna")
    except UnicodeError:
        return None
    for chinese, label_of in _CHINESE:
        if chinese in text:
            return label_of
    return None


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
