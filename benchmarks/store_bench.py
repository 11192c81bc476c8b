"""Store benchmark (not a test): commit/load time and space of a 200-skill/100-tool harness.

    python benchmarks/store_bench.py [--skills 200] [--tools 100] [--reps 20] [--versions 1000]
                                     [--out result.json]

Reports the median milliseconds to commit and to load one version of a synthetic but realistic
harness (skills with 1-2 KB Markdown bodies, tools with 3-6 parameters, hooks, a five-section
prompt), and the bytes of a database holding 1,000 versions that each change one sentence of one
skill, as a ratio to the bytes of a database holding one version (goal <= 3). Bytes are the
SQLite file size after a WAL checkpoint and VACUUM.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.harness import (
    Harness,
    Hook,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Settings,
    Skill,
    Tool,
)
from core.harness.folder import folder_files, harness_from_files
from core.store import Store
from core.store import harness_versions as hv

WORDS = [
    "viewer",
    "price",
    "stock",
    "coupon",
    "size",
    "shipping",
    "return",
    "product",
    "color",
    "fabric",
    "fit",
    "discount",
    "bundle",
    "live",
    "host",
    "link",
    "number",
    "order",
    "delivery",
    "warranty",
    "refund",
    "exchange",
    "gift",
    "member",
    "points",
    "flash",
    "sale",
    "limited",
    "quantity",
    "compare",
    "model",
    "material",
    "care",
    "instructions",
    "wash",
    "cotton",
    "wool",
    "silk",
    "leather",
    "battery",
    "charge",
    "screen",
    "camera",
    "memory",
    "storage",
    "weight",
    "height",
    "waist",
    "chest",
    "length",
    "sleeve",
    "recommend",
    "answer",
    "politely",
    "quickly",
    "confirm",
    "check",
    "verify",
]
TOPICS = [
    "dress",
    "jacket",
    "sneaker",
    "phone",
    "earbuds",
    "lipstick",
    "serum",
    "blender",
    "kettle",
    "backpack",
    "watch",
    "lamp",
    "sofa",
    "mattress",
    "stroller",
    "toy",
    "tent",
    "bike",
    "helmet",
    "camera",
]
ACTIONS = [
    "answer",
    "explain",
    "compare",
    "push",
    "recommend",
    "check",
    "handle",
    "calm",
    "confirm",
    "upsell",
]


def sentence(rng: random.Random, n: int | None = None) -> str:
    words = [rng.choice(WORDS) for _ in range(n or rng.randint(8, 16))]
    return " ".join(words).capitalize() + "."


def skill_body(rng: random.Random, name: str) -> str:
    parts = [f"# {name.replace('-', ' ').title()}\n"]
    while sum(len(p) for p in parts) < rng.randint(1000, 2000):
        heading = rng.choice(["When to use", "Steps", "Examples", "Do not", "Tone", "Checks"])
        parts.append(f"\n## {heading}\n\n")
        for i in range(rng.randint(2, 5)):
            parts.append(f"{i + 1}. {sentence(rng)} {sentence(rng)}\n")
    return "".join(parts)


def make_tool(rng: random.Random, i: int) -> Tool:
    props: dict[str, Any] = {}
    for j in range(rng.randint(3, 6)):
        kind = rng.choice(["string", "integer", "number", "boolean", "enum"])
        name = f"{rng.choice(WORDS)}_{j}"
        if kind == "enum":
            props[name] = {
                "type": "string",
                "enum": rng.sample(WORDS, 4),
                "description": sentence(rng, 8),
            }
        else:
            props[name] = {"type": kind, "description": sentence(rng, 8)}
    required = sorted(rng.sample(sorted(props), rng.randint(1, len(props))))
    name = f"{rng.choice(ACTIONS)}_{rng.choice(TOPICS)}_{i}"
    return Tool(
        name=name,
        description=sentence(rng, 20),
        parameters={"type": "object", "properties": props, "required": required},
        binding=f"sim.{name}",
    )


def make_harness(skills: int = 200, tools: int = 100, seed: int = 0) -> Harness:
    rng = random.Random(seed)
    skill_list = []
    for i in range(skills):
        name = f"{rng.choice(ACTIONS)}-{rng.choice(TOPICS)}-{i}"
        skill_list.append(
            Skill(
                name=name,
                description=sentence(rng, 18),
                body=skill_body(rng, name),
                kind="reply" if i % 3 else "strategy",
            )
        )
    tool_list = [make_tool(rng, i) for i in range(tools)]
    sections = [
        PromptSection(id="persona", title="Persona", template="You are ${host}, a live host.\n"),
        PromptSection(
            id="rules", title="Rules", template="\n".join(sentence(rng) for _ in range(8))
        ),
        PromptSection(id="style", title="Style", template="Short, warm, concrete.\n"),
        PromptSection(id="skills", title="Skills", kind=SectionKind.SKILL_INDEX),
        PromptSection(id="tools", title="Tools", kind=SectionKind.TOOL_BLOCK),
    ]
    hooks = [
        Hook(name="need-reply-skill", event="before_reply", kind="require_reply_skill"),
        Hook(name="facts", event="before_reply", kind="fact_check"),
        Hook(
            name="no-claims",
            event="before_reply",
            kind="forbidden_claims",
            params={"patterns": ["best in the world", "guaranteed"]},
        ),
        Hook(
            name="short",
            event="before_reply",
            kind="python",
            source="def check(event):\n    return {'decision': 'allow'}\n",
        ),
    ]
    return Harness(
        name="bench",
        description="Live-stream host harness for benchmarks",
        settings=Settings(),
        prompt=PromptPipeline(variables={"host": "Mia"}, sections=sections),
        skills=skill_list,
        tools=tool_list,
        hooks=hooks,
    )


def edit_one_skill(harness: Harness, rng: random.Random) -> Harness:
    """Replace one sentence of one random skill (what an operator's small edit looks like)."""
    i = rng.randrange(len(harness.skills))
    skill = harness.skills[i]
    lines = skill.body.split("\n")
    candidates = [k for k, line in enumerate(lines) if line[:1].isdigit()]
    k = rng.choice(candidates)
    number = lines[k].split(".", 1)[0]
    lines[k] = f"{number}. {sentence(rng)} {sentence(rng)}"
    skills = list(harness.skills)
    skills[i] = skill.model_copy(update={"body": "\n".join(lines)})
    return harness.model_copy(update={"skills": skills})


def db_bytes(store: Store) -> int:
    store.checkpoint(vacuum=True)
    return store.path.stat().st_size


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def run(args: argparse.Namespace) -> dict[str, Any]:
    harness = make_harness(args.skills, args.tools)
    rng = random.Random(1)
    result: dict[str, Any] = {
        "skills": args.skills,
        "tools": args.tools,
        "harness_text_bytes": sum(len(t.encode()) for t in folder_files(harness).values()),
        "reps": args.reps,
        "versions": args.versions,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with Store.open(root / "time.db") as store:
            store.commit(harness, "warm-up")
            store.load("head", "bench")
            # Commit: a small edit on top of the previous version (default settings).
            commit_ms: list[float] = []
            ids: list[str] = []
            current = harness
            for i in range(args.reps):
                current = edit_one_skill(current, rng)
                t0 = time.perf_counter()
                ids.append(store.commit(current, f"edit {i}").id)
                commit_ms.append(_ms(t0))
            # The same without the round-trip check commit does by default.
            store.verify_commits = False
            commit_raw_ms: list[float] = []
            for i in range(args.reps):
                current = edit_one_skill(current, rng)
                t0 = time.perf_counter()
                store.commit(current, f"raw edit {i}")
                commit_raw_ms.append(_ms(t0))
            # The store's own write path: files already serialized, no model work at all.
            store_write_ms: list[float] = []
            for i in range(args.reps):
                current = edit_one_skill(current, rng)
                files = {p: t.encode() for p, t in folder_files(current).items()}
                t0 = time.perf_counter()
                with store._write() as conn:
                    hv.commit(conn, "bench", files, f"files {i}", "head", [], store.tuning)
                store_write_ms.append(_ms(t0))
            result["store_write_ms_median"] = statistics.median(store_write_ms)
            store.verify_commits = True
            t0 = time.perf_counter()
            other = store.commit(make_harness(args.skills, args.tools, seed=99), "all new")
            result["commit_all_new_ms"] = _ms(t0)
            # Load: a version not in the store's harness cache, then one that is.
            store.cache_size = 0
            load_ms, files_ms = [], []
            for vid in ids:
                t0 = time.perf_counter()
                store.load(vid)
                load_ms.append(_ms(t0))
                t0 = time.perf_counter()
                store.files(vid)
                files_ms.append(_ms(t0))
            store.cache_size = 8
            store.load(other.id)
            t0 = time.perf_counter()
            store.load(other.id)
            result["load_cached_ms"] = _ms(t0)
        # What core.harness costs inside those numbers.
        dump_ms, parse_ms = [], []
        for _ in range(min(args.reps, 5)):
            t0 = time.perf_counter()
            files = {p: t.encode() for p, t in folder_files(harness).items()}
            dump_ms.append(_ms(t0))
            t0 = time.perf_counter()
            harness_from_files(files, name="bench")
            parse_ms.append(_ms(t0))
        result.update(
            commit_ms_median=statistics.median(commit_ms),
            commit_ms_median_no_verify=statistics.median(commit_raw_ms),
            load_ms_median=statistics.median(load_ms),
            read_files_ms_median=statistics.median(files_ms),
            folder_files_ms_median=statistics.median(dump_ms),
            harness_from_files_ms_median=statistics.median(parse_ms),
        )

        # Space: one version vs N versions each changing one sentence of one skill.
        with Store.open(root / "one.db") as store:
            store.commit(harness, "v0")
            one = db_bytes(store)
        current = harness
        rng = random.Random(2)
        t0 = time.perf_counter()
        with Store.open(root / "many.db") as store:
            store.verify_commits = False  # measured above; keeps the run short
            store.cache_size = 0
            store.commit(harness, "v0")
            for i in range(1, args.versions):
                current = edit_one_skill(current, rng)
                store.commit(current, f"edit {i}: one sentence")
            result["build_many_s"] = time.perf_counter() - t0
            many = db_bytes(store)
            t0 = time.perf_counter()
            loaded = store.load("head", "bench")
            result["load_newest_of_many_ms"] = _ms(t0)
            assert loaded == current, "the newest version did not load back equal"
            t0 = time.perf_counter()
            store.files(store.log("bench")[args.versions // 2].id)
            result["read_files_middle_of_many_ms"] = _ms(t0)
    result.update(one_version_bytes=one, many_versions_bytes=many, ratio=many / one, ratio_goal=3.0)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(args)
    n = args.versions
    rows = [
        (
            "harness",
            f"{args.skills} skills, {args.tools} tools, "
            f"{result['harness_text_bytes']:,} bytes of text",
        ),
        ("commit, one skill changed (median)", f"{result['commit_ms_median']:.1f} ms"),
        ("  same, without round-trip check", f"{result['commit_ms_median_no_verify']:.1f} ms"),
        ("  store part only (files given)", f"{result['store_write_ms_median']:.1f} ms"),
        ("commit, all components new", f"{result['commit_all_new_ms']:.1f} ms"),
        ("load (median, not cached)", f"{result['load_ms_median']:.1f} ms"),
        ("  store part only (read files, median)", f"{result['read_files_ms_median']:.1f} ms"),
        ("load (cached harness)", f"{result['load_cached_ms']:.1f} ms"),
        ("core.harness folder_files (median)", f"{result['folder_files_ms_median']:.1f} ms"),
        (
            "core.harness harness_from_files (median)",
            f"{result['harness_from_files_ms_median']:.1f} ms",
        ),
        ("one version", f"{result['one_version_bytes']:,} bytes"),
        (f"{n} versions", f"{result['many_versions_bytes']:,} bytes"),
        ("ratio (goal <= 3)", f"{result['ratio']:.2f}"),
        (f"load newest of {n}", f"{result['load_newest_of_many_ms']:.1f} ms"),
        (
            f"read files of version {n // 2} of {n}",
            f"{result['read_files_middle_of_many_ms']:.1f} ms",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
