"""The shared frontier's Lua scripts (tianwang/distributed/scripts.py): each file declares the
key its call names and every key it touches, and the declaration is checked against what its
body (and its libraries') builds from the shard's prefix."""

from __future__ import annotations

import re

import pytest
import redis

from tianwang.distributed import scripts

# p .. 'name' or p .. 'name:' .. something: a key under the shard's prefix.
_KEY = re.compile(r"\bp \.\. '([a-z]+)(:?)'")


def used_keys(name: str) -> set[str]:
    found = set()
    for part in [name, *scripts.includes(name)]:
        body = "\n".join(line for line in scripts.text(part).splitlines()
                         if not line.startswith("--"))
        found |= {base + (":*" if colon else "") for base, colon in _KEY.findall(body)}
    return found


@pytest.mark.parametrize("name", scripts.SCRIPTS)
def test_a_script_declares_its_call_key_and_exactly_the_keys_it_touches(name: str) -> None:
    assert "-- KEYS[1]: seq" in scripts.text(name)
    assert scripts.touches(name) == used_keys(name)


@pytest.mark.parametrize("name", scripts.SCRIPTS)
def test_every_script_compiles_with_its_constants_and_libraries(redis_server, name: str) -> None:
    client = redis.Redis.from_url(redis_server.url)
    sha = client.script_load(scripts.source(name))
    assert client.script_exists(sha) == [True]
