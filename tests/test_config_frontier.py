"""The frontier's settings: read from the project defaults, checked before the engine starts."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured

from tests.conftest import project_crawler
from tianwang import default_settings as project
from tianwang.config import SettingError
from tianwang.config.frontier import FrontierConfig
from tianwang.frontier.settingscheck import FrontierSettingsCheck


def test_the_project_defaults_make_the_config() -> None:
    config = FrontierConfig.from_settings(project_crawler().settings)
    assert (config.sorted_picks, config.host_picks, config.random_picks) == (
        project.TIANWANG_SORTED_PICKS, project.TIANWANG_HOST_PICKS,
        project.TIANWANG_RANDOM_PICKS)
    assert config.penalty_words == tuple(project.TIANWANG_PENALTY_WORDS)
    assert config.levels is (project.TIANWANG_MAX_LEVELS > 0)


def test_random_picks_may_be_0_only_beside_host_picks() -> None:
    config = FrontierConfig.from_settings(project_crawler(TIANWANG_HOST_PICKS=2,
                                                          TIANWANG_RANDOM_PICKS=0).settings)
    assert (config.host_picks, config.random_picks) == (2, 0)
    with pytest.raises(SettingError, match="TIANWANG_RANDOM_PICKS.*>= 1"):
        FrontierConfig.from_settings(project_crawler(TIANWANG_HOST_PICKS=0,
                                                     TIANWANG_RANDOM_PICKS=0).settings)


def test_no_penalty_words_no_index_pages_and_no_level_limit_are_allowed() -> None:
    crawler = project_crawler(TIANWANG_PENALTY_WORDS=[], TIANWANG_MAX_LEVELS=0,
                              TIANWANG_INDEX_PAGES=[])
    config = FrontierConfig.from_settings(crawler.settings)
    assert config.penalty_words == ()
    assert config.index_pages == frozenset()
    assert config.levels is False


def test_index_pages_are_read_as_lowercase_names_from_the_command_line() -> None:
    crawler = project_crawler(TIANWANG_INDEX_PAGES="Index.HTML,default.asp")
    config = FrontierConfig.from_settings(crawler.settings)
    assert config.index_pages == frozenset({"index.html", "default.asp"})


@pytest.mark.parametrize("value", [["news/index.html"], ["index.php?x=1"], [3]])
def test_an_index_page_that_is_no_file_name_is_refused_by_name(value: object) -> None:
    with pytest.raises(SettingError, match="TIANWANG_INDEX_PAGES"):
        FrontierConfig.from_settings(project_crawler(TIANWANG_INDEX_PAGES=value).settings)


def test_the_check_refuses_a_bad_setting_and_otherwise_stays_out_of_the_crawl() -> None:
    with pytest.raises(SettingError, match="TIANWANG_RANDOM_PICKS"):
        FrontierSettingsCheck.from_crawler(project_crawler(TIANWANG_HOST_PICKS=0,
                                                           TIANWANG_RANDOM_PICKS=0))
    with pytest.raises(NotConfigured):
        FrontierSettingsCheck.from_crawler(project_crawler())


def test_the_check_ignores_frontier_settings_under_another_scheduler() -> None:
    crawler = project_crawler(SCHEDULER="scrapy.core.scheduler.Scheduler",
                              TIANWANG_RANDOM_PICKS=-1)
    with pytest.raises(NotConfigured):
        FrontierSettingsCheck.from_crawler(crawler)
