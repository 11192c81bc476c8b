"""Imports inside functions in core are of four kinds only (docs/architecture.md, "Imports
inside functions"): anything under core/cli (the start-up path); a heavy or optional
third-party package; a core module marked `# heavy: ...` because it would load such a package
into a module that does not load it otherwise; a core module marked `# cycle: ...` that imports
the importing module itself (the HSA transform registry loads its transform modules). The
standard library and the rest of core go at the top of the module, where a reader (and
lint-imports) sees them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY_OR_OPTIONAL = frozenset(
    {
        "openai", "matplotlib", "mcp", "mcp_types", "anyio", "httpx", "sqlalchemy", "alembic",
        "nltk", "punkt", "langdetect", "keyring", "pynvml", "psutil", "tokenizers", "jsonschema",
    }
)  # fmt: skip


PROBED = frozenset({"numpy", "regex", "rich"})
"""Not imported inside functions anywhere, but what a heavy mark may name besides."""


def _local_imports() -> list[tuple[str, int, str, str]]:
    """(file, line, imported module, the line's text) of every import inside a function."""
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("core/cli/") or "/migrations/" in rel:
            continue
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.append((rel, node.lineno, node.module, lines[node.lineno - 1]))
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        found.append((rel, node.lineno, alias.name, lines[node.lineno - 1]))
    return found


def test_imports_inside_functions_are_heavy_optional_or_marked() -> None:
    wrong = []
    for rel, line, module, text in _local_imports():
        top = module.split(".")[0]
        if top == "core":
            ok = "# heavy:" in text or "# cycle:" in text
        elif top in sys.stdlib_module_names:
            ok = False
        else:
            ok = top in HEAVY_OR_OPTIONAL
        if not ok:
            wrong.append(f"{rel}:{line} imports {module} inside a function")
    assert not wrong, "\n".join(wrong)


PROBE = """
import importlib, json, os, sys
heavy, out = sys.argv[1].split(","), {}
for mod in sys.argv[2:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # each module imported alone, in a fresh fork of a bare interpreter
        importlib.import_module(mod)
        os.write(write, json.dumps([h for h in heavy if h in sys.modules]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        out[mod] = json.loads(pipe.read() or "null")
    os.waitpid(pid, 0)
print(json.dumps(out))
"""


def test_every_heavy_mark_is_true() -> None:
    """A `# heavy: X, Y` import really loads X and Y, and the module holding it does not
    already load at least one of them (so the mark is not a habit). One bare interpreter
    forks once per module."""
    marks = [i for i in _local_imports() if i[2].startswith("core") and "# heavy:" in i[3]]
    assert marks
    owners = {rel: rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
              for rel, *_ in marks}  # fmt: skip
    modules = sorted({m for _, _, m, _ in marks} | set(owners.values()))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(sorted(HEAVY_OR_OPTIONAL | PROBED)), *modules],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    loads = json.loads(done.stdout)
    wrong = []
    for rel, line, module, text in marks:
        named = {p.strip() for p in text.split("# heavy:", 1)[1].split(",")}
        mine, theirs = set(loads[owners[rel]]), set(loads[module])
        if not (named <= theirs and named - mine == named):
            wrong.append(
                f"{rel}:{line}: {module} loads {sorted(theirs)}, the module {sorted(mine)}"
            )
    assert not wrong, "\n".join(wrong)


def test_the_transform_registry_fills_itself_in_a_fresh_process() -> None:
    """`transforms()` loads the transform modules itself (the `# cycle:` import): in a process
    that imported nothing else it still lists every dimension's transforms (hoisting that
    import once left the studio's variant preview with none)."""
    code = (
        "from core.hsa.transform import transforms; "
        "print(len(transforms()), len({t.dimension for t in transforms()}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    count, dimensions = map(int, out.stdout.split())
    assert count >= 20 and dimensions >= 5, out.stdout
