"""The project's documentation in the repo stays true to the code and to itself."""

from __future__ import annotations

import re
from pathlib import Path

import tianwang.default_settings as defaults
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Pages another branch is writing, linked already; excused only while they are missing.
PENDING = {ROOT / "docs" / "collection.md"}


def test_every_stack_setting_is_documented() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    names = [name for name in dir(defaults) if name.isupper()]
    assert [name for name in names if f"`{name}`" not in text] == []


def test_every_tianwang_setting_the_docs_name_is_a_setting() -> None:
    known = {name for name in dir(defaults) if name.isupper()}
    # Named as refused (a renamed setting, a misspelt one), or an environment variable.
    others = {"TIANWANG_VALIDATE_RETRIES", "TIANWANG_MAX_LEVEL", "TIANWANG_REDIS_PASSWORD"}
    for page in PAGES:
        named = set(re.findall(r"\bTIANWANG_[A-Z0-9_]*[A-Z0-9]\b", page.read_text("utf-8")))
        assert named - known - others == set(), page.name


def _prose(text: str) -> str:
    """The page without its fenced blocks (a `# comment` there is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The ids GitHub gives the page's headings."""
    ids: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", _prose(page.read_text("utf-8")), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        found, n = slug, 0
        while found in ids:
            n += 1
            found = f"{slug}-{n}"
        ids.add(found)
    return ids


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, page.name
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", _prose(text)):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target).resolve() if target else page
            if path in PENDING and not path.exists():
                continue
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []


def test_the_manual_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {page.name for page in PAGES if page.parent.name == "docs"} - {"README.md"}
    assert {page for page in pages if f"]({page})" not in index} == set()


def test_the_papers_are_called_by_their_topic() -> None:
    for page in PAGES:
        assert not re.search(r"\bseeds? 00\d", page.read_text("utf-8"), re.I), page.name
