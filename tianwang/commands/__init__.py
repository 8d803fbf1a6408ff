"""Scrapy commands of the tianwang project (COMMANDS_MODULE): `crawl`, with honest errors."""
