"""The shared frontier's Lua scripts, one .lua file each in tianwang/distributed/lua/.

Every change of the shared frontier that must be atomic is one script, which works on a
batch, so a node makes one round trip a batch. A script file says what it is, then declares:

    -- include: bloom score links    the library files it uses (their functions, put first)
    -- KEYS[1]: seq                  the key the call names: its shard's slot (Redis Cluster
                                     then knows where it runs, and answers MOVED elsewhere)
    -- touches: seq req q:* ...      every key it reads or writes, under the shard's prefix
                                     (ARGV[1]); tests/test_distributed_scripts.py checks the
                                     list against the script's body

and the script as sent is the order's constants (tianwang/order.py, the link bonus's from
frontier/linkscore.py), the libraries, then the file: the score layout and the rounding are
written once in Python, and the Lua gets their numbers. No Scrapy or Redis import here.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tianwang.frontier.linkscore import BASE_SCALE, MIN_CASH
from tianwang.order import lua_constants

LUA_DIR = Path(__file__).with_name("lua")
SCRIPTS = ("push", "take", "ack", "release", "reap", "finished", "pack", "unpack", "cash")
_INCLUDE = re.compile(r"^-- include:(.*)$", re.M)
_TOUCHES = re.compile(r"^-- touches:(.*)$", re.M)


def constants() -> str:
    """The numbers every script starts with, as Lua locals."""
    return lua_constants() + f"local MIN_CASH = {MIN_CASH!r}\nlocal BASE_SCALE = {BASE_SCALE}\n"


def text(name: str) -> str:
    """The file lua/<name>.lua as written."""
    return (LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")


def includes(name: str) -> list[str]:
    found = _INCLUDE.search(text(name))
    return found.group(1).split() if found else []


def touches(name: str) -> set[str]:
    """The keys a script declares it touches, with those of its libraries."""
    found = _TOUCHES.search(text(name))
    declared = set(found.group(1).split()) if found else set()
    for library in includes(name):
        declared |= touches(library)
    return declared


@cache
def source(name: str) -> str:
    """The script as Redis runs it: the constants, its libraries, itself."""
    return "".join([constants(), *(text(library) for library in includes(name)), text(name)])


class Scripts:
    """The scripts registered with one client (an asyncio redis client: calls are awaited).

    A call goes by EVALSHA naming the shard's slot key; after a Redis restart (no script
    loaded) the client loads it and calls again. In a pipeline that cannot be done script by
    script: load() loads them all first, so a pipeline never holds a loaded script beside a
    missing one (the loaded ones would run, their replies be lost with the error, and the
    pipeline be sent again: a take done twice)."""

    def __init__(self, client: object) -> None:
        self.client = client
        self.by_name = {name: client.register_script(source(name))  # type: ignore[attr-defined]
                        for name in SCRIPTS}

    def sha(self, name: str) -> str:
        return self.by_name[name].sha

    async def load(self) -> None:
        for script in self.by_name.values():
            await self.client.script_load(script.script)  # type: ignore[attr-defined]

    async def call(self, name: str, slot_key: str, args: list[object]) -> object:
        return await self.by_name[name](keys=[slot_key], args=args)
