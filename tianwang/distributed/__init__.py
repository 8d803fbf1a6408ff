"""Distributed crawling through Redis (DESIGN.md section 10); on with TIANWANG_REDIS_URL."""
