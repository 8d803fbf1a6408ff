"""Offline tools over stored record trees (no Scrapy import here): global dedup, importance."""
