"""Figures of the code's shape, for the architecture issue's before/after (issue 18).

    python bench/architecture.py [TREE]        # TREE: a checkout (default: this one)

Prints: modules; the longest module; import cycles (groups of modules that import each
other round a loop, TYPE_CHECKING imports counted, then left out); the private Scrapy
attributes the code reads (engine._slot.*, engine._start) and where; module file names and
class names defined more than once. Uses grimp (installed with import-linter, test extras).
"""

from __future__ import annotations

import ast
import collections
import os
import re
import sys

import grimp

PRIVATE = {
    "engine._slot.inprogress": r"slot\.inprogress",
    "engine._slot.nextcall": r"nextcall",
    "engine._start": r"\"_start\"|\._start\b",
    "engine._slot.scheduler": r"\"scheduler\", None\)|_slot\.scheduler",
}


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def main() -> None:
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__) + "/..")
    sys.path.insert(0, root)
    files = [os.path.join(d, f) for d, _, names in os.walk(os.path.join(root, "tianwang"))
             for f in names if f.endswith(".py")]
    print("modules:", len(files))
    longest = max((sum(1 for _ in open(f, encoding="utf-8")), os.path.relpath(f, root))
                  for f in files)
    print(f"longest module: {longest[1]} ({longest[0]} lines)")
    for typing in (False, True):
        graph = grimp.build_graph("tianwang", exclude_type_checking_imports=typing,
                                  cache_dir=None)
        found = cycles(graph)
        label = "run-time imports only" if typing else "TYPE_CHECKING imports counted"
        print(f"import cycles ({label}): {len(found)} {found}")
    used = collections.defaultdict(set)
    for path in files:
        text = open(path, encoding="utf-8").read()
        for name, pattern in PRIVATE.items():
            if re.search(pattern, text):
                used[name].add(os.path.relpath(path, root))
    print(f"private Scrapy attributes read: {len(used)}",
          {name: sorted(paths) for name, paths in used.items()})
    names = collections.Counter(os.path.basename(f) for f in files
                                if not f.endswith(("__init__.py", "__main__.py")))
    outside_cli = collections.Counter(os.path.basename(f) for f in files
                                      if not f.endswith(("__init__.py", "__main__.py"))
                                      and "/cli/" not in f)
    twice = {name: n for name, n in names.items() if n > 1}
    print(f"module file names used twice or more: {len(twice)} {twice}")
    twice = {name: n for name, n in outside_cli.items() if n > 1}
    print(f"  leaving out tianwang/cli/<command>.py: {len(twice)} {twice}")
    classes = collections.defaultdict(list)
    for path in files:
        for node in ast.parse(open(path, encoding="utf-8").read()).body:
            if isinstance(node, ast.ClassDef):
                classes[node.name].append(os.path.relpath(path, root))
    twice = sorted(name for name, paths in classes.items() if len(paths) > 1)
    print(f"class names defined twice or more: {len(twice)} {twice}")


if __name__ == "__main__":
    main()
