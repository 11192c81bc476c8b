"""HSA-RL environment, torch-free: prompt groups under fresh harness variants, and rewards.

**Prompts.** One GRPO *group* = one (task, harness variant, turn). For group g the variant is
drawn with the configured sampler from a seed derived from (seed, task id, g), so every group
sees a fresh surface (skill names, tool schemas, prompt layout ...). The oracle runs the task
through the one agent loop (core/runtime) under that variant, in a fresh LiveRoom with the
task's faults and seeded random faults (`fault_rate`, split evenly over timeouts, malformed
results, permission denials, rate limits and empty results). A turn t of that gold trace is
picked (`turn`: the first, the final reply, or any), and the group's prompt is exactly what
the model saw at that call: `trace.messages[:messages_sent]` (system prompt of the variant,
viewer message, earlier turns and tool results).

**Rewards.** A completion is one model output at turn t. It is scored by running the task
again through the agent loop, under the same variant and the same faults, with a client that
answers turns before t as the oracle (which reproduces the prompt's prefix exactly: the oracle
and the room are deterministic), answers turn t with the completion, and then:

- if the completion's turn *failed* (its tool calls could not be parsed, a hook blocked its
  reply, or every call it made was a loop-side error: unknown tool, invalid arguments, unknown
  skill, blocked), the request ends there as a model error: no final reply, so accuracy and
  effectiveness are 0. The oracle never repairs a failed turn.
- otherwise the oracle finishes the request, so a good intermediate turn is rewarded by the
  good ending it allows, and a harmful one (useless, repeated or wrong calls, wrong skills) is
  penalised by tool rationality and skill selection.

The Core II graders (core/sim/graders.py) then score the trace: accuracy, effectiveness,
tool_rationality, skill_selection, each its own GRPO reward function (so TRL logs each as
`rewards/<name>/mean`), plus `length` = -min(1, max(0, tokens - budget) / budget), the
reasoning-length penalty. Honest limits: on an intermediate turn accuracy and effectiveness
mostly say "the turn was valid and led somewhere correct", since the oracle writes the reply;
on the final turn they grade the model's own reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from core.datagen.rows import failed_turns
from core.datagen.variants import HarnessVariant, get_sampler, variant_seed
from core.episode.open_world import open_world
from core.episode.play import play
from core.episode.world import GoldUnavailable, World
from core.harness.models import Harness
from core.harness.render import render_compact_system_prompt
from core.runtime.client import ChatClient, DeltaCallback, Message, ModelError, ModelReply
from core.runtime.trace import ModelCallStep, Step, Trace
from core.sim.faults import FaultRates
from core.sim.models import Catalog

T = TypeVar("T")

COMPONENTS = ("accuracy", "effectiveness", "tool_rationality", "skill_selection", "length")


@dataclass
class RlPrompt:
    """One GRPO group's prompt and what is needed to score its completions."""

    key: str
    task: Any
    variant_seed: int
    turn: int
    messages: list[dict[str, str]]

    def row(self) -> dict[str, Any]:
        """The dataset row (TRL reads `prompt`; the rest reaches the reward functions)."""
        return {
            "prompt": self.messages,
            "key": self.key,
            "task": self.task.model_dump_json(),
            "variant_seed": self.variant_seed,
            "turn": self.turn,
        }


@dataclass
class Score:
    scores: dict[str, float]
    status: str
    turn_failed: bool
    reasons: dict[str, list[str]] = field(default_factory=dict)


class _SampledTurn:
    """The client of a scoring run: oracle before turn t, the completion at t, then the oracle
    unless turn t failed (module doc)."""

    def __init__(self, oracle: ChatClient, turn: int, completion: str) -> None:
        self.oracle = oracle
        self.turn = turn
        self.completion = completion
        self.calls = 0
        self.steps: list[Step] = []

    def on_event(self, step: Step) -> None:
        if step.turn == self.turn:
            self.steps.append(step)

    def turn_failed(self) -> bool:
        """Whether the sampled turn failed, by the rule teacher data prunes by."""
        return self.turn in failed_turns(self.steps)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.calls += 1
        if self.calls == self.turn:
            return ModelReply(content=self.completion)
        if self.calls > self.turn and self.turn_failed():
            raise ModelError("the sampled turn failed; the oracle does not repair it")
        return await self.oracle.complete(messages, tools=tools, on_delta=on_delta)


