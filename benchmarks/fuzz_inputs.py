"""Fuzz the product's readers of outside input: every case ends in the reader's own error (a
clear message) or a result, never another exception (a traceback in the user's face) or a hang.

    python benchmarks/fuzz_inputs.py                   # 20,000 cases, seed 0
    python benchmarks/fuzz_inputs.py --cases 2000 --seed 7 --out fuzz.json

Targets, each fed mutations of real inputs that ship here (the order desk's task file, the
support-desk fixture's harness folder, an MCP tool list, a Claude Code settings file, tool
arguments against the fixture's schemas, URLs, bindings):

- `parse_task_line` (TaskFileError), `harness_from_files` (HarnessError), `tools_from_data`
  and `hooks_from_claude_settings` (HarnessError), `argument_errors` (a list, never raises),
  `redact_url` and `parse_binding` (never raise), `loads_line` (ValueError).

Mutations: a chunk deleted, duplicated or moved; random characters (line and paragraph
separators, NUL, lone surrogates as JSON escapes, emoji, RTL marks, Rich markup); nesting
wrapped thousands deep; numbers swapped for huge, negative, NaN or Infinity; a random JSON
value replaced at a random path; backtracking regex patterns in schemas.

A case taking more than `--hang-s` (default 5 s) counts as a hang (SIGALRM). Benchmarks are
not tests: the run's figures go to docs/benchmarks.md with this command.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.harness.errors import HarnessError  # noqa: E402
from core.harness.folder import harness_from_files, read_files  # noqa: E402
from core.harness.interop import hooks_from_claude_settings, tools_from_data  # noqa: E402
from core.harness.schema import argument_errors  # noqa: E402
from core.jsonl import loads_line  # noqa: E402
from core.runtime.tool_runtime import parse_binding  # noqa: E402
from core.serving.client import redact_url  # noqa: E402
from core.taskfile.models import TaskFileError, parse_task_line  # noqa: E402

ODD = [
    "\u2028", "\u2029", "\u0085", "\x00", "\x1b[31m", "\ufeff", "\u202e", "\U0001f680",
    ":rocket:", "[bold]", "[/]", "\\ud800", "\\udfff", "'", '"', "\\", "\n", "\r", "\t",
    "${x}", "{{", "}}", "../", "/etc/passwd", "%s", "é", "\u0301", "a" * 300,
]  # fmt: skip
NUMBERS = ["1e309", "-1e309", "NaN", "Infinity", "-0", "99999999999999999999999", "1.5e-400"]
EVIL_PATTERNS = ["^(a+)+$", "(a|aa)+$", "^(\\w+\\s?)*$", "(x+x+)+y", "[", "(?P<a>", "\\"]


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so code under test that catches Exception (and
    would report the case as handled) cannot swallow it."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hang


def mutate_text(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(7)
        n = len(text)
        a, b = sorted(rng.randrange(n + 1) for _ in range(2)) if n else (0, 0)
        if choice == 0 and n:
            text = text[:a] + text[b:]
        elif choice == 1:
            text = text[:a] + text[a:b] * rng.randint(2, 5) + text[a:]
        elif choice == 2:
            text = text[:a] + rng.choice(ODD) + text[a:]
        elif choice == 3:
            depth = rng.choice([70, 1_000, 20_000, 100_000])
            text = text[:a] + "[" * depth + "]" * depth + text[a:]
        elif choice == 4:
            text = text[:a] + rng.choice(NUMBERS) + text[b:]
        elif choice == 5 and n:
            text = text[:a] + chr(rng.randrange(0x20, 0x3000)) + text[a + 1 :]
        else:
            text = text[b:] + text[:a]
    return text


def mutate_value(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """A JSON value with one random place replaced (or a key renamed, dropped or added)."""
    if isinstance(value, dict) and value and rng.random() < 0.8 and depth < 12:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.1:
            out.pop(key)
        elif roll < 0.2:
            out[mutate_text(str(key), rng)] = out.pop(key)
        else:
            out[key] = mutate_value(value[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value and rng.random() < 0.8 and depth < 12:
        i = rng.randrange(len(value))
        out_list = list(value)
        out_list[i] = mutate_value(value[i], rng, depth + 1)
        return out_list
    return rng.choice(
        [
            None, True, 0, -1, 2**70, 1.5, float("inf"), "", mutate_text(json.dumps(value), rng),
            [], {}, [value] * 3, {"$ref": "#/" + "a/" * 50}, rng.choice(ODD),
            {"type": "string", "pattern": rng.choice(EVIL_PATTERNS)},
        ]
    )  # fmt: skip


def _task_lines() -> list[str]:
    return (ROOT / "resources/examples/order_desk/tasks.jsonl").read_text().splitlines()[:40]


def case_task_line(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    line = rng.choice(seeds["tasks"])
    if rng.random() < 0.5:
        text = mutate_text(line, rng)
    else:
        text = json.dumps(mutate_value(json.loads(line), rng), ensure_ascii=rng.random() < 0.5)
    return lambda: parse_task_line(text, where="fuzz:1")


def case_folder(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    files = dict(seeds["folder"])
    rel = rng.choice(list(files))
    raw = files[rel].decode("utf-8", "replace")
    if rel.endswith(".json") and rng.random() < 0.5:
        try:
            files[rel] = json.dumps(mutate_value(json.loads(raw), rng)).encode()
        except (ValueError, RecursionError):
            files[rel] = mutate_text(raw, rng).encode("utf-8", "surrogatepass")
    else:
        files[rel] = mutate_text(raw, rng).encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        files[mutate_text(rel, rng)] = files.pop(rel)
    return lambda: harness_from_files(files, name="fuzz")


def case_tools(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    data = mutate_value(seeds["tools"], rng)
    return lambda: tools_from_data(data, "fuzz.json")


def case_hooks(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    data = mutate_value(seeds["hooks"], rng)
    return lambda: hooks_from_claude_settings(data, "settings.json", tool_names=["Bash"])


def case_arguments(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    schema = rng.choice(seeds["schemas"])
    roll = rng.random()
    if roll < 0.3:
        schema = mutate_value(schema, rng)
    elif roll < 0.35:  # a backtracking pattern on the very argument sent (each may take 2 s)
        evil = rng.choice(EVIL_PATTERNS)
        where = "patternProperties" if rng.random() < 0.3 else "properties"
        schema = {"type": "object", where: {"query" if where == "properties" else evil:
                  {"type": "string", "pattern": evil}}}  # fmt: skip
    args = mutate_value({"order_id": "NW-10421", "amount": 5, "query": "a" * 34 + "!"}, rng)
    if not isinstance(args, dict):
        args = {"value": args}
    return lambda: argument_errors(schema, args) if isinstance(schema, dict) else None


def case_url(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    url = mutate_text("http://user:pw@example.com:8080/v1?token=abc&q=1#frag", rng)
    binding = mutate_text(rng.choice(["python:shop.tools:get", "mcp:srv/tool", "https://x/y"]), rng)
    return lambda: (redact_url(url), parse_binding(binding))


def case_jsonl(rng: random.Random, seeds: dict[str, Any]) -> Callable[[], Any]:
    text = mutate_text(rng.choice(seeds["tasks"]), rng)
    return lambda: loads_line(text)


TARGETS: dict[
    str,
    tuple[
        Callable[[random.Random, dict[str, Any]], Callable[[], Any]],
        tuple[type[BaseException], ...],
    ],
] = {
    "task_line": (case_task_line, (TaskFileError,)),
    "harness_folder": (case_folder, (HarnessError,)),
    "tool_list": (case_tools, (HarnessError,)),
    "claude_hooks": (case_hooks, (HarnessError,)),
    "tool_arguments": (case_arguments, ()),
    "url_binding": (case_url, ()),
    "jsonl_line": (case_jsonl, (ValueError,)),
}


def seeds() -> dict[str, Any]:
    from core.harness.folder import import_folder

    desk = ROOT / "tests/fixtures/support_desk"
    harness = import_folder(desk)
    return {
        "tasks": _task_lines(),
        "folder": read_files(desk),
        "tools": {"tools": [{"name": t.name, "description": t.description,
                             "inputSchema": t.parameters} for t in harness.tools]},
        "hooks": {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo ok", "timeout": 5}]}]}},
        "schemas": [t.parameters for t in harness.tools],
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=float, default=5.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = seeds()
    signal.signal(signal.SIGALRM, _alarm)
    counts: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    failures: list[dict[str, str]] = []
    slowest = (0.0, "")
    started = time.perf_counter()
    names = list(TARGETS)
    for i in range(args.cases):
        name = names[i % len(names)]
        make, expected = TARGETS[name]
        counts[name] += 1
        try:
            call = make(rng, base)
        except Exception:  # the generator's own limits (e.g. json.dumps of a deep value)
            outcomes["skipped"] += 1
            continue
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, args.hang_s)
        try:
            call()
            outcomes["ok"] += 1
        except Hang:
            outcomes["hang"] += 1
            failures.append({"target": name, "case": str(i), "kind": "hang"})
        except expected:
            outcomes["clear error"] += 1
        except Exception as exc:  # the finding: an exception the user would see as a traceback
            outcomes["traceback"] += 1
            failures.append({"target": name, "case": str(i), "kind": type(exc).__name__,
                             "where": traceback.format_exc(limit=-2)[-600:]})  # fmt: skip
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        took = time.perf_counter() - t0
        if took > slowest[0]:
            slowest = (took, name)
    wall = time.perf_counter() - started
    report = {
        "command": " ".join(["python", "benchmarks/fuzz_inputs.py", *sys.argv[1:]]),
        "cases": args.cases, "seed": args.seed, "wall_s": round(wall, 1),
        "per_target": dict(counts), "outcomes": dict(outcomes),
        "tracebacks": outcomes["traceback"], "hangs": outcomes["hang"],
        "slowest_case_s": round(slowest[0], 3), "slowest_target": slowest[1],
        "failures": failures[:50],
    }  # fmt: skip
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 1 if report["tracebacks"] or report["hangs"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
