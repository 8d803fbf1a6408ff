"""The README's two commands are what users and CI run: keep them honest."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Two commands", 1)[1]
    return re.findall(r"```sh\n(.+?)\n```", block)[:2]


def test_ci_runs_the_readme_test_command() -> None:
    ci_lines = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci_lines == [readme_commands()[1]]


def test_readme_main_command_installs_and_runs_the_demo() -> None:
    main = readme_commands()[0]
    assert "pip install" in main and "tianwang demo" in main
