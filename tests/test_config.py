import pytest
from scrapy.settings import Settings

from tianwang.config import SettingError, get_bool, get_int, get_proxy_url, get_str_list


def test_int_bounds_and_errors_name_the_setting() -> None:
    settings = Settings({"A": "3", "B": "-1", "C": "x", "D": 2.5})
    assert get_int(settings, "A", minimum=0) == 3
    for name in ("B", "C", "D"):
        with pytest.raises(SettingError, match=f"setting {name}="):
            get_int(settings, name, minimum=0)
    with pytest.raises(SettingError, match="<= 2"):
        get_int(settings, "A", maximum=2)


def test_bool_accepts_scrapy_spellings_and_rejects_others() -> None:
    settings = Settings({"T": "True", "F": "0", "X": "maybe"})
    assert get_bool(settings, "T") is True and get_bool(settings, "F") is False
    with pytest.raises(SettingError, match="setting X='maybe'"):
        get_bool(settings, "X")


def test_proxy_url() -> None:
    assert get_proxy_url(Settings({"P": ""}), "P") == ""
    assert get_proxy_url(Settings({"P": "http://127.0.0.1:3128"}), "P") == "http://127.0.0.1:3128"
    with pytest.raises(SettingError, match="P"):
        get_proxy_url(Settings({"P": "127.0.0.1:3128"}), "P")


def test_str_list_lowercases_and_rejects_empty() -> None:
    assert get_str_list(Settings({"L": "Text/HTML,text/plain"}), "L") == ["text/html", "text/plain"]
    with pytest.raises(SettingError, match="L"):
        get_str_list(Settings({"L": []}), "L")
