"""Scrapy extensions of the tianwang stack."""
