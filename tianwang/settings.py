"""Scrapy settings of the tianwang project: who it is, where its spiders are, and the add-on.

The whole crawler stack, its polite defaults and every TIANWANG_* default come from the
Tianwang add-on (tianwang/addon.py, defaults in tianwang/default_settings.py), as in any
other Scrapy project that lists it in ADDONS. A value set here would beat the add-on and a
vertical (TIANWANG_VERTICAL): set here only what this project always wants.
"""

BOT_NAME = "tianwang"
SPIDER_MODULES = ["tianwang.spiders"]
NEWSPIDER_MODULE = "tianwang.spiders"
# `scrapy crawl` with one-line start-up errors and an exit status saying how the crawl went.
COMMANDS_MODULE = "tianwang.commands"
USER_AGENT = "tianwang/0.1 (research crawler; Scrapy)"
LOG_LEVEL = "INFO"

# The stack: scheduler, filters, dedup, storage, link graph, politeness, TIANWANG_* defaults.
ADDONS = {"tianwang.addon.Tianwang": 0}
