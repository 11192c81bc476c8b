"""What the launch forms (data generation, evaluation) share: the error that names the field a
bad value came from (the view shows it under that field), and the check of a server URL."""

from __future__ import annotations

import re

URL_RE = re.compile(r"^https?://[^\s/]+")


class RequestError(ValueError):
    """A form value that cannot be used: `field` names the input, the message says why."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


def check_url(field_name: str, url: str, what: str) -> None:
    """Raise RequestError under `field_name` unless `url` is an http(s) URL."""
    if not URL_RE.match(url.strip()):
        raise RequestError(field_name, f"an http(s) URL of {what}, e.g. http://127.0.0.1:8000/v1")
