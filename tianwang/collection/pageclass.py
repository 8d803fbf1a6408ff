"""Seed 004's classes of a page: its site's domain type, its page form, dynamic or not.

Domain types (table 4.2): the suffix of the host name, the longest that names a type:
.com.cn, .net.cn, .org.cn, .gov.cn, .edu.cn, .ac.cn, a province's .cn (bj.cn, sh.cn, ...:
the 34 province-level codes of CNNIC's geographic domains), any other .cn, .com, .net,
.org; everything else (other TLDs, IP addresses) is "other".

Page form (table 4.3): the extension of the url's last path segment, lowercased (asp, php,
html, ...); "/" for a path that ends in "/" or is empty (a directory's default page);
"(none)" for a last segment without an extension; "other" for an extension that is not a
short run of letters and digits. The query does not count: show.asp?id=1 is asp.

Dynamic (seed 004 kept "dynamically generated pages", which CWT100g left out): a url with a
query, or whose form is a server script (SCRIPT_FORMS). shtml is not one: server-side
includes assemble a static file, and with it the share of dynamic pages in the paper's form
table (69%) would stray further from its domain table's (65%) than without it (66%).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# The 34 province-level divisions' codes under .cn (bj.cn is Beijing's).
PROVINCES = frozenset((
    "bj", "sh", "tj", "cq", "he", "sx", "nm", "ln", "jl", "hl", "js", "zj", "ah", "fj", "jx",
    "sd", "ha", "hb", "hn", "gd", "gx", "hi", "sc", "gz", "yn", "xz", "sn", "gs", "qh", "nx",
    "xj", "tw", "hk", "mo",
))
CN_TYPES = ("com", "net", "org", "gov", "edu", "ac")  # second-level .cn names with a type
# Every domain type in the order the issue lists them (a report shows them all).
DOMAIN_TYPES = (
    ".com", ".net", ".cn", ".com.cn", ".org", ".gov.cn", ".edu.cn", ".net.cn", ".org.cn",
    ".ac.cn", "province .cn", "other",
)
SCRIPT_FORMS = frozenset((
    "asp", "aspx", "php", "php3", "php4", "php5", "phtml", "jsp", "jspx", "cgi", "pl", "nsf",
    "cfm", "do", "action", "dll",
))
_EXTENSION = re.compile(r"[a-z0-9]{1,10}\Z")
_IPV4 = re.compile(r"[0-9.]+\Z")


def domain_type(host: str) -> str:
    """The domain type of a host name (a port, if any, is ignored)."""
    name = host.lower().rstrip(".")
    if name.startswith("["):
        return "other"
    name = name.rsplit(":", 1)[0]
    if _IPV4.match(name):
        return "other"
    labels = name.split(".")
    if len(labels) >= 2 and labels[-1] == "cn":
        second = labels[-2] if len(labels) >= 3 else ""
        if second in CN_TYPES:
            return f".{second}.cn"
        return "province .cn" if second in PROVINCES else ".cn"
    if len(labels) >= 2 and labels[-1] in ("com", "net", "org"):
        return f".{labels[-1]}"
    return "other"


def page_form(url: str) -> str:
    """The page form of a url: its extension, "/", "(none)" or "other"."""
    path = urlsplit(url).path.split(";", 1)[0]
    if not path or path.endswith("/"):
        return "/"
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return "(none)"
    extension = name.rsplit(".", 1)[1].lower()
    return extension if _EXTENSION.match(extension) else "other"


def is_dynamic(url: str, form: str | None = None) -> bool:
    """A query (even an empty one) or a server-script form (page_form(url), if given)."""
    if "?" in url.split("#", 1)[0]:
        return True
    return (page_form(url) if form is None else form) in SCRIPT_FORMS
