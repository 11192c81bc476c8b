"""Issue 19, items 1-8: what a harness folder can make the product do (read, write, fetch,
run, hang). Each test failed on the code before the fix."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from core.harness import HarnessError, Problem, export_folder, import_folder
from core.harness.demo import demo_harness_path, load_demo_harness
from core.harness.folder import harness_from_files, read_files
from core.harness.models import Hook, Tool
from core.harness.schema import argument_errors, check_json_schema
from core.runtime import Decision, HookInput, run_hook, run_python_hook


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    target = tmp_path / "live-host"
    shutil.copytree(demo_harness_path(), target)
    return target


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(HarnessError) as info:
        import_folder(path)
    return info.value.problems


# ----------------------------------------------------------------------------- 1. export


def test_export_refuses_a_symlinked_component_folder(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    out = tmp_path / "out"
    export_folder(load_demo_harness(), out)
    shutil.rmtree(out / "prompt")
    (out / "prompt").symlink_to(victim, target_is_directory=True)
    with pytest.raises(HarnessError) as info:
        export_folder(load_demo_harness(), out)
    assert any(
        p.file.endswith("prompt") and "symbolic link" in p.message for p in info.value.problems
    )
    assert sorted(os.listdir(victim)) == ["keep.txt"]
    assert (victim / "keep.txt").read_text() == "precious"


def test_export_never_writes_through_a_symlinked_file(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("not yours")
    out = tmp_path / "out"
    export_folder(load_demo_harness(), out)
    skill = out / "skills" / "chit-chat" / "SKILL.md"
    skill.unlink()
    skill.symlink_to(outside)
    with pytest.raises(HarnessError) as info:
        export_folder(load_demo_harness(), out)
    assert any("SKILL.md" in p.file and "symbolic link" in p.message for p in info.value.problems)
    assert outside.read_text() == "not yours"


@pytest.mark.parametrize("stray", ["tools/deploy.sh", "hooks/git/pre-commit", "prompt/x/y.md"])
def test_export_keeps_files_it_did_not_write(tmp_path: Path, stray: str) -> None:
    out = tmp_path / "out"
    export_folder(load_demo_harness(), out)
    (out / stray).parent.mkdir(parents=True, exist_ok=True)
    (out / stray).write_text("#!/bin/sh\n")
    with pytest.raises(HarnessError) as info:
        export_folder(load_demo_harness(), out)
    assert [p.file for p in info.value.problems] == [str(out / stray)]
    assert (out / stray).read_text() == "#!/bin/sh\n"


def test_export_refuses_a_non_empty_folder_that_is_no_harness(tmp_path: Path) -> None:
    out = tmp_path / "project"
    (out / "tools").mkdir(parents=True)
    (out / "tools" / "build.json").write_text("{}")
    with pytest.raises(HarnessError) as info:
        export_folder(load_demo_harness(), out)
    assert "harness.yaml" in str(info.value)
    assert os.listdir(out) == ["tools"]
    assert (out / "tools" / "build.json").read_text() == "{}"


def test_export_into_its_own_earlier_export_replaces_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    harness = load_demo_harness()
    export_folder(harness, out)
    (out / "README.md").write_text("top-level notes are left alone")
    (out / "skills" / ".DS_Store").write_text("hidden files too")
    smaller = harness.model_copy(update={"skills": harness.skills[:-1]})
    export_folder(smaller, out)
    assert not (out / "skills" / harness.skills[-1].name).exists()
    assert (out / "README.md").exists() and (out / "skills" / ".DS_Store").exists()
    assert import_folder(out) == smaller


# ----------------------------------------------------------------------------- 2. import


def test_import_refuses_a_symlink_to_a_file_outside(demo_copy: Path, tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0\n")
    persona = demo_copy / "prompt" / "persona.md"
    persona.unlink()
    persona.symlink_to(secret)
    problems = problems_of(demo_copy)
    assert [p.file for p in problems] == ["prompt/persona.md"]
    assert "symbolic link" in problems[0].message and str(secret) in problems[0].message


def test_import_names_symlinked_folders_dangling_links_and_fifos(
    demo_copy: Path, tmp_path: Path
) -> None:
    shutil.move(demo_copy / "skills" / "chit-chat", tmp_path / "chit-chat")
    (demo_copy / "skills" / "chit-chat").symlink_to(tmp_path / "chit-chat")
    (demo_copy / "tools" / "gone.json").symlink_to(tmp_path / "nowhere.json")
    os.mkfifo(demo_copy / "hooks" / "pipe.yaml")
    files = {p.file: p.message for p in problems_of(demo_copy)}
    assert set(files) == {"skills/chit-chat", "tools/gone.json", "hooks/pipe.yaml"}
    assert "FIFO" in files["hooks/pipe.yaml"]
    with pytest.raises(HarnessError):
        read_files(demo_copy)


def test_import_refuses_a_unix_socket(demo_copy: Path) -> None:
    path = demo_copy / "tools" / "s.json"
    if len(str(path)) > 100:
        pytest.skip("socket path too long for AF_UNIX")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        files = {p.file: p.message for p in problems_of(demo_copy)}
    finally:
        sock.close()
    assert "socket" in files["tools/s.json"]


# ----------------------------------------------------------------------------- 3. $ref


def _tool_with(parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": "t", "description": "d", "parameters": parameters},
        "x-hat": {"binding": "sim.check_stock"},
    }


@pytest.mark.parametrize(
    ("ref", "text"),
    [
        ("http://127.0.0.1:9/schema.json", "not a local reference"),
        ("https://example.invalid/s#/x", "not a local reference"),
        ("other.json", "not a local reference"),
        ("#/$defs/missing", "points at nothing"),
    ],
)
def test_tool_schema_refs_stay_local(demo_copy: Path, ref: str, text: str) -> None:
    params = {"type": "object", "properties": {"a": {"$ref": ref}}}
    (demo_copy / "tools" / "t.json").write_text(json.dumps(_tool_with(params)))
    problems = [p for p in problems_of(demo_copy) if p.file == "tools/t.json"]
    assert problems and problems[0].field.startswith("function.parameters")
    assert text in problems[0].message


@pytest.mark.parametrize(
    "params",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
        {"$ref": "#", "type": "object"},
        {
            "type": "object",
            "allOf": [{"$ref": "#/$defs/x"}],
            "$defs": {"x": {"anyOf": [{"$ref": "#/$defs/y"}]}, "y": {"not": {"$ref": "#/$defs/x"}}},
        },
    ],
)
def test_reference_cycles_that_never_end_are_refused(params: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="reference cycle"):
        check_json_schema(params)


def test_a_recursive_schema_that_descends_is_fine() -> None:
    tree = {
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
    }
    check_json_schema(tree)
    assert argument_errors(tree, {"kids": [{"kids": []}, {"kids": "x"}]}) == [
        "kids.1.kids: 'x' is not of type 'array'"
    ]


def test_argument_errors_never_fetch_or_raise() -> None:
    """A schema that skipped the checks (built in code) still fetches nothing and never raises
    out of the agent loop: a local HTTP server would see a request if it were fetched."""
    hits: list[str] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(3)

    def serve() -> None:
        try:
            conn, _ = server.accept()
            hits.append(conn.recv(1000).decode("latin-1"))
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    remote = {"type": "object", "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/s"}}}
    looping = {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}
    assert argument_errors(remote, {"a": 1})[0].startswith("the tool's schema could not be applied")
    assert argument_errors(looping, {"a": 1}) == [
        "the tool's schema could not be applied: it recurses without end"
    ]
    server.close()
    thread.join(5)
    assert hits == []


# ----------------------------------------------------------------------------- 4. python hooks


def test_python_hook_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-secret")
    monkeypatch.setenv("HAT_HOOK_LEVEL", "3")
    source = (
        "import os\n"
        "def check(event):\n"
        "    leaked = sorted(k for k in os.environ if 'SECRET' in os.environ[k].upper()\n"
        "                    or k in ('OPENAI_API_KEY', 'HF_TOKEN'))\n"
        "    return {'decision': 'allow', 'reason': ','.join(leaked) + '|' +\n"
        "            os.environ.get('HAT_HOOK_LEVEL', '')}\n"
    )
    hook = Hook(name="py", event="before_reply", kind="python", source=source)
    result = asyncio.run(run_python_hook(hook, {"reply": "hi"}))
    assert result.decision is Decision.ALLOW
    assert result.reason == "|3"


def _gone(pid: int, within_s: float = 5.0) -> bool:
    import psutil

    end = time.monotonic() + within_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


_ESCAPER = """
import os, time
def check(event):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if {double}:
            if os.fork():
                os._exit(0)
        with open({path!r}, "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(120)
        os._exit(0)
    end = time.time() + 5
    while not os.path.exists({path!r}) and time.time() < end:
        time.sleep(0.01)
    time.sleep(0.05)
    if {hang}:
        time.sleep(120)
    return {{"decision": "allow"}}
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
@pytest.mark.parametrize(("hang", "double"), [(True, False), (True, True), (False, True)])
def test_python_hook_leaves_no_process_behind(tmp_path: Path, hang: bool, double: bool) -> None:
    """A hook's grandchild that calls setsid (leaving the process group the old kill used), or
    double-forks, dies with the hook: on a timeout, and when the hook returns."""
    pid_file = tmp_path / "pid"
    source = _ESCAPER.format(path=str(pid_file), hang=hang, double=double)
    hook = Hook(
        name="py", event="before_reply", kind="python", source=source, timeout=3.0 if hang else 10
    )
    result = asyncio.run(run_python_hook(hook, {"reply": "hi"}))
    pid = int(pid_file.read_text())
    try:
        assert (result.decision is Decision.ERROR) == hang, result
        assert _gone(pid), f"the hook's grandchild {pid} is still running"
    finally:
        if not _gone(pid, 0):
            os.kill(pid, 9)


# ----------------------------------------------------------------------------- 5. regex time


def _reply_hook(kind: str, params: dict[str, Any], timeout: float = 0.5) -> Hook:
    return Hook(name="h", event="before_reply", kind=kind, params=params, timeout=timeout)


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("forbidden_claims", {"patterns": ["(a|aa)+$"]}),
        ("reply_format", {"forbid_patterns": ["(a|aa)+$"]}),
        ("fact_check", {"number_pattern": "(a|aa)+$"}),
    ],
)
def test_declarative_patterns_obey_the_hook_timeout(kind: str, params: dict[str, Any]) -> None:
    harness = load_demo_harness()
    hook = _reply_hook(kind, params)
    data = HookInput(
        event=hook.event, request_id="r", viewer_message="a" * 40 + "b", reply="a" * 40 + "b"
    )
    start = time.monotonic()
    result = asyncio.run(run_hook(hook, data, harness))
    assert time.monotonic() - start < 3.0
    assert result.decision is Decision.ERROR
    assert "timed out" in result.reason and "limit" in result.reason


