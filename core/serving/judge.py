"""An LLM judge (core/sim/judge.py) whose model is served over an OpenAI-compatible endpoint.

The judge samples its votes (temperature 0.7 by default, so a majority means something) and
answers in a short JSON object, hence its own generation options; the key comes from
`api_key` or `$OPENAI_API_KEY` (local servers take any). The judge's recorded and shown URL
is `redact_url(base_url)` (no credentials).
"""

from __future__ import annotations

import os

from core.serving.client import GenerationOptions, OpenAIChatClient, redact_url
from core.sim.judge import LLMJudge


def http_judge(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    samples: int = 3,
    temperature: float = 0.7,
    timeout_s: float = 60.0,
    max_retries: int = 1,
) -> LLMJudge:
    """A majority-of-`samples` judge served at `base_url` as `model`."""
    client = OpenAIChatClient(
        base_url,
        model,
        options=GenerationOptions(max_tokens=200, temperature=temperature),
        timeout_s=timeout_s,
        api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
        max_retries=max_retries,
    )
    return LLMJudge(client, model, base_url=redact_url(base_url), samples=samples)
