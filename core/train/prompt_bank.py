"""The bundled OPD prompt bank: general instruction prompts generated from templates.

    python -m core.train.prompt_bank [--count 600] [--seed 0] [--out FILE]

(default FILE: resources/train/opd_prompts.jsonl)

Stage 2 (general on-policy distillation) needs prompts on which the student samples and the
pre-SFT base model scores: everyday instructions, so SFT on the live-room harness does not
erode general instruction following. The bank is made here, deterministically from a seed,
from our own templates across five families:

- writing (stories, emails, descriptions, poems, speeches, reviews),
- explanation (explain / compare / why / how, for a named audience),
- lists (N tips, reasons, steps, ideas),
- formatting (bullets, numbered steps, a JSON object, a table, a title line, sections,
  lower/upper case, a closing line, a quoted reply),
- length constraints (at most / at least N words, exactly N sentences or paragraphs).

Each prompt is a task from one of the first three families plus zero to two constraints from
the last two. IFEval's prompts (../shared/data/ifeval) are test data: none is used or
paraphrased here, and a test checks that no bank prompt shares an 8-word run with them.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

from core.train.data import bank_path

TOPICS = [
    "the water cycle", "how bees make honey", "learning a second language as an adult",
    "why the sky looks blue", "composting at home", "the first day at a new job",
    "a lighthouse keeper's last night", "how credit scores work", "planning a picnic",
    "the history of the bicycle", "keeping houseplants alive", "a robot that learns to paint",
    "saving money on groceries", "how vaccines train the immune system", "a rainy train journey",
    "the basics of photosynthesis", "starting a vegetable garden", "a lost dog finding home",
    "how airplanes stay in the air", "choosing a first laptop", "the life of a city pigeon",
    "why we dream", "preparing for a job interview", "a small bakery opening in winter",
    "how tides are formed", "teaching a child to ride a bike", "volcanoes and how they erupt",
    "the benefits of walking every day", "a friendship between two neighbours",
    "how a bill becomes a law", "recycling plastic", "a chess match between old rivals",
    "the moon's phases", "writing a good cover letter", "how coffee is grown",
    "a festival in a mountain village", "time management for students", "how rainbows form",
    "the invention of the printing press", "cooking rice perfectly",
    "an astronaut's first spacewalk",
    "how solar panels make electricity", "moving to a new city", "the migration of birds",
    "a museum at night", "public libraries", "how earthquakes are measured", "a surprise party",
    "caring for an elderly cat", "the rules of basketball", "how batteries store energy",
    "a village without internet", "the importance of sleep", "building a birdhouse",
]  # fmt: skip
AUDIENCES = [
    "a ten-year-old", "a busy manager", "a first-year university student", "a retiree",
    "a curious teenager", "a new employee", "someone who has never heard of it",
    "a friend over coffee",
]  # fmt: skip
PRODUCTS = [
    "a reusable water bottle", "a solar-powered lantern", "a folding travel kettle",
    "noise-cancelling headphones", "a hand-made ceramic mug", "a compact umbrella",
    "a beginner's watercolour set", "a standing desk",
]  # fmt: skip
PAIRS = [
    ("trains", "planes"), ("tea", "coffee"), ("e-books", "printed books"),
    ("renting", "buying a home"), ("cats", "dogs"), ("running", "swimming"),
    ("email", "phone calls"), ("cities", "the countryside"),
]  # fmt: skip
ACTIVITIES = [
    "studying for exams", "sleeping better", "hosting a dinner", "travelling on a budget",
    "writing clearly", "staying focused at home", "starting to jog", "organising a closet",
    "learning to cook", "making friends in a new town",
]  # fmt: skip

Rng = random.Random

WRITING: list[Callable[[Rng], str]] = [
    lambda r: f"Write a short story about {r.choice(TOPICS)}.",
    lambda r: f"Write a friendly email to {r.choice(AUDIENCES)} about {r.choice(TOPICS)}.",
    lambda r: f"Write a product description for {r.choice(PRODUCTS)}.",
    lambda r: f"Write a poem about {r.choice(TOPICS)}.",
    lambda r: f"Write a two-minute speech on {r.choice(TOPICS)} for a school assembly.",
    lambda r: f"Write a review of {r.choice(PRODUCTS)} as if you had used it for a month.",
    lambda r: f"Write a diary entry by someone experiencing {r.choice(TOPICS)}.",
]
EXPLANATION: list[Callable[[Rng], str]] = [
    lambda r: f"Explain {r.choice(TOPICS)} to {r.choice(AUDIENCES)}.",
    lambda r: "Compare {} and {}: what is each good for?".format(*r.choice(PAIRS)),
    lambda r: f"How would you describe {r.choice(TOPICS)} to {r.choice(AUDIENCES)}?",
    lambda r: f"What are the main ideas behind {r.choice(TOPICS)}?",
    lambda r: f"Summarise what someone should know about {r.choice(TOPICS)}.",
]
LISTS: list[Callable[[Rng], str]] = [
    lambda r: f"Give {r.randint(3, 7)} tips for {r.choice(ACTIVITIES)}.",
    lambda r: f"List {r.randint(3, 6)} reasons someone might enjoy {r.choice(ACTIVITIES)}.",
    lambda r: f"Name {r.randint(3, 8)} ideas for a weekend project about {r.choice(TOPICS)}.",
    lambda r: f"Outline the steps of {r.choice(ACTIVITIES)} for a beginner.",
]
FORMATTING: list[Callable[[Rng], str]] = [
    lambda r: f"Use exactly {r.randint(3, 5)} bullet points that start with '- '.",
    lambda r: "Number every step (1., 2., 3., ...).",
    lambda r: 'Reply with one JSON object with the keys "title" and "body" and nothing else.',
    lambda r: "Present it as a Markdown table with two columns.",
    lambda r: "Start with a one-line title in capital letters, then a blank line.",
    lambda r: f"Split the answer into {r.randint(2, 3)} sections headed 'Part 1', 'Part 2', ...",
    lambda r: "Write everything in lowercase letters.",
    lambda r: "End with the exact line: Thanks for reading!",
    lambda r: "Do not use any commas.",
    lambda r: "Put your whole reply inside double quotation marks.",
]
LENGTH: list[Callable[[Rng], str]] = [
    lambda r: f"Keep it under {r.choice([40, 60, 80, 100, 150])} words.",
    lambda r: f"Use at least {r.choice([120, 150, 200, 250])} words.",
    lambda r: f"Answer in exactly {r.randint(2, 5)} sentences.",
    lambda r: f"Write exactly {r.randint(2, 4)} paragraphs separated by a blank line.",
    lambda r: "Answer in a single sentence.",
]
FAMILIES = {"writing": WRITING, "explanation": EXPLANATION, "lists": LISTS}


def generate(count: int = 600, seed: int = 0) -> list[dict[str, object]]:
    """`count` distinct prompts (deterministic for a seed)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict[str, object]] = []
    families = sorted(FAMILIES)
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        family = families[len(out) % len(families)]
        task = rng.choice(FAMILIES[family])(rng)
        constraints: list[str] = []
        kinds: list[str] = []
        n = rng.choices([0, 1, 2], weights=[2, 5, 3])[0]
        pools = [("formatting", FORMATTING), ("length", LENGTH)]
        rng.shuffle(pools)
        for kind, pool in pools[:n]:
            constraints.append(rng.choice(pool)(rng))
            kinds.append(kind)
        prompt = " ".join([task, *constraints])
        if prompt in seen:
            continue
        seen.add(prompt)
        out.append(
            {
                "id": f"opd-{len(out):04d}",
                "family": family,
                "constraints": kinds,
                "prompt": prompt,
            }
        )
    return out


def write_bank(path: Path, count: int = 600, seed: int = 0) -> Path:
    rows = generate(count, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=bank_path())
    args = parser.parse_args(argv)
    path = write_bank(args.out, args.count, args.seed)
    print(f"wrote {args.count} prompts to {path}")


if __name__ == "__main__":
    main()
