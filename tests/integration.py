"""Which tests are integration tests: those that start a process (a test web, a crawl, a
redis-server, Prometheus, scrapyd, Chromium, a command of the project), marked
`integration` so that `pytest -m "not integration"` is a fast unit run.

A test is one when its code, a fixture it uses, or a function of the tests package either
calls, names a helper that starts a process (STARTERS) or the subprocess module: read from
their compiled code, following the functions of the tests package they name. Marked so at
collection (tests/conftest.py). A test left unmarked that starts a process anyway fails,
saying so (`unit_guard`), so the marking stays true as tests are added.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import types
from collections.abc import Iterator
from typing import Any

import pytest

# Names whose use starts a process: the subprocess module, and the tests' own helpers.
STARTERS = frozenset({
    "subprocess", "Popen", "TestWebProcess", "scrapy_crawl", "crawl_command",
    "start_until_stored", "tianwang_cli", "headless", "Prometheus", "RedisServer",
    "ensure_debian", "ensure_redis_server", "ensure_chromium", "ensure_prometheus", "gate",
})


def is_integration(item: pytest.Item) -> bool:
    functions = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for definitions in (info.name2fixturedefs.values() if info is not None else ()):
        functions += [definition.func for definition in definitions]
    seen: set[types.CodeType] = set()
    return any(_starts(function, seen) for function in functions if _ours(function))


def _ours(function: Any) -> bool:
    """A function of the tests package, but this module's (the guard names subprocess)."""
    module = getattr(inspect.unwrap(function), "__module__", "") if function else ""
    return module.startswith("tests") and module != __name__


def _starts(function: Any, seen: set[types.CodeType]) -> bool:
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    names = set(_names(code))
    if names & STARTERS:
        return True
    scopes = [getattr(function, "__globals__", {})]
    scopes += [vars(module) for module in _modules(names)]
    for name in names:
        for scope in scopes:
            found = scope.get(name)
            if inspect.isclass(found) and _ours(found):  # a helper class: its methods
                if any(_starts(method, seen) for method in vars(found).values()
                       if inspect.isfunction(method)):
                    return True
            elif callable(found) and _ours(found) and _starts(found, seen):
                return True
    return False


def _names(code: types.CodeType) -> Iterator[str]:
    """Every global, attribute and import name the code (and the code nested in it) uses."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


def _modules(names: set[str]) -> list[types.ModuleType]:
    """The modules of the tests package the code imports inside functions."""
    modules = []
    for name in sorted(names):
        if name.startswith("tests."):
            try:
                modules.append(importlib.import_module(name))
            except ImportError:
                continue
    return modules


def unit_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a test not marked integration, starting a process fails the test."""
    if request.node.get_closest_marker("integration") is not None:
        return
    real = subprocess.Popen.__init__

    def refused(self: subprocess.Popen, args: Any, *rest: Any, **options: Any) -> None:
        pytest.fail(f"{request.node.nodeid} starts a process ({args!r}) but is not marked "
                    "integration: tests/integration.py tells them apart by the names "
                    "they use; add the helper it calls to STARTERS", pytrace=False)
        real(self, args, *rest, **options)

    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
