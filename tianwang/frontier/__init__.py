"""The frontier: seed 000's importance-first scheduler (DESIGN.md section 3)."""
