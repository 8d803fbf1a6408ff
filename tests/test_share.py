"""A crawler's share of a partition plan: the scope rule's table and the argument errors.
The plan below is written by hand: s.test has key paths /a and /b (crawler 0) and /c
(crawler 1), and its homepage's path key "s.test/" is crawler 1's key path too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tianwang.analysis.sitepartition import Plan
from tianwang.formats.partitionplan import PlanFile, SitePlan, dump_plan
from tianwang.share import Share, ShareError, load_share

PLAN = Plan(
    2,
    {"s.test/a": 0, "s.test/b": 0, "s.test/c": 1, "s.test/": 1},
    (("http://s.test/a/1.html", "http://s.test/b/"), ("http://s.test/c/x/",)),
)
PLAN_FILE = PlanFile(2, 0.9, {"s.test": SitePlan("http://s.test/", 40, PLAN)})


@pytest.fixture
def plan_path(tmp_path: Path) -> Path:
    dump_plan(tmp_path / "plan.json", PLAN_FILE)
    return tmp_path / "plan.json"


@pytest.mark.parametrize(
    ("url", "share0", "share1"),
    [
        ("http://s.test/a/1.html", True, False),
        ("http://s.test/b/deep/er/page", True, False),
        ("http://s.test/c/", False, True),
        ("http://s.test/d/not-a-key-path.html", True, True),  # no key path: anyone may
        ("http://s.test/c", False, True),  # a file at the root: path key "s.test/", ...
        ("http://s.test/index.html", False, True),  # ... which is crawler 1's key path
        ("http://s.test/", True, True),  # but the homepage is every crawler's seed
        ("https://s.test/", True, True),  # the homepage under the other scheme too
        ("http://S.TEST/c/page", False, True),  # hosts compare lowercased
        ("http://other.test/c/", True, True),  # a host the plan does not name
        ("http://s.test:8080/c/", True, True),  # another port is another host
    ],
)
def test_scope_rule(url: str, share0: bool, share1: bool) -> None:
    assert Share(0, PLAN_FILE).allows(url) is share0
    assert Share(1, PLAN_FILE).allows(url) is share1


@pytest.mark.parametrize(
    ("url", "chain_start", "allowed"),
    [
        ("http://s.test/index.html", "http://s.test/", True),  # the homepage moved: still it
        ("http://s.test/c/home.html", "https://s.test/", True),
        ("http://s.test/c/new.html", "http://s.test/c/old.html", False),
        ("http://s.test/c/new.html", "http://s.test/a/old.html", False),  # left share 0's
    ],
)
def test_where_the_homepage_redirects_is_every_shares(
    url: str, chain_start: str, allowed: bool
) -> None:
    assert Share(0, PLAN_FILE).allows(url, redirected_from=chain_start) is allowed


def test_a_share_starts_at_the_homepage_and_its_own_seeds() -> None:
    assert Share(0, PLAN_FILE).start_urls() == [
        "http://s.test/", "http://s.test/a/1.html", "http://s.test/b/"
    ]
    assert Share(1, PLAN_FILE).start_urls() == ["http://s.test/", "http://s.test/c/x/"]


def test_both_arguments_load_the_share(plan_path: Path) -> None:
    share = load_share(str(plan_path), "1")
    assert share is not None and share.index == 1 and share.plan_file == PLAN_FILE
    assert load_share(None, None) is None


@pytest.mark.parametrize(
    ("partition", "share", "named"),
    [
        (None, "0", "-a share=0 needs -a partition="),
        ("PLAN", None, "-a partition=PLAN needs -a share="),
        ("PLAN", "2", "-a share=2 is outside 0..1"),
        ("PLAN", "-1", "-a share=-1 is outside 0..1"),
        ("PLAN", "one", "-a share='one' is not a whole number"),
        ("missing.json", "0", "-a partition=missing.json: cannot read partition plan"),
        ("BROKEN", "0", "-a partition=BROKEN: partition plan BROKEN is not JSON"),
        ("WRONG", "0", "-a partition=WRONG: partition plan WRONG is malformed"),
    ],
)
def test_bad_arguments_name_the_argument(
    tmp_path: Path, plan_path: Path, partition: str | None, share: str | None, named: str
) -> None:
    (tmp_path / "broken.json").write_text('{"format": ')
    document = json.loads(plan_path.read_text())
    document["sites"]["s.test"]["key_paths"]["s.test/c"] = 5  # no crawler 5 in a 2-plan
    (tmp_path / "wrong.json").write_text(json.dumps(document))
    paths = {"PLAN": plan_path, "BROKEN": tmp_path / "broken.json",
             "WRONG": tmp_path / "wrong.json", "missing.json": tmp_path / "missing.json"}
    argument = str(paths[partition]) if partition else None
    with pytest.raises(ShareError) as raised:
        load_share(argument, share)
    message = str(raised.value)
    for name, path in paths.items():
        message = message.replace(str(path), name)
    assert named in message
