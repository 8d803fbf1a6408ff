"""The fixed text the synthetic pages are made of: paragraph rings and anchor texts.

Pure python, built once at import. A page body takes one run of consecutive paragraphs
from a ring that is already encoded, so rendering costs a slice instead of a draw, a
format and an encode per paragraph: cheap enough to walk thousands of hosts in a test.
"""

from __future__ import annotations

import bisect
from random import Random

from tianwang.testweb.names import EN_WORDS, ZH_WORDS

PARAGRAPH_COUNT = 256


def _paragraphs() -> list[str]:
    rng, texts = Random("tianwang-testweb-text"), []
    for _ in range(PARAGRAPH_COUNT):
        words = []
        for _ in range(rng.randint(12, 48)):
            if rng.random() < 0.7:
                words.append(rng.choice(ZH_WORDS) + rng.choice(("", "", "，", "、")))
            else:
                words.append(f" {rng.choice(EN_WORDS)} ")
        texts.append("".join(words).strip() + "。")
    return texts


class Ring:
    """The paragraphs laid end to end twice (a run may wrap), in one charset and form."""

    def __init__(self, texts: list[str], charset: str, before: str, after: str) -> None:
        pieces = [f"{before}{text}{after}".encode(charset) for text in texts * 2]
        self.data = b"".join(pieces)
        self.ends = [0]
        for piece in pieces:
            self.ends.append(self.ends[-1] + len(piece))

    def stop(self, start: int, budget: int) -> int:
        """The paragraph index where a run from `start` reaches `budget` bytes."""
        ends = self.ends
        return min(bisect.bisect_left(ends, ends[start] + budget, lo=start + 1), len(ends) - 1)

    def slice(self, start: int, stop: int) -> bytes:
        return self.data[self.ends[start]:self.ends[stop]]


PARAGRAPHS = _paragraphs()
RINGS = {
    (charset, form): Ring(PARAGRAPHS, charset, *wrap)
    for charset in ("utf-8", "gbk")
    for form, wrap in (("html", ("<p>", "</p>\n")), ("text", ("", "\n\n")))
}
ANCHOR_TEXTS = tuple(
    "".join(Random(f"anchor:{i}").choices(ZH_WORDS, k=1 + i % 4)) for i in range(512)
)
