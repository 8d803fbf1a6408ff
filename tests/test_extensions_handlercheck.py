"""DownloadSettingsCheck: a bad setting of a download handler stops the crawl as it starts,
in one line, where Scrapy (which builds a handler at its first request) would log a
traceback and fail every url of the scheme."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured

from tests.conftest import project_crawler, scrapy_crawl
from tianwang.config import SettingError
from tianwang.extensions.handlercheck import DownloadSettingsCheck

BAD = [("TIANWANG_MAX_HEAD_BYTES", "10"), ("TIANWANG_MAX_HEAD_BYTES", str(2 << 20)),
       ("TIANWANG_IDLE_CONNECTIONS", "-1"), ("TIANWANG_IDLE_TIMEOUT", "soon"),
       ("TIANWANG_TLS_CHECK", "often")]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_handler_setting_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(SettingError, match=name):
        DownloadSettingsCheck.from_crawler(project_crawler(**{name: value}))


def test_good_settings_pass_and_the_extension_stays_out_of_the_crawl() -> None:
    with pytest.raises(NotConfigured):
        DownloadSettingsCheck.from_crawler(project_crawler())


def test_a_handler_without_a_check_or_a_scheme_switched_off_is_passed_over() -> None:
    handlers = {"http": "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler",
                "https": None}
    with pytest.raises(NotConfigured):
        DownloadSettingsCheck.from_crawler(project_crawler(
            DOWNLOAD_HANDLERS=handlers, TIANWANG_MAX_HEAD_BYTES="10"))


def test_the_crawl_stops_at_start_naming_the_setting(tmp_path: Path) -> None:
    """Before: the crawl logged two tracebacks, waited out robots.txt and ended without
    naming the setting."""
    result = scrapy_crawl("site", {"seeds": "http://www.example.com/"}, {
        "TIANWANG_MAX_HEAD_BYTES": "10", "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        "TIANWANG_PROXY": "http://127.0.0.1:9"}, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.rstrip().splitlines()[-1] == (
        "tianwang: error: setting TIANWANG_MAX_HEAD_BYTES='10' is invalid: "
        "expected a whole number >= 16384")
