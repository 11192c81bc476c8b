"""Optional LLM judge for effectiveness, over an OpenAI-compatible endpoint. Off by default.

The deterministic graders (graders.py) are the reference: they are fast, free and reproducible.
A judge model can replace their effectiveness verdict where phrasing varies more than the
regexes allow (a teacher model's free wording, a new harness's style). It asks the model
`samples` times (default 3) for `{"score": 0 | 0.5 | 1, "reason": "..."}` and takes the
majority (with three different votes: the median). Votes that fail (HTTP error, no JSON, a
score outside the scale) are dropped and recorded; when none succeeds the result is None and
the caller keeps the deterministic grade.

    judge = http_judge("http://localhost:8000/v1", "Qwen/Qwen3-32B")   # core.serving.judge
    grades = await grade_with_judge(task, trace, harness, catalog, judge)

The judge talks to its model through any `ChatClient` (the agent loop's protocol), so it is
graded and tested like the loop: over HTTP with `core.serving.judge.http_judge`, in tests
with a scripted client.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from core.harness.models import Harness
from core.runtime.client import ChatClient, ModelError
from core.runtime.trace import Trace
from core.sim.graders import GraderResult, Grades, grade
from core.sim.models import Catalog, Intent, Task

SCALE = (0.0, 0.5, 1.0)

SYSTEM = (
    "You grade replies of the digital host of a live-stream shopping room. Judge only whether "
    "the reply answers what the viewer asked: every part of a multi-part question, or an honest "
    "question back when the message lacks something, or an honest refusal of a false promise. "
    "Do not judge style or factual accuracy. Score 1 if everything asked is answered, 0.5 if "
    'some of it is, 0 if none. Answer with JSON only: {"score": <0|0.5|1>, "reason": "<short>"}'
)


def describe_intent(intent: Intent) -> str:
    parts = [intent.kind.value.replace("_", " ")]
    for key in ("link_no", "size", "color", "region", "topic", "spec_key", "claim"):
        value = getattr(intent, key)
        if value is not None:
            parts.append(f"{key}={value}")
    if intent.link_nos:
        parts.append(f"link_nos={intent.link_nos}")
    if intent.link_no is None and intent.kind.value not in ("chit_chat", "comparison"):
        parts.append("product=the pinned one")
    return ", ".join(parts)


def judge_prompt(task: Task, reply: str) -> list[dict[str, str]]:
    asks = "\n".join(f"- {describe_intent(i)}" for i in task.intents)
    user = (
        f"Viewer message: {task.viewer_message}\n"
        f"What the viewer wants:\n{asks}\n"
        f"Host reply: {reply}\n"
        "Grade the reply."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


_JSON = re.compile(r"\{.*?\}", re.DOTALL)


def parse_vote(text: str) -> tuple[float, str] | None:
    """(score, reason) from a judge's answer, or None when it is not on the scale."""
    for match in _JSON.finditer(text or ""):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        score = data.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float):
            continue
        if float(score) in SCALE:
            return float(score), str(data.get("reason", ""))
    return None


def majority(votes: list[float]) -> float:
    counts = Counter(votes).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return sorted(votes)[len(votes) // 2]
    return counts[0][0]


@dataclass
class JudgeResult:
    score: float
    votes: list[float] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class LLMJudge:
    """Majority-of-`samples` effectiveness judge (see the module doc)."""

    def __init__(
        self, client: ChatClient, model: str, *, base_url: str = "", samples: int = 3
    ) -> None:
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self.model = model
        self.base_url = base_url
        """Where the judge is served, for `check_judge` and messages ("" when not over HTTP)."""
        self.samples = samples
        self._client = client

    async def close(self) -> None:
        """Close the client when it holds a connection (an HTTP client's `aclose`)."""
        aclose = getattr(self._client, "aclose", None)
        if aclose is not None and inspect.iscoroutinefunction(aclose):
            await aclose()

    async def _vote(self, messages: list[dict[str, str]]) -> tuple[float, str]:
        try:
            text = (await self._client.complete(messages)).content
        except ModelError as exc:
            raise ValueError(str(exc)) from exc
        vote = parse_vote(text)
        if vote is None:
            raise ValueError(f"no score on the scale in {text[:120]!r}")
        return vote

    async def effectiveness(self, task: Task, reply: str) -> JudgeResult | None:
        """The majority vote, or None when every vote failed."""
        result = await self.verdict(judge_prompt(task, reply))
        return result if result.votes else None

    async def verdict(self, messages: list[dict[str, str]]) -> JudgeResult:
        """The majority of `samples` votes on one judge prompt; no votes (and the errors)
        when every vote failed."""
        result = JudgeResult(score=0.0)
        for _ in range(self.samples):
            try:
                score, reason = await self._vote(messages)
            except ValueError as exc:
                result.errors.append(str(exc))
                continue
            result.votes.append(score)
            result.reasons.append(reason)
        if result.votes:
            result.score = majority(result.votes)
        return result


async def grade_with_judge(
    task: Task,
    trace: Trace,
    harness: Harness,
    catalog: Catalog,
    judge: LLMJudge,
    **kwargs: Any,
) -> Grades:
    """`grade`, with effectiveness from the judge when it answers (the deterministic reasons are
    kept after the judge's). No final reply: effectiveness stays 0 without asking."""
    grades = grade(task, trace, harness, catalog, **kwargs)
    if not trace.ok or not trace.final_reply:
        return grades
    verdict = await judge.effectiveness(task, trace.final_reply)
    if verdict is None:
        return grades
    reasons = [f"judge votes {verdict.votes}: " + " | ".join(verdict.reasons)]
    reasons += [
        f"deterministic ({grades.effectiveness.score}): {r}" for r in grades.effectiveness.reasons
    ]
    judged = GraderResult(score=verdict.score, reasons=reasons)
    return grades.model_copy(update={"effectiveness": judged})