class RlEnvironment:
    """Builds prompt groups and scores completions (module doc).

    The tasks play in one World: the live room (`catalog`, with seeded random faults), or,
    with `task_file`, the harness's own tools and the task file's graders (rewards from the
    same grades; the gold under each group's variant is the file's gold remapped onto it).
    The world lives on an event loop of the environment's own thread, so a task file's MCP
    servers stay connected across the trainer's synchronous reward calls; `close` stops it.
    """

    def __init__(
        self,
        harness: Harness,
        catalog: Catalog | None,
        tasks: Sequence[Any],
        *,
        sampler: str = "hsa",
        fault_rate: float = 0.1,
        system_prompt: str = "full",
        turn: str = "any",
        seed: int = 0,
        length_budget: int = 128,
        task_file: bool = False,
    ) -> None:
        if not tasks:
            raise ValueError("no tasks to build RL prompts from")
        self.harness = harness
        self.catalog = catalog
        self.tasks = {t.id: t for t in tasks}
        self.task_order = list(tasks)
        self.sampler_name = sampler
        self.sampler = get_sampler(sampler)
        self.fault_rates = FaultRates.uniform(fault_rate) if fault_rate > 0 else None
        self.system_prompt = system_prompt
        self.turn_policy = turn
        self.seed = seed
        self.length_budget = length_budget
        self._variants: dict[tuple[str, int], HarnessVariant] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._stack = contextlib.AsyncExitStack()
        self.world: World[Any] = self._run(self._open(task_file))

    async def _open(self, task_file: bool) -> World[Any]:

        return await self._stack.enter_async_context(
            open_world(
                self.harness,
                task_file=task_file,
                catalog=self.catalog,
                fault_rates=self.fault_rates,
            )
        )

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def close(self) -> None:
        """Close the world (a task file's tools) and stop the environment's loop."""
        if self._loop.is_closed():
            return
        self._run(self._stack.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    # ------------------------------------------------------------------ variants, loop runs

    def variant(self, task: Any, seed: int) -> HarnessVariant:
        key = (task.id, seed)
        cached = self._variants.get(key)
        if cached is None:
            drawn: HarnessVariant = self.sampler(self.harness, seed)
            cached = replace(drawn, index=1)
            self._variants[key] = cached
        return cached

    async def _gold(self, task: Any, seed: int) -> Trace:
        gold = await self.world.gold(task, self.variant(task, seed))
        episode = await play(
            task, gold.harness, gold.client, self.world, surface=gold.surface,
            request_id=f"{task.id}@{seed}", graded=False,
        )  # fmt: skip
        return episode.trace

    def gold_trace(self, task: Any, seed: int) -> Trace:
        """The gold run of `task` under group variant `seed` (the prompt's source)."""
        return self._run(self._gold(task, seed))

    # ------------------------------------------------------------------ prompts

    def build_prompts(self, groups: int) -> tuple[list[RlPrompt], dict[str, int]]:
        """`groups` prompts (tasks round-robin, a fresh variant each); (prompts, dropped)."""
        return self._run(self._build(groups))

    async def _build(self, groups: int) -> tuple[list[RlPrompt], dict[str, int]]:
        prompts: list[RlPrompt] = []
        dropped: dict[str, int] = {}
        attempts = 0
        while len(prompts) < groups and attempts < groups * 3:
            index = attempts
            attempts += 1
            task = self.task_order[index % len(self.task_order)]
            seed = variant_seed(self.seed, task.id, 1000 + index)
            try:
                gold = await self.world.gold(task, self.variant(task, seed))
                trace = await self._gold(task, seed)
            except GoldUnavailable as exc:  # the task's gold cannot play: skip it, say why
                reason = f"gold unavailable: {exc}"
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            except Exception as exc:  # a sampler or harness bug: skip the group, say why
                reason = f"variant failed: {type(exc).__name__}"
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            calls = [s for s in trace.steps_of(ModelCallStep) if s.error is None]
            if not trace.ok or not calls:
                reason = f"gold trace {trace.status.value}"
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            turn = self._pick_turn(len(calls), task.id, index)
            step = calls[turn - 1]
            messages = [
                {"role": str(m["role"]), "content": str(m.get("content") or "")}
                for m in trace.messages[: step.messages_sent]
            ]
            if self.system_prompt == "compact" and messages and messages[0]["role"] == "system":
                messages[0] = {
                    "role": "system",
                    "content": render_compact_system_prompt(gold.harness),
                }
            prompts.append(RlPrompt(f"{task.id}#g{index}", task, seed, step.turn, messages))
        return prompts, dropped

    def _pick_turn(self, n_calls: int, task_id: str, index: int) -> int:
        if self.turn_policy == "first":
            return 1
        if self.turn_policy == "final":
            return n_calls
        digest = hashlib.sha256(f"turn:{self.seed}:{task_id}:{index}".encode()).digest()
        return random.Random(digest).randint(1, n_calls)

    # ------------------------------------------------------------------ rewards

    def length_penalty(self, tokens: int) -> float:
        """0 within the budget, down to -1 at twice the budget and beyond."""
        over = max(0, tokens - self.length_budget)
        return 0.0 - min(1.0, over / self.length_budget)

    def score(self, task: Any, variant_seed: int, turn: int, completion: str, tokens: int) -> Score:
        return self._run(self.score_async(task, variant_seed, turn, completion, tokens))

    async def score_async(
        self, task: Any, variant_seed: int, turn: int, completion: str, tokens: int
    ) -> Score:
        gold = await self.world.gold(task, self.variant(task, variant_seed))
        client = _SampledTurn(gold.client, turn, completion)
        episode = await play(
            task, gold.harness, client, self.world, surface=gold.surface,
            on_event=client.on_event,
        )  # fmt: skip
        trace, grades = episode.trace, episode.grades
        assert grades is not None
        scores = dict(grades.scores())
        scores["length"] = self.length_penalty(tokens)
        reasons = {
            "accuracy": grades.accuracy.reasons,
            "effectiveness": grades.effectiveness.reasons,
            "tool_rationality": grades.tool_rationality.reasons,
            "skill_selection": grades.skill_selection.reasons,
        }
        return Score(scores, trace.status.value, client.turn_failed(), reasons)


class RewardCache:
    """Grades each (prompt, completion) once for the four grader reward functions of a batch
    (the length reward reads the token count alone)."""

    def __init__(self, env: RlEnvironment, *, max_entries: int = 4096) -> None:
        self.env = env
        self.max_entries = max_entries
        self._cache: dict[tuple[str, str], Score] = {}
        self.scored = 0

    def get(self, task_json: str, seed: int, turn: int, completion: str, tokens: int) -> Score:
        key = (f"{hashlib.sha256(task_json.encode()).hexdigest()}:{seed}:{turn}", completion)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        task = self._task(task_json)
        score = self.env.score(task, seed, turn, completion, tokens)
        self.scored += 1
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[key] = score
        return score

    def _task(self, task_json: str) -> Any:
        data = json.loads(task_json)
        task = self.env.tasks.get(str(data.get("id")))
        if task is None:
            raise KeyError(f"an RL row names task {data.get('id')!r}, not one of the stage's")
        return task


def reward_functions(cache: RewardCache) -> list[Callable[..., list[float]]]:
    """One GRPO reward function per component, named after it (TRL logs them by name)."""

    def make(component: str) -> Callable[..., list[float]]:
        def reward(
            prompts: list[Any],
            completions: list[Any],
            completion_ids: list[list[int]] | None = None,
            **columns: Any,
        ) -> list[float]:
            out: list[float] = []
            for i, completion in enumerate(completions):
                text = _completion_text(completion)
                tokens = len(completion_ids[i]) if completion_ids is not None else len(text) // 4
                if component == "length":  # no loop run needed
                    out.append(cache.env.length_penalty(tokens))
                    continue
                score = cache.get(
                    columns["task"][i],
                    int(columns["variant_seed"][i]),
                    int(columns["turn"][i]),
                    text,
                    tokens,
                )
                out.append(float(score.scores[component]))
            return out

        reward.__name__ = component
        reward.__qualname__ = component
        return reward

    return [make(c) for c in COMPONENTS]


def _completion_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(str(m.get("content") or "") for m in completion if isinstance(m, dict))
    return str(completion)
