"""#36 item 4: one way to get a model server (`core.serving.launch.server_for`).

* no module of core constructs `ManagedServer` but core/serving/launch.py (an import under
  another name counts too), so nothing starts a server around the registry and engine rules;
* the replication gets each model's server from `server_for` with the options it always had
  (the profile's dtype, float32 by default, or the caller's; prefix caching and items in
  flight on vLLM; the recorded folder under its own path as the model id);
* a server that died during a suite is started again through `launch.revive` and the suite
  resumed on its new address.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from core.experiment.profiles import load_profile
from core.serving.engines import EngineConfig

CORE = Path(__file__).resolve().parents[1] / "core"
LAUNCH = CORE / "serving" / "launch.py"


def _constructions(path: Path) -> list[int]:
    """Lines of `path` that call ManagedServer (under any name it was imported as)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {"ManagedServer"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname for a in node.names if a.name == "ManagedServer" and a.asname}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called in names:
                lines.append(node.lineno)
    return lines


def test_only_launch_constructs_a_managed_server_in_core() -> None:
    found = {
        str(path.relative_to(CORE.parent)): lines
        for path in sorted(CORE.rglob("*.py"))
        if path != LAUNCH and (lines := _constructions(path))
    }
    assert found == {}, f"servers built around core.serving.launch.server_for: {found}"
    assert _constructions(LAUNCH)  # the check sees the one place that does


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str = "vllm") -> Any:
    from core.experiment.replicate import Replication

    monkeypatch.setattr("core.serving.engines.pick_engine", lambda requested: (engine, None))
    run = Replication.create(None, load_profile("ci"), tmp_path / "run")  # type: ignore[arg-type]
    run.step("setup").update(base_model="base", base_location=str(tmp_path / "base"))
    return run


@pytest.mark.parametrize("engine", ["vllm", "transformers"])
def test_the_replication_gets_its_servers_from_server_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    calls: list[tuple[EngineConfig, str, dict[str, Any]]] = []

    def server_for(store: Any, config: EngineConfig, model: str, **options: Any) -> str:
        calls.append((config, model, options))
        return "the server"

    monkeypatch.setattr("core.serving.launch.server_for", server_for)
    run = _run(tmp_path, monkeypatch, engine)
    logs = tmp_path / "logs"
    assert run.model_server("base", log_dir=logs) == "the server"
    assert run.model_server("base", dtype="bfloat16", concurrency=2) == "the server"
    (config, model, options), (other, _, _) = calls
    vllm = engine == "vllm"
    assert model == str(tmp_path / "base") and options["by_location"] is True
    assert options["startup_timeout_s"] == 900 and options["log_dir"] == logs
    assert config.engine == engine and config.dtype == "float32"  # the profile's default
    assert config.extra_args == (["--enable-prefix-caching"] if vllm else [])
    assert config.max_num_seqs == (run.profile.eval.concurrency if vllm else None)
    assert other.dtype == "bfloat16" and other.max_num_seqs == (2 if vllm else None)


def test_the_served_folder_is_its_own_model_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the replication's stored requests name: the folder, as before server_for served it."""
    from core.models import RegistryError
    from core.serving.engines import build_launch

    monkeypatch.setattr("core.serving.engines.has_gpu", lambda: False)
    run = _run(tmp_path, monkeypatch)
    server = run.model_server("base")
    spec = build_launch(server.config, server.model, port=1, served_name=server.served_name)
    assert server.model == spec.model_id == str(tmp_path / "base")
    assert "--enable-prefix-caching" in spec.argv and spec.argv[spec.argv.index("--dtype") + 1] == (
        "float32"
    )
    from core.serving.launch import server_for

    with pytest.raises(RegistryError, match="registered base"):
        server_for(None, EngineConfig("vllm"), "/a/folder", adapter="x", by_location=True)  # type: ignore[arg-type]


class _Server:
    """A server that died during the first suite: `revive` restarts it on a new port."""

    def __init__(self) -> None:
        self.base_url = "http://127.0.0.1:1/v1"
        self.alive = False
        self.restarts = 0

    def restart(self) -> _Server:
        self.restarts += 1
        self.alive = True
        self.base_url = "http://127.0.0.1:2/v1"
        return self


def test_a_server_that_died_during_a_suite_is_revived_and_the_suite_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.eval.api import RunStatus

    class Run:
        id = "eval-1"
        status = RunStatus.DONE

    resumed: list[str] = []

    def resume_eval(store: Any, run_id: str, *, base_url: str, **_: Any) -> Run:
        resumed.append(base_url)
        return Run()

    monkeypatch.setattr("core.eval.api.run_eval", lambda *a, **k: Run())
    monkeypatch.setattr("core.eval.api.resume_eval", resume_eval)
    monkeypatch.setattr("core.experiment.replicate._unfinished_run", lambda store, request: None)
    run = _run(tmp_path, monkeypatch)
    server = _Server()
    entry: dict[str, Any] = {"runs": {}, "walls": {}}
    said: list[str] = []
    status = run._run_part("base", "ls-qa", object(), entry, server, said.append)
    assert status is RunStatus.DONE and server.restarts == 1
    assert resumed == ["http://127.0.0.1:2/v1"] and entry["runs"] == {"ls-qa": "eval-1"}
    assert any("died during the suite" in line for line in said)
    # a server still up is left alone
    assert run._run_part("base", "ls-qa", object(), entry, server, said.append) is RunStatus.DONE
    assert server.restarts == 1
