"""tianwang: an importance-first Scrapy crawler that stores pages as Tianwang records."""
