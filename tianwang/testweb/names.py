"""Host names and the word pools the synthetic web draws its names from.

Pure python: the host model must stay importable without Scrapy or Twisted.
"""

from __future__ import annotations

import itertools
from random import Random

# Pinyin and English words for host names. None holds "search", "proxy" or "gate", so a
# host name never carries a URL-weight penalty of its own (those words live in paths).
HOST_WORDS = (
    "tianwang", "beida", "xinhua", "renmin", "huaxia", "changcheng", "dongfang", "jinqiao",
    "hongqi", "yangguang", "lanshan", "qinghe", "baiyun", "taishan", "huanghe", "changjiang",
    "xiangshan", "shuimu", "yanyuan", "zijing", "minzu", "jiaoda", "fudan", "nankai",
    "zhongshan", "xiamen", "shanda", "hagong", "dalian", "qingdao", "suzhou", "hangzhou",
    "ningbo", "kunming", "guilin", "lanzhou", "chengdu", "wuhan", "changsha", "nanjing",
    "tianjin", "shenzhen", "hefei", "jinan", "fuzhou", "nanning", "haikou", "sun", "star",
    "sky", "blue", "green", "dragon", "panda", "lotus", "jade", "pearl", "silk", "tea", "book",
    "music", "game", "soft", "data", "web", "info", "tech", "travel", "food", "health", "car",
    "house", "job", "law", "art", "photo", "movie", "sport", "stock", "home", "city",
)

# (share, tld, subdomain prefixes) - com and com.cn dominate as in seed 004's domain table.
DOMAIN_TYPES = (
    (0.38, "com", ("www", "www", "www", "bbs", "blog", "news", "club", "shop")),
    (0.22, "com.cn", ("www", "www", "bbs", "news", "mail", "info")),
    (0.10, "net", ("www", "www", "bbs", "down")),
    (0.09, "edu.cn", ("www", "www", "news", "lib", "cs", "jwc", "bbs")),
    (0.07, "gov.cn", ("www", "www", "info", "zwgk")),
    (0.06, "cn", ("www", "www", "bbs")),
    (0.05, "org", ("www", "www", "forum")),
    (0.03, "org.cn", ("www", "www")),
)

# Chinese and English words for titles, anchor texts and body text. All are in GB2312, so
# every page encodes to GBK without loss.
ZH_WORDS = (
    "中国", "北京", "大学", "新闻", "网络", "计算机", "科学", "技术", "信息", "搜索", "引擎",
    "天网", "学院", "研究", "中心", "发展", "经济", "社会", "文化", "教育", "历史", "工作",
    "通知", "公告", "论坛", "讨论", "下载", "软件", "图片", "资料", "文章", "专题", "首页",
    "联系", "我们", "关于", "服务", "产品", "公司", "政府", "办公", "会议", "报告", "学生",
    "老师", "课程", "考试", "招生", "就业", "体育", "音乐", "电影", "旅游", "天气", "今天",
    "明天", "时间", "地址", "电话", "网站", "系统", "数据", "管理", "用户", "问题", "方法",
)
EN_WORDS = (
    "web", "crawler", "search", "engine", "page", "site", "link", "news", "data", "system",
    "network", "index", "archive", "report", "china", "beijing", "university", "science",
    "the", "of", "and", "for", "with", "from", "about", "home", "download", "forum", "user",
)

DOMAIN_CUMULATIVE = list(itertools.accumulate(share for share, _tld, _prefixes in DOMAIN_TYPES))


def draw_host_name(rng: Random, index: int) -> str:
    """The name of host `index`; the index in the second label makes names unique."""
    _share, tld, prefixes = rng.choices(DOMAIN_TYPES, cum_weights=DOMAIN_CUMULATIVE)[0]
    word = rng.choice(HOST_WORDS)
    return f"{rng.choice(prefixes)}.{word}{index}.{tld}"


def host_rng(seed: int, index: int) -> Random:
    """The random stream of one host: string seeds hash with sha512, never Python's hash()."""
    return Random(f"{seed}:{index}")


def host_name(seed: int, index: int) -> str:
    return draw_host_name(host_rng(seed, index), index)
