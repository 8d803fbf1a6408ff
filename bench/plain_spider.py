"""The baseline: a plain Scrapy spider that follows the same links as `site` and stores nothing.

Run with `scrapy runspider`, outside the project's settings, so it gets Scrapy's default
scheduler; the benchmark passes the same politeness and concurrency settings to both.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import scrapy


class PlainSpider(scrapy.Spider):
    name = "plain"
    custom_settings = {"DEPTH_LIMIT": 2}  # levels 1-3, as `site` counts them

    def __init__(self, seeds: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.seed_urls = [line.strip() for line in open(seeds, encoding="utf-8") if line.strip()]

    async def start(self):
        for url in self.seed_urls:
            yield scrapy.Request(url)

    def parse(self, response):
        if not isinstance(response, scrapy.http.TextResponse):
            return
        host = urlsplit(response.url).hostname
        for href in response.xpath("//a/@href | //area/@href").getall():
            url = response.urljoin(href).split("#", 1)[0]
            if url.startswith("http") and urlsplit(url).hostname == host:
                yield scrapy.Request(url)
