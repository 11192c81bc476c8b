"""HSA transforms, dimension 5: how the hooks behave towards the model.

A gold trajectory that passes every hook never sees a reminder, so these transforms return the
identity SurfaceMapping; a hook-retry trajectory (fail -> reminder -> recover) keeps its turns
too, since the same check blocks the same output and only the wording around it changes.
`core.hsa.augment` verifies what a transform cannot know on its own: that the variant's retry
budget still covers the trajectory's blocks, and that no hook the trajectory needed was
switched off. What they change:

- `hooks.reminder_wording`: each hook's reminder reworded from the bank (by hook name, else by
  hook kind); `${reason}` is kept, so the model still learns what went wrong;
- `hooks.reminder_format`: the wrapper around reminders (`settings.reminder_format`, which keeps
  `${reminder}`, checked when the bank is read);
- `hooks.reminder_role`: the role of the reminder message, user <-> system;
- `hooks.retry_budget`: the number of hook blocks allowed per request, changed by at least one
  and never below one;
- `hooks.active`: switch off some of the hooks marked `task_critical: false` (in the demo, the
  reply-length check): the task and the gold stay the same without them. Task-critical hooks
  are never touched, and disabled hooks are never switched on (a check nobody ran could block
  the gold).

Bank file `hooks.yaml`:

    reminders:
      by_hook: {<hook name>: [<reminder with ${reason}>, ...]}
      by_kind: {<hook kind>: [<reminder with ${reason}>, ...]}
    reminder_formats: [<wrapper with ${reminder}>, ...]

Like the prompt transforms, these copy only what they change (settings, a hook) and share the
rest with their input.
"""

from __future__ import annotations

import random
from typing import Any

from core.harness.models import Harness, ReminderRole
from core.hsa.mapping import SurfaceMapping
from core.hsa.transform import Bank, Dimension, Skip, transform

IDENTITY = SurfaceMapping()
MAX_RETRY_BUDGET = 16
"""The harness model's upper bound for settings.retry_budget."""


def _with_settings(harness: Harness, **changes: Any) -> Harness:
    return harness.model_copy(update={"settings": harness.settings.model_copy(update=changes)})


def reminder_options(bank: Bank, name: str, kind: str) -> list[str]:
    """The bank's reminders for a hook: by its name when the bank knows it, else by kind."""
    table = bank.section("hooks").get("reminders") or {}
    by_hook: dict[str, list[str]] = table.get("by_hook") or {}
    by_kind: dict[str, list[str]] = table.get("by_kind") or {}
    options = by_hook.get(name) or by_kind.get(kind) or []
    for text in options:
        if "${reason}" not in text:
            raise ValueError(f"hooks bank: reminder {text!r} lacks ${{reason}}")
    return list(options)


@transform("hooks.reminder_wording", Dimension.HOOKS)
def reminder_wording(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Reword hook reminders from the bank (by hook name, else by kind), keeping ${reason}."""
    covered: list[tuple[int, list[str]]] = []
    for index, hook in enumerate(harness.hooks):
        options = reminder_options(bank, hook.name, hook.kind.value)
        options = [t for t in options if t and t != hook.reminder]
        if options:
            covered.append((index, options))
    if not covered:
        raise Skip(f"the {bank.name.value} bank has no reminder for any hook kind of the harness")
    reworded = [c for c in covered if rng.random() < 0.75] or [rng.choice(covered)]
    hooks = list(harness.hooks)
    for index, options in reworded:
        hooks[index] = hooks[index].model_copy(update={"reminder": rng.choice(options)})
    return harness.model_copy(update={"hooks": hooks}), IDENTITY


@transform("hooks.reminder_format", Dimension.HOOKS)
def reminder_format(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Wrap reminders differently (settings.reminder_format; keeps ${reminder})."""
    formats: list[str] = bank.section("hooks").get("reminder_formats") or []
    for text in formats:
        if "${reminder}" not in text:
            raise ValueError(f"hooks bank: reminder format {text!r} lacks ${{reminder}}")
    current = harness.settings.reminder_format
    options = [f for f in formats if f != current]
    if not options:
        raise Skip(f"the {bank.name.value} bank has no other reminder format")
    return _with_settings(harness, reminder_format=rng.choice(options)), IDENTITY


@transform("hooks.reminder_role", Dimension.HOOKS)
def reminder_role(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Carry reminders in the other role: user <-> system (a `tool` role moves to either)."""
    current = harness.settings.reminder_role
    options = [r for r in (ReminderRole.USER, ReminderRole.SYSTEM) if r != current]
    return _with_settings(harness, reminder_role=rng.choice(options)), IDENTITY


@transform("hooks.retry_budget", Dimension.HOOKS)
def retry_budget(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Change the retry budget by at least one, never below one (augment checks that the
    trajectory's own hook blocks still fit)."""
    current = harness.settings.retry_budget
    low = max(1, current - 1)
    high = min(MAX_RETRY_BUDGET, current + 3)
    options = [b for b in range(low, high + 1) if b != current]
    if not options:
        raise Skip(f"no retry budget other than {current} in 1..{MAX_RETRY_BUDGET}")
    return _with_settings(harness, retry_budget=rng.choice(options)), IDENTITY


@transform("hooks.active", Dimension.HOOKS)
def active(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
    """Switch off a non-empty subset of the enabled hooks marked task_critical: false."""
    optional = [i for i, h in enumerate(harness.hooks) if h.enabled and not h.task_critical]
    if not optional:
        raise Skip("the harness has no enabled hook marked task_critical: false")
    hooks = list(harness.hooks)
    for index in rng.sample(optional, rng.randint(1, len(optional))):
        hooks[index] = hooks[index].model_copy(update={"enabled": False})
    return harness.model_copy(update={"hooks": hooks}), IDENTITY


def disabled_hooks(original: Harness, variant: Harness) -> list[str]:
    """Hooks enabled in `original` that `variant` has switched off (or dropped)."""
    on = {h.name for h in variant.active_hooks}
    return [h.name for h in original.active_hooks if h.name not in on]
