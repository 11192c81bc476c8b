"""Teachers for data generation: a remote OpenAI-compatible model, or the oracle.

`OpenAITeacher` is the agent loop's streaming client (`core.serving.client.OpenAIChatClient`)
set up for a teacher: the API key from the environment, retries for hosted APIs, and the
provenance (`spec`) a generated row records. Every failure is a `ModelError`, which the loop
records as `model_error`; the job grades that as a failure with the reason and moves on. A
native tool call whose arguments are not a JSON object reaches the loop's schema check (see
`core.serving.client.parse_arguments`), so the bad call costs tool-rationality marks.

`TeacherSpec` says which teacher a job uses and is what a data row records as provenance.

Credentials never reach a stored row: a URL's userinfo (`http://user:pw@host`) and its
secret-looking query values (`?token=`, `api_key=`, `sig=`, ...: `redact_url` in
core/serving/client.py) are stripped from every URL a spec records, and from the URL in error
messages (which traces and rejects keep). The API key comes from, in order: the `api_key`
argument, the OS keyring (`keyring`, service `hat-studio`, user the teacher's host, e.g.
`api.openai.com`, then `OPENAI_API_KEY`), the `OPENAI_API_KEY` environment variable, else
"EMPTY" (local servers ignore it). Set one with
`keyring set hat-studio api.openai.com`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from core.serving.client import GenerationOptions, OpenAIChatClient, redact_url


@dataclass(frozen=True)
class TeacherSpec:
    """Which teacher generated a row: `oracle`, or `openai` with its endpoint and model."""

    kind: str
    model: str | None = None
    url: str | None = None
    temperature: float | None = None

    def __post_init__(self) -> None:
        if self.url is not None:
            object.__setattr__(self, "url", redact_url(self.url))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.model is not None:
            out["model"] = self.model
        if self.url is not None:
            out["url"] = self.url
        if self.temperature is not None:
            out["temperature"] = self.temperature
        return out


ORACLE = TeacherSpec("oracle")
KEYRING_SERVICE = "hat-studio"


def strip_userinfo(url: str) -> str:
    """`url` without `user:password@` (a URL that does not parse is returned unchanged)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def keyring_api_key(base_url: str) -> str | None:
    """The teacher's API key from the OS keyring, or None (no keyring, no entry, or a
    keyring backend that fails: the environment variable is the fallback then)."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        host = None
    for user in (host, "OPENAI_API_KEY"):
        if not user:
            continue
        try:
            found = keyring.get_password(KEYRING_SERVICE, user)
        except (KeyringError, RuntimeError, OSError):
            return None
        if found:
            return str(found)
    return None


def teacher_api_key(base_url: str, explicit: str | None = None) -> str:
    """The key a teacher sends (see the module doc for the order)."""
    return explicit or keyring_api_key(base_url) or os.environ.get("OPENAI_API_KEY") or "EMPTY"


class OpenAITeacher(OpenAIChatClient):
    """An OpenAI-compatible endpoint as a teacher (see the module doc).

    `api_key` defaults to the OS keyring's entry, then $OPENAI_API_KEY, then "EMPTY".
    `extra_body` is merged into every request (e.g. `{"top_k": 20}` for vLLM).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            base_url,
            model,
            options=GenerationOptions(max_tokens=max_tokens, temperature=temperature),
            timeout_s=timeout_s,
            extra_body=extra_body,
            api_key=teacher_api_key(base_url, api_key),
            max_retries=max_retries,
        )
        self.url = redact_url(base_url)
        self.base_url = redact_url(self.base_url)  # only shown in messages from here on

    @property
    def spec(self) -> TeacherSpec:
        return TeacherSpec("openai", self.model, self.url, self.options.temperature)

    async def close(self) -> None:
        await self.aclose()
