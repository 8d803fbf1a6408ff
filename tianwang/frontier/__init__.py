"""The frontier: seed 000's importance-first scheduler (docs/design.md section 3)."""
