"""What the test web's server sends for a url; every part of the test web answers with one.

Its own module so that the parts the model plugs in (junk, changing pages, mirrors, the
graph web) import it without importing the model that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Response:
    """What the server sends for a url: status, headers (Content-Type first) and body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((value for key, value in self.headers if key.lower() == name), None)
