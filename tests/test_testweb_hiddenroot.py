"""The test web's hidden roots (--hidden-roots): `/` answers 404, the homepage lives at
another path, the site's own links follow it, by 首页 or by a neutral text of the site's own
(half and half, and the path neutral or made of home words, half and half); other hosts'
links do not."""

from __future__ import annotations

import re
from collections import Counter

from tianwang.testweb.hiddenroot import HOME_PATHS, NEUTRAL_PATHS, hides_root
from tianwang.testweb.model import SyntheticWeb

SEED, HOSTS, PAGES = 23, 24, 40


def test_every_third_site_hides_its_root_and_serves_its_homepage_elsewhere() -> None:
    web = SyntheticWeb(SEED, HOSTS, PAGES, hidden_roots=True)
    plain = SyntheticWeb(SEED, HOSTS, PAGES)
    truth = list(web.truth(bodies=False))
    kinds: Counter = Counter()
    for index, host in enumerate(web.hosts):
        root = f"http://{host}/"
        [home] = [r["url"] for r in truth if r["host"] == host and r["kind"] == "home"]
        if not hides_root(index):
            assert home == root
            assert web.respond(root) == plain.respond(root)  # the rest of the web unchanged
            continue
        path = home.removeprefix(f"http://{host}")
        assert home != root and path in HOME_PATHS + NEUTRAL_PATHS
        kinds["path", path in HOME_PATHS] += 1
        assert web.respond(root).status == 404
        assert [r["status"] for r in truth if r["url"] == root] == [404]
        answer = web.respond(home)
        assert answer.status == 200
        # what the plain web's homepage links, the moved one links too (but itself moved)
        moved = {u if u != root else home for u in
                 next(r for r in plain.truth(bodies=False) if r["url"] == root)["links"]}
        assert set(next(r for r in truth if r["url"] == home)["links"]) == moved
        # the site's own pages link the new place, never /, all by one text: 首页 or another
        texts = set()
        for record in truth:
            if record["host"] == host and record["kind"] == "html":
                assert root not in record["links"]
                body = web.respond(record["url"]).body.decode(record["charset"] or "utf-8")
                if home in record["links"]:
                    rel = home.rsplit("/", 1)[1]
                    texts |= set(re.findall(rf'<a href="[^"]*{re.escape(rel)}">([^<]*)</a>',
                                            body))
        assert len(texts) <= 1  # (a site of its homepage alone has no page linking it)
        if texts:
            kinds["anchor", texts == {"首页"}] += 1
        # other hosts know the site by its name alone: their links still go to the dead /
        others = [r for r in truth if r["host"] != host]
        assert not any(home in r["links"] for r in others)
        assert any(root in r["links"] for r in others)
    assert sum(hides_root(i) for i in range(HOSTS)) == 8
    # both kinds of path and of anchor occur (independent halves)
    assert all(kinds[key] for key in [("path", True), ("path", False), ("anchor", True),
                                      ("anchor", False)]), kinds
