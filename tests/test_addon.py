"""The Tianwang add-on and verticals, in the settings of a crawler Scrapy builds."""

from __future__ import annotations

import pytest
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.test import get_crawler

from tests.conftest import project_crawler
from tianwang.config import SettingError, get_int
from tianwang.config.frontier import FrontierConfig
from tianwang.spiders.site import SiteSpider
from tianwang.verticals import VERTICALS

ADDON_ONLY = {"ADDONS": {"tianwang.addon.Tianwang": 0}}
FRONTIER = "tianwang.frontier.scheduler.FrontierScheduler"


def addon_crawler(**settings: object):
    """A crawler of a project whose settings are only the add-on (and `settings`)."""
    return get_crawler(SiteSpider, {**ADDON_ONLY, **settings})


def test_addon_alone_brings_the_whole_stack() -> None:
    settings = addon_crawler().settings
    assert settings["SCHEDULER"] == FRONTIER
    assert settings.getpriority("SCHEDULER") == SETTINGS_PRIORITIES["addon"]
    middlewares = {path.__name__ for path in settings.getdict("DOWNLOADER_MIDDLEWARES")}
    assert {"HostFilterMiddleware", "ProxyMiddleware", "ContentTypeMiddleware"} <= middlewares
    pipelines = {path.__name__ for path in settings.getdict("ITEM_PIPELINES")}
    assert {"MD5DedupPipeline", "TianwangStoragePipeline", "LinkGraphPipeline"} <= pipelines
    assert settings["TIANWANG_MAX_LEVELS"] == 3 and settings["TIANWANG_DATA_DIR"] == "data"
    assert settings.getbool("ROBOTSTXT_OBEY") and settings.getfloat("DOWNLOAD_DELAY") == 1.0


def test_project_settings_beat_the_addon() -> None:
    settings = addon_crawler(
        DOWNLOAD_DELAY=0.25,
        TIANWANG_MAX_LEVELS=7,
        ITEM_PIPELINES={"tianwang.pipelines.linkgraph.LinkGraphPipeline": None},
        BOT_NAME="other",
    ).settings
    assert settings.getfloat("DOWNLOAD_DELAY") == 0.25 and settings["TIANWANG_MAX_LEVELS"] == 7
    assert settings["BOT_NAME"] == "other"
    pipelines = {
        path if isinstance(path, str) else path.__name__: order
        for path, order in settings.getdict("ITEM_PIPELINES").items()
    }
    # Turned off by the project, it stays off; the others are added.
    assert pipelines["tianwang.pipelines.linkgraph.LinkGraphPipeline"] is None
    assert pipelines["TianwangStoragePipeline"] == 800


@pytest.mark.parametrize("make", [addon_crawler, project_crawler], ids=["addon-only", "tianwang"])
def test_vertical_values_are_in_the_crawler_settings_at_addon_priority(make) -> None:
    settings = make(TIANWANG_VERTICAL="government").settings
    for name, value in VERTICALS["government"].items():
        assert settings[name] == value, name
        assert settings.getpriority(name) == SETTINGS_PRIORITIES["addon"], name


def cmdline_crawler(cmdline: dict[str, str]):
    """A crawler of the tianwang project given `-s NAME=VALUE` for each of cmdline."""
    from scrapy.crawler import CrawlerRunner
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("tianwang.settings", priority="project")
    settings.setdict(cmdline, priority="cmdline")
    crawler = CrawlerRunner(settings).create_crawler(SiteSpider)
    crawler._apply_settings()
    return crawler


def test_command_line_beats_the_vertical() -> None:
    settings = cmdline_crawler({"TIANWANG_VERTICAL": "news", "TIANWANG_MAX_LEVELS": "1"}).settings
    assert settings.getint("TIANWANG_MAX_LEVELS") == 1
    assert settings.getpriority("TIANWANG_MAX_LEVELS") == SETTINGS_PRIORITIES["cmdline"]
    assert settings["TIANWANG_KEYWORDS"] == VERTICALS["news"]["TIANWANG_KEYWORDS"]


def test_a_project_choice_beats_the_vertical() -> None:
    settings = addon_crawler(TIANWANG_VERTICAL="news", TIANWANG_MAX_LEVELS=9).settings
    assert settings["TIANWANG_MAX_LEVELS"] == 9
    assert settings["TIANWANG_KEYWORD_BOOST"] == VERTICALS["news"]["TIANWANG_KEYWORD_BOOST"]


def test_unknown_vertical_names_the_known_ones() -> None:
    with pytest.raises(SettingError) as error:
        project_crawler(TIANWANG_VERTICAL="sports")
    assert str(error.value) == (
        "setting TIANWANG_VERTICAL='sports' is invalid: expected one of: collection, forum, "
        "government, news, paper"
    )


def test_a_project_vertical_joins_the_known_ones_and_a_misspelt_setting_is_refused() -> None:
    mine = {"blogs": {"TIANWANG_MAX_LEVELS": 2}}
    settings = project_crawler(TIANWANG_VERTICALS=mine, TIANWANG_VERTICAL="blogs").settings
    assert settings["TIANWANG_MAX_LEVELS"] == 2
    known = "one of: blogs, collection, forum, government, news, paper"
    with pytest.raises(SettingError, match=known):
        project_crawler(TIANWANG_VERTICALS=mine, TIANWANG_VERTICAL="blog")
    with pytest.raises(SettingError, match="TIANWANG_MAX_LEVEL'"):
        project_crawler(
            TIANWANG_VERTICALS={"typo": {"TIANWANG_MAX_LEVEL": 2}}, TIANWANG_VERTICAL="typo"
        )


@pytest.mark.parametrize("name", sorted(VERTICALS))
def test_every_builtin_vertical_passes_the_stack_checks(name: str) -> None:
    crawler = project_crawler(TIANWANG_VERTICAL=name)
    FrontierConfig.from_settings(crawler.settings)
    domains = crawler.settings.getlist("TIANWANG_ALLOWED_DOMAINS")
    seed = f"www.{domains[0]}" if domains else "www.example.com"  # a seed the vertical allows
    spider = SiteSpider.from_crawler(crawler, seeds=seed)
    assert spider.max_levels == VERTICALS[name]["TIANWANG_MAX_LEVELS"]
    # The refresh spider's own checks of its bounds (building it needs a crawled history).
    low = get_int(crawler.settings, "TIANWANG_MIN_REVISIT", minimum=1)
    assert get_int(crawler.settings, "TIANWANG_MAX_REVISIT", minimum=low) >= low


def test_a_component_list_on_the_command_line_is_the_whole_list() -> None:
    # As before the add-on: `-s ITEM_PIPELINES={}` crawls without pipelines (bench/order.py).
    settings = cmdline_crawler({"ITEM_PIPELINES": "{}"}).settings
    assert settings.getdict("ITEM_PIPELINES") == {}
    assert addon_crawler().settings.getdict("ITEM_PIPELINES")  # the project level still fills


def test_the_docs_vertical_example_is_a_valid_vertical() -> None:
    import ast
    import re

    from tests.conftest import ROOT

    section = (ROOT / "docs" / "verticals.md").read_text(encoding="utf-8")
    block = re.findall(r"```python\n(.+?)```", section, re.S)[0]
    example = ast.literal_eval("{" + block.strip().rstrip(",") + "}")
    settings = project_crawler(TIANWANG_VERTICALS=example, TIANWANG_VERTICAL="university").settings
    for name, value in example["university"].items():
        assert settings[name] == value, name