def test_a_backtracking_matcher_is_an_import_problem(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "slow.yaml").write_text(
        "event: before_tool\nkind: validate_tool_args\nmatcher: '(a|aa)+$'\nparams: {}\n"
    )
    names = json.loads((demo_copy / "tools" / "check_stock.json").read_text())
    tool = {**names, "function": {**names["function"], "name": "a" * 40 + "b"}}
    (demo_copy / "tools" / f"{'a' * 40}b.json").write_text(json.dumps(tool))
    start = time.monotonic()
    problems = problems_of(demo_copy)
    assert time.monotonic() - start < 10
    slow = [p for p in problems if p.file == "hooks/slow.yaml"]
    assert slow and slow[0].field == "matcher" and "limit" in slow[0].message


# ----------------------------------------------------------------------------- 7. deep input


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize("depth", [120, 400, 5000])
def test_deep_tool_schema_is_a_problem_not_a_traceback(demo_copy: Path, depth: int) -> None:
    inner = '{"type": "object", "properties": {"a": ' * depth + "{}" + "}}" * depth
    text = json.dumps(_tool_with({"type": "object"})).replace('{"type": "object"}', inner)
    (demo_copy / "tools" / "t.json").write_text(text)
    problems = [p for p in problems_of(demo_copy) if p.file == "tools/t.json"]
    assert problems and "deep" in problems[0].message


