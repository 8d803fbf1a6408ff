"""Building a test collection the CWT200g way (seed 004, docs/design.md section 11).

Each step reads the previous step's output and writes its own, printing a count line:
hosts count (D0) -> hosts clean (D1) -> the validate spider (D2) -> hosts dealias (D3) ->
hosts filter (D4) -> the crawl and global dedup -> sample -> stats.
"""
