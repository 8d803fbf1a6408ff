import pytest
from scrapy import Request
from scrapy.utils.test import get_crawler

from tianwang.config import SettingError
from tianwang.middlewares.proxy import ProxyMiddleware


def test_sets_the_proxy_unless_the_request_names_one() -> None:
    mw = ProxyMiddleware.from_crawler(
        get_crawler(settings_dict={"TIANWANG_PROXY": "http://127.0.0.1:3128"})
    )
    plain, own = Request("http://a.com/"), Request("http://b.com/", meta={"proxy": None})
    mw.process_request(plain)
    mw.process_request(own)
    assert plain.meta["proxy"] == "http://127.0.0.1:3128"
    assert own.meta["proxy"] is None


def test_empty_setting_leaves_requests_alone() -> None:
    mw = ProxyMiddleware.from_crawler(get_crawler(settings_dict={"TIANWANG_PROXY": ""}))
    request = Request("http://a.com/")
    mw.process_request(request)
    assert "proxy" not in request.meta


def test_bad_proxy_is_refused_at_start() -> None:
    with pytest.raises(SettingError, match="TIANWANG_PROXY"):
        ProxyMiddleware.from_crawler(
            get_crawler(settings_dict={"TIANWANG_PROXY": "localhost:3128"})
        )