def test_yaml_alias_bomb_in_hook_params_is_a_problem(demo_copy: Path) -> None:
    lines = [
        "event: before_reply",
        "kind: python",
        "params:",
        "  a0: &a0 [x, x, x, x, x, x, x, x, x]",
    ]
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"  a{i}: &a{i} [{', '.join([prev] * 9)}]")
    (demo_copy / "hooks" / "bomb.yaml").write_text("\n".join(lines) + "\n")
    (demo_copy / "hooks" / "bomb.py").write_text("def check(event):\n    return {}\n")
    problems = [p for p in problems_of(demo_copy) if p.file == "hooks/bomb.yaml"]
    assert problems and "expands to more than" in problems[0].message


def test_self_referencing_yaml_is_a_problem(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "loop.yaml").write_text(
        "event: before_reply\nkind: python\nparams: &p {self: *p}\n"
    )
    (demo_copy / "hooks" / "loop.py").write_text("def check(event):\n    return {}\n")
    problems = [p for p in problems_of(demo_copy) if p.file == "hooks/loop.yaml"]
    assert problems and ("deep" in problems[0].message or "YAML" in problems[0].message)


# ----------------------------------------------------------------------------- 8. one set of checks


@pytest.mark.parametrize("literal", ["1e309", "-1e400"])
def test_out_of_range_json_number_fails_validate_like_import(demo_copy: Path, literal: str) -> None:
    text = json.dumps(
        _tool_with({"type": "object", "properties": {"n": {"type": "number", "maximum": 5}}})
    )
    (demo_copy / "tools" / "t.json").write_text(
        text.replace('"maximum": 5', f'"maximum": {literal}')
    )
    problems = [p for p in problems_of(demo_copy) if p.file == "tools/t.json"]
    assert problems and "out of range" in problems[0].message


