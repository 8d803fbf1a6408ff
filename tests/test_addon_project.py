"""Another Scrapy project, made from the add-on example of docs/crawling.md, crawls the test
web into Tianwang records with nothing of tianwang enabled but the add-on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, TEST_SETTINGS, TestWeb
from tests.test_spiders_site import access_log, read_tree
from tests.truth import host_of, reach


def readme_project_files() -> dict[str, str]:
    """The docs' example files: python blocks whose first line is `# <path>`."""
    text = (ROOT / "docs" / "crawling.md").read_text(encoding="utf-8")
    section = text.split("## Tianwang in another Scrapy project", 1)[1].split("\n## ", 1)[0]
    files = {}
    for block in re.findall(r"```python\n(.+?)```", section, re.S):
        first, _, body = block.partition("\n")
        files[first.removeprefix("# ").strip()] = body
    return files


def make_project(root: Path) -> Path:
    files = readme_project_files()
    assert set(files) == {"portal/settings.py", "portal/spiders/portal.py"}
    assert len("".join(files.values()).strip().splitlines()) <= 10
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")
    for package in ("portal", "portal/spiders"):
        (root / package / "__init__.py").touch()
    (root / "scrapy.cfg").write_text("[settings]\ndefault = portal.settings\n")
    return root


def test_a_project_with_only_the_addon_stores_tianwang_records(
    testweb: TestWeb, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "portal_project")
    seeds = [url for url, page in testweb.truth.items() if page["kind"] == "home"][:4]
    command = [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"seeds={','.join(seeds)}"]
    # Only what a test web needs (proxy, no delay); everything else is the add-on's.
    for name, value in {**TEST_SETTINGS, "TIANWANG_PROXY": testweb.address}.items():
        command += ["-s", f"{name}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("SCRAPY_SETTINGS_MODULE", "http_proxy"):
        env.pop(name, None)
    since = len(testweb.access_log.read_text(encoding="utf-8").splitlines())
    result = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "tianwang.addon.Tianwang" in result.stderr  # Scrapy's "Enabled addons" line

    # The add-on's default data dir, levels, in-host rule and robots.txt, as in this project.
    records = read_tree(project / "data")
    stored = {record["header"]["url"] for record in records}
    assert stored == reach(testweb.truth, seeds, max_levels=3).stored(testweb.truth)
    assert len(stored) > len(seeds)
    assert all("unzip-length" in record["header"] for record in records)  # zlib, the default
    assert {host_of(entry["url"]) for entry in access_log(testweb, since)} == {
        host_of(url) for url in seeds
    }
    # The dedup and link graph pipelines ran too.
    assert (project / "data" / "md5.sqlite").exists()
    assert list((project / "data").glob("data_*/*/links.tsv"))
