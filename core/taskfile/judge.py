"""The LLM judge for task-file tasks that give a reference answer instead of facts.

The judge's prompt is a file (resources/judge/reference.md: the system part, a `---` line,
the user part with ${message}, ${reference}, ${reply}) so it can be read, diffed and shown;
its version is the first 12 hex digits of the file's SHA-256 and every judged grade records
it, so scores judged by different prompts are never silently compared.

Voting is `core.sim.judge.LLMJudge`'s (majority of `samples` votes on 0 / 0.5 / 1 through
any OpenAI-compatible endpoint). A judge that does not answer is an error before a run
starts (`check_judge`), and a vote that fails during a run leaves the item's effectiveness at
0 with the judge's errors as the reason: never a silent pass.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from string import Template

import httpx

import resources
from core.sim.graders import GraderResult
from core.sim.judge import LLMJudge
from core.taskfile.models import OwnTask

PROMPT_FILE = "reference.md"


class JudgeUnavailable(RuntimeError):
    """The judge endpoint cannot be reached or does not serve the model."""


@dataclass(frozen=True)
class JudgePrompt:
    system: str
    user: str
    version: str

    def messages(self, task: OwnTask, reply: str) -> list[dict[str, str]]:
        values = {"message": task.message, "reference": task.reference or "", "reply": reply}
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": Template(self.user).safe_substitute(values)},
        ]


def prompt_path() -> Path:
    return Path(resources.__file__).parent / "judge" / PROMPT_FILE


def prompt_text() -> str:
    return prompt_path().read_text(encoding="utf-8")


def load_prompt(text: str | None = None) -> JudgePrompt:
    """The judge prompt (default: the shipped file) split at its `---` line, with its version."""
    raw = text if text is not None else prompt_text()
    system, sep, user = raw.partition("\n---\n")
    if not sep or "${reply}" not in user:
        raise ValueError(
            "a judge prompt is the system text, a '---' line, then the user text with ${reply}"
        )
    version = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]
    return JudgePrompt(system.strip(), user.strip(), version)


async def check_judge(judge: LLMJudge, *, timeout_s: float = 10.0) -> None:
    """Raise JudgeUnavailable, naming the URL, unless the endpoint lists the judge's model."""
    url = judge.base_url.rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url)
            response.raise_for_status()
            served = [m.get("id") for m in response.json().get("data", [])]
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise JudgeUnavailable(f"the judge at {judge.base_url} does not answer: {exc}") from None
    if served and judge.model not in served:
        raise JudgeUnavailable(
            f"the judge at {judge.base_url} does not serve {judge.model!r} "
            f"(it serves {', '.join(map(str, served))})"
        )


async def judge_reference(
    judge: LLMJudge, task: OwnTask, reply: str, prompt: JudgePrompt | None = None
) -> GraderResult:
    """The judge's effectiveness for `reply` against the task's reference answer."""
    chosen = prompt or load_prompt()
    head = f"judge {judge.model} (prompt {chosen.version})"
    if not reply:
        return GraderResult(score=0.0, reasons=["no final reply"])
    result = await judge.verdict(chosen.messages(task, reply))
    if not result.votes:
        return GraderResult(
            score=0.0, reasons=[f"{head} gave no verdict: {'; '.join(result.errors)}"]
        )
    reasons = [f"{head} votes {result.votes}: " + " | ".join(r for r in result.reasons if r)]
    return GraderResult(score=result.score, reasons=reasons)
