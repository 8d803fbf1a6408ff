"""bench/headline.py rewrites the headline section of RESULTS.md and nothing else."""

from __future__ import annotations

from bench.headline import replace_section, section

RESULTS = """# Benchmark results

Machine: 2 cores.

## Headline, as the code is now (2026-01-01 00:00 UTC, commit abc)

| old | table |

## Crawl rate (issue 2)

Kept as it was.
"""


def test_the_headline_is_replaced_and_every_other_byte_kept() -> None:
    new = section([("full stack / plain", "300.0", "310.0", "**1.033**")],
                  "2026-11-24 01:00 UTC", "0123abc", "python bench/headline.py")
    out = replace_section(RESULTS, new)
    before, after = RESULTS.split("## Headline")[0], RESULTS.split("## Crawl rate")[1]
    assert out.startswith(before + "## Headline, as the code is now (2026-11-24 01:00 UTC, "
                                   "commit 0123abc)\n")
    assert out.endswith("## Crawl rate" + after)
    assert "| old | table |" not in out
    assert "| full stack / plain | 300.0 | 310.0 | **1.033** |" in out
    assert replace_section(out, new) == out  # run twice, the same file


def test_a_file_without_a_headline_gets_one_before_its_first_section() -> None:
    text = "# Benchmark results\n\nintro\n\n## Crawl rate\n\nx\n"
    out = replace_section(text, "## Headline, as the code is now (d, commit c)\n\nrows\n")
    assert out == ("# Benchmark results\n\nintro\n\n## Headline, as the code is now (d, "
                   "commit c)\n\nrows\n\n## Crawl rate\n\nx\n")


def test_the_real_results_file_starts_with_its_headline_and_keeps_the_rest() -> None:
    from bench.headline import RESULTS as results_file

    text = results_file.read_text(encoding="utf-8")
    assert text.split("\n## ")[1].startswith("Headline, as the code is now (")
    rows = [("full stack / plain Scrapy, pages/s (200-host web, both CONCURRENT_ITEMS=4)",
             "1.0", "1.0", "**1.000**")]
    out = replace_section(text, section(rows, "d", "c", "python bench/headline.py"))
    rest = text[text.index("\n## What the open issues must show"):]
    assert out.endswith(rest) and out.index("## Headline") < out.index(rest)


def test_like_for_like_rows_come_first() -> None:
    from bench.headline import ENTRIES

    assert list(ENTRIES)[:2] == ["crawl-same-items", "crawl"]
