"""A deterministic synthetic web of many hosts, its ground truth and an HTTP proxy serving it.

The model (`SyntheticWeb`) is pure python; the server lives in `server` and needs Twisted.
"""

from tianwang.testweb.model import SyntheticWeb
from tianwang.testweb.response import Response

__all__ = ["Response", "SyntheticWeb"]
