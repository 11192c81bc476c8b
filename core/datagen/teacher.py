"""Teachers for data generation: a remote OpenAI-compatible model, or the oracle.

`OpenAITeacher` is the agent loop's streaming client (`core.serving.client.OpenAIChatClient`)
set up for a teacher: the API key from the environment, retries for hosted APIs, and the
provenance (`spec`) a generated row records. Every failure is a `ModelError`, which the loop
records as `model_error`; the job grades that as a failure with the reason and moves on. A
native tool call whose arguments are not a JSON object reaches the loop's schema check (see
`core.serving.client.parse_arguments`), so the bad call costs tool-rationality marks.

`TeacherSpec` says which teacher a job uses and is what a data row records as provenance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from core.serving.client import GenerationOptions, OpenAIChatClient


@dataclass(frozen=True)
class TeacherSpec:
    """Which teacher generated a row: `oracle`, or `openai` with its endpoint and model."""

    kind: str
    model: str | None = None
    url: str | None = None
    temperature: float | None = None

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


class OpenAITeacher(OpenAIChatClient):
    """An OpenAI-compatible endpoint as a teacher (see the module doc).

    `api_key` defaults to $OPENAI_API_KEY, or "EMPTY" (local servers ignore it).
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
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            max_retries=max_retries,
        )
        self.url = base_url

    @property
    def spec(self) -> TeacherSpec:
        return TeacherSpec("openai", self.model, self.url, self.options.temperature)

    async def close(self) -> None:
        await self.aclose()
