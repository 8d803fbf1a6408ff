"""The project's documentation in the repo stays true to the code and to itself."""

from __future__ import annotations

import re

import tianwang.default_settings as defaults
from tests.conftest import ROOT


def test_every_stack_setting_is_documented() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    names = [name for name in dir(defaults) if name.isupper()]
    assert [name for name in names if f"`{name}`" not in text] == []


def test_the_readme_and_the_docs_link_only_to_files_a_user_has() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, page.name
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name} links to {target}"
