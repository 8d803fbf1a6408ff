"""Distributed crawling through Redis (docs/design.md section 10); on with TIANWANG_REDIS_URL."""