def test_non_finite_yaml_number_is_a_problem(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "inf.yaml").write_text(
        "event: before_reply\nkind: fact_check\nparams: {ignore_below: .inf}\n"
    )
    problems = [p for p in problems_of(demo_copy) if p.file == "hooks/inf.yaml"]
    assert problems and "not a finite number" in problems[0].message


def test_whatever_validate_accepts_the_store_keeps(demo_copy: Path, tmp_path: Path) -> None:
    from core.store import Store

    harness = import_folder(demo_copy)
    with Store.open(tmp_path / "hat.db") as store:
        info = store.commit(harness, "m")
        assert store.load(info.id) == harness


def test_tool_models_refuse_remote_refs_too() -> None:
    with pytest.raises(ValueError, match="not a local reference"):
        Tool(
            name="t",
            binding="b",
            parameters={"type": "object", "properties": {"a": {"$ref": "http://x/y"}}},
        )


def test_files_in_memory_get_the_same_checks() -> None:
    files = {
        k: v.encode()
        for k, v in __import__("core.harness", fromlist=["folder_files"])
        .folder_files(load_demo_harness())
        .items()
    }
    files["tools/t.json"] = json.dumps(_tool_with(_nested(200))).encode()
    with pytest.raises(HarnessError, match="deep"):
        harness_from_files(files)


def test_graders_and_oracle_bound_the_harness_patterns_too() -> None:
    """Item 5's class beyond the hooks: the simulator's graders and the oracle read the same
    forbidden-claim patterns. Before, they compiled them with plain `re`, and a backtracking
    pattern held grading (and oracle data generation) for as long as it took: minutes here."""
    from core.episode.live_room import LiveRoomWorld
    from core.episode.play import play
    from core.sim.catalog import load_catalog
    from core.sim.conversation import Conversation
    from core.sim.graders import grade
    from core.sim.models import Split
    from core.sim.oracle import OracleClient
    from core.sim.reply import Composer
    from core.sim.tasks import generate_tasks

    catalog = load_catalog()
    task = generate_tasks(Split.TRAIN, per_category=1)[0]
    harness = load_demo_harness()
    played = asyncio.run(
        play(task, harness, OracleClient(task, harness, catalog), LiveRoomWorld(catalog))
    )
    assert played.trace.ok

    slow = _reply_hook("forbidden_claims", {"patterns": ["(a|aa)+$"]})
    live = harness.model_copy(update={"hooks": [*harness.hooks, slow]})
    bad_reply = played.trace.model_copy(update={"final_reply": "a" * 40 + "b"})
    start = time.monotonic()
    grades = grade(task, bad_reply, live, catalog)
    oracle = OracleClient(task, live, catalog)
    conv = Conversation(task.viewer_message)
    composer = Composer(conv, catalog, oracle.plan, oracle.limits, oracle.surface)
    allowed = composer.allowed("a" * 40 + "b")
    assert time.monotonic() - start < 10.0
    assert grades.accuracy.score == 0
    assert any("not checked" in r and "limit" in r for r in grades.accuracy.reasons)
    assert not allowed
