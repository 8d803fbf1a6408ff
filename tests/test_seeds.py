from pathlib import Path

import pytest

from tianwang.seeds import SeedError, load_seeds


def test_comma_list_with_bare_hosts_and_duplicates() -> None:
    assert load_seeds("www.a.com, http://WWW.B.com/x?y=1,www.a.com") == [
        "http://www.a.com/",
        "http://www.b.com/x?y=1",
    ]


def test_file_with_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("# news sites\nhttp://news.a.cn/\n\n  www.b.com  \n", encoding="utf-8")
    assert load_seeds(str(path)) == ["http://news.a.cn/", "http://www.b.com/"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "no seeds"),
        ("nothere.txt", "seeds file not found: nothere.txt"),
        ("conf/seeds", "seeds file not found: conf/seeds"),
        ("ftp://a.com/", "malformed seed url: 'ftp://a.com/'"),
        ("http://a.com:99999/", "malformed seed url"),
        ("http://[::1/", "malformed seed url"),
        ("http:///path", "malformed seed url"),
    ],
)
def test_bad_seed_arguments_name_the_problem(value: str, message: str) -> None:
    with pytest.raises(SeedError, match=message.replace("?", r"\?").replace("[", r"\[")):
        load_seeds(value)


def test_a_seeds_file_in_another_encoding_is_named(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_bytes("http://www.a.cn/新闻/\n".encode("gbk"))
    with pytest.raises(SeedError, match=f"seeds file {path} is not UTF-8 \\(byte 16\\)"):
        load_seeds(str(path))


def test_host_with_path_is_a_url_not_a_file() -> None:
    assert load_seeds("www.a.com/news") == ["http://www.a.com/news"]


def test_a_long_comma_list_is_not_mistaken_for_a_file_name() -> None:
    urls = [f"http://www.host{i}.com/" for i in range(300)]
    assert load_seeds(",".join(urls)) == urls


def test_a_seed_with_the_default_port_is_the_url_its_pages_link() -> None:
    # `cut -f1 D4` gives `http://host:80/`; the site's own links say `http://host/...`
    assert load_seeds("http://www.a.com:80/,https://www.b.com:443/x,www.c.com:8080") == [
        "http://www.a.com/", "https://www.b.com/x", "http://www.c.com:8080/"]


def test_a_bom_at_the_start_of_a_seeds_file_is_no_part_of_the_first_url(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_bytes(b"\xef\xbb\xbfhttp://www.a.cn/\nwww.b.cn\n")
    assert load_seeds(str(path)) == ["http://www.a.cn/", "http://www.b.cn/"]


def test_seeds_all_under_dot_test_need_the_test_webs_proxy() -> None:
    from tianwang.seeds import check_reachable

    dotted = ["http://www.a.cn.test/", "http://www.b.com.test/x"]
    with pytest.raises(SeedError, match="TIANWANG_PROXY"):
        check_reachable(dotted, "")
    check_reachable(dotted, "http://127.0.0.1:8731")
    check_reachable([*dotted, "http://www.c.cn/"], "")  # one the real web may answer
