"""Table definitions (SQLAlchemy 2 typed declarative).

Every schema change ships as an alembic migration in ``core/store/migrations/versions``; these
classes describe the schema at head and tests check that the two agree. Later features (runs,
metrics, evals, chats, models) add their classes here, or in their own module deriving from
``Base``, together with a new migration.

Harness versions are stored like git objects, content-addressed by sha256:

* ``harness_blobs``: the canonical text of one component file (``core.harness.folder_files``),
  keyed by the sha256 of that text. Stored in full, or as a delta (``core.store.delta``) against
  the previous blob of the same path, with the chain of deltas bounded (``depth``).
* ``harness_trees``: one row per distinct {path: blob} map, keyed by its tree hash. Its entries
  are either a full snapshot (``base_pk`` NULL) or the changes against the parent version's tree
  (``blob_pk`` NULL = path removed), again with a bounded chain.
* ``harness_versions``: an immutable commit: tree, parent, message, time; its id is the sha256
  of those, so a rollback (same tree, new parent) is a new version.
* ``harness_labels``: movable names (``production``, ``staging``) per harness name.
* ``trusted_hook_sources``: sha256 of Python hook sources the user has trusted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, ForeignKey, Index, LargeBinary, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from core.store.types import UTCDateTime

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        bytes: LargeBinary(),
    }


class HarnessPath(Base):
    """Interned component paths, so tree entries hold small integers."""

    __tablename__ = "harness_paths"

    pk: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(Text, unique=True)


class HarnessBlob(Base):
    __tablename__ = "harness_blobs"

    pk: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    base_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_blobs.pk"))
    depth: Mapped[int] = mapped_column(default=0)
    size: Mapped[int]
    data: Mapped[bytes]


class HarnessTree(Base):
    __tablename__ = "harness_trees"

    pk: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    base_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_trees.pk"))
    depth: Mapped[int] = mapped_column(default=0)
    size: Mapped[int]  # number of paths in the full tree


class HarnessTreeEntry(Base):
    __tablename__ = "harness_tree_entries"
    __table_args__ = ({"sqlite_with_rowid": False},)

    tree_pk: Mapped[int] = mapped_column(ForeignKey("harness_trees.pk"), primary_key=True)
    path_pk: Mapped[int] = mapped_column(ForeignKey("harness_paths.pk"), primary_key=True)
    blob_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_blobs.pk"))


class HarnessVersion(Base):
    __tablename__ = "harness_versions"
    __table_args__ = (Index("ix_harness_versions_name_pk", "harness_name", "pk"),)

    pk: Mapped[int] = mapped_column(primary_key=True)  # insertion order: "newest" = highest
    id: Mapped[str] = mapped_column(String(64), unique=True)
    harness_name: Mapped[str] = mapped_column(Text)
    parent_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_versions.pk"))
    tree_pk: Mapped[int] = mapped_column(ForeignKey("harness_trees.pk"))
    message: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class HarnessLabel(Base):
    __tablename__ = "harness_labels"

    harness_name: Mapped[str] = mapped_column(Text, primary_key=True)
    label: Mapped[str] = mapped_column(Text, primary_key=True)
    version_pk: Mapped[int] = mapped_column(ForeignKey("harness_versions.pk"), index=True)
    updated_at: Mapped[datetime]


class TrustedHookSource(Base):
    __tablename__ = "trusted_hook_sources"
    __table_args__ = ({"sqlite_with_rowid": False},)

    hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    created_at: Mapped[datetime]


# ----------------------------------------------------------------------------- models, latency
#
# * ``models``: the model registry (``core.models``): base models (a local folder, a hub id, a
#   GGUF imported into a folder under the home folder) and, registered by training runs,
#   adapters and merged models with their base. ``managed`` folders live under
#   ``core.paths.models_dir()`` and are deleted with the entry.
# * ``latency_requests``: one agent request (a chat message, a benchmark request): end to end
#   from viewer message to final reply, counts from its Trace, which server and model answered.
# * ``latency_calls``: the model calls of a request, in order, with the client's timings.


class ModelEntry(Base):
    __tablename__ = "models"

    pk: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text, unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # base | adapter | merged
    source: Mapped[str] = mapped_column(String(16))  # folder | hub | gguf | demo | training
    location: Mapped[str] = mapped_column(Text)  # folder path, or hub id for source=hub
    revision: Mapped[str | None] = mapped_column(Text)
    managed: Mapped[bool] = mapped_column(default=False)
    base_pk: Mapped[int | None] = mapped_column(ForeignKey("models.pk"), index=True)
    architecture: Mapped[str | None] = mapped_column(Text)
    parameters: Mapped[int | None]
    weight_bytes: Mapped[int | None]
    dtype: Mapped[str | None] = mapped_column(String(16))
    meta: Mapped[str] = mapped_column(Text, default="{}")  # JSON object
    created_at: Mapped[datetime]


class LatencyRequest(Base):
    __tablename__ = "latency_requests"
    __table_args__ = (Index("ix_latency_requests_session_pk", "session", "pk"),)

    pk: Mapped[int] = mapped_column(primary_key=True)
    request_id: Mapped[str] = mapped_column(String(64), unique=True)
    session: Mapped[str] = mapped_column(Text)  # a chat session or a benchmark run
    source: Mapped[str] = mapped_column(String(16))  # chat | bench | eval
    engine: Mapped[str | None] = mapped_column(String(32))
    model: Mapped[str | None] = mapped_column(Text)
    harness: Mapped[str | None] = mapped_column(Text)
    task_id: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(32))
    warmup: Mapped[bool] = mapped_column(default=False)
    e2e_s: Mapped[float]
    model_calls: Mapped[int]
    tool_calls: Mapped[int]
    hook_retries: Mapped[int]
    hook_blocks: Mapped[int]
    viewer_message: Mapped[str] = mapped_column(Text)
    final_reply: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime]


class LatencyCall(Base):
    __tablename__ = "latency_calls"
    __table_args__ = ({"sqlite_with_rowid": False},)

    request_pk: Mapped[int] = mapped_column(
        ForeignKey("latency_requests.pk", ondelete="CASCADE"), primary_key=True
    )
    idx: Mapped[int] = mapped_column(primary_key=True)
    ttft_s: Mapped[float | None]
    tpot_s: Mapped[float | None]
    e2e_s: Mapped[float]
    prompt_tokens: Mapped[int | None]
    output_tokens: Mapped[int | None]
    token_source: Mapped[str | None] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)


# ----------------------------------------------------------------------------- training runs
#
# * ``train_runs``: one training stage run (sft | opd | rl) or a pipeline (stage = pipeline,
#   its stages point at it through ``parent_pk``): the frozen config, what it was built from
#   (harness version, dataset hash, package versions, code revision), where it lives
#   (``run_dir``), the child's command, pid and exit code, its status and the reason of a
#   failure, and its outputs (JSON: adapter / merged folders, registered model names).
# * ``train_events``: the run's JSONL event stream (core/train/events.py) copied into the
#   store; ``superseded`` marks log lines a resume replaced.
# * ``train_checkpoints``: checkpoints the run wrote, by step.


class TrainRun(Base):
    __tablename__ = "train_runs"

    pk: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    stage: Mapped[str] = mapped_column(String(16))
    parent_pk: Mapped[int | None] = mapped_column(ForeignKey("train_runs.pk"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    config: Mapped[str] = mapped_column(Text)
    harness_version: Mapped[str | None] = mapped_column(Text)
    dataset_hash: Mapped[str | None] = mapped_column(String(64))
    packages: Mapped[str] = mapped_column(Text, default="{}")
    code_revision: Mapped[str | None] = mapped_column(Text)
    run_dir: Mapped[str] = mapped_column(Text)
    command: Mapped[str | None] = mapped_column(Text)
    pid: Mapped[int | None]
    exit_code: Mapped[int | None]
    step: Mapped[int] = mapped_column(default=0)
    total_steps: Mapped[int | None]
    events_offset: Mapped[int] = mapped_column(default=0)
    outputs: Mapped[str] = mapped_column(Text, default="{}")
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]


class TrainEvent(Base):
    __tablename__ = "train_events"
    __table_args__ = ({"sqlite_with_rowid": False},)

    run_pk: Mapped[int] = mapped_column(
        ForeignKey("train_runs.pk", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(primary_key=True)
    time: Mapped[float]
    kind: Mapped[str] = mapped_column(String(16))
    step: Mapped[int | None]
    data: Mapped[str] = mapped_column(Text)
    superseded: Mapped[bool] = mapped_column(default=False)


class TrainCheckpoint(Base):
    __tablename__ = "train_checkpoints"
    __table_args__ = ({"sqlite_with_rowid": False},)

    run_pk: Mapped[int] = mapped_column(
        ForeignKey("train_runs.pk", ondelete="CASCADE"), primary_key=True
    )
    step: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


# ----------------------------------------------------------------------------- evaluation
#
# * ``eval_runs``: one evaluation run (``core.eval``): the frozen request (JSON), the model,
#   adapter and stored harness version it ran, the request's fingerprint (what makes two runs'
#   rows comparable item by item; the harness-change gate reuses runs by it), how many items
#   it planned, its status and the reason of a failure.
# * ``eval_results``: one row per scored item (``core.eval.results.EvalResult``), unique per
#   run by ``item_key`` (suite, task, variant seed, sample), with the grades as JSON and the
#   agent trace (zlib-compressed JSON) for the pages that show why an item failed.


class EvalRunRow(Base):
    __tablename__ = "eval_runs"
    __table_args__ = (
        Index("ix_eval_runs_model_fingerprint", "model", "fingerprint", "harness_version"),
    )

    pk: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    fingerprint: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(Text)
    adapter: Mapped[str | None] = mapped_column(Text)
    harness: Mapped[str] = mapped_column(Text)
    harness_version: Mapped[str | None] = mapped_column(String(64))
    total: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class EvalResultRow(Base):
    __tablename__ = "eval_results"
    __table_args__ = (
        Index("ix_eval_results_run_pk_item_key", "run_pk", "item_key", unique=True),
        Index("ix_eval_results_run_pk_suite", "run_pk", "suite"),
    )

    pk: Mapped[int] = mapped_column(primary_key=True)
    run_pk: Mapped[int] = mapped_column(ForeignKey("eval_runs.pk", ondelete="CASCADE"))
    item_key: Mapped[str] = mapped_column(Text)
    suite: Mapped[str] = mapped_column(String(16))
    task_id: Mapped[str] = mapped_column(Text)
    sample: Mapped[int] = mapped_column(default=0)
    variant_seed: Mapped[int | None]
    dimension: Mapped[str | None] = mapped_column(String(32))
    category: Mapped[str | None] = mapped_column(String(32))
    score: Mapped[float]
    passed: Mapped[bool]
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    trace_id: Mapped[str | None] = mapped_column(String(64))
    latency_s: Mapped[float | None]
    grades: Mapped[dict[str, Any]] = mapped_column(JSON)
    trace: Mapped[bytes | None]
    created_at: Mapped[datetime]


# ----------------------------------------------------------------------------- live models
#
# * ``live_models``: what each model server answers with, as promotions changed it
#   (``core.serving.promote``): one row per change, newest last; a server's newest row is what
#   is live there. ``server`` is the server's OpenAI base URL; ``model`` the registered name
#   of what answers (an adapter's, or the base's own), ``adapter`` the promoted adapter (None:
#   the base itself), ``served_name`` the model id requests name, ``run`` the training run the
#   adapter came from; ``action`` says how it became live (serving: what the server served
#   before the first promotion; promote; rollback), and ``previous_pk`` the row a rollback
#   from this one returns to.


class LiveModel(Base):
    __tablename__ = "live_models"
    __table_args__ = (Index("ix_live_models_server_pk", "server", "pk"),)

    pk: Mapped[int] = mapped_column(primary_key=True)
    server: Mapped[str] = mapped_column(Text)
    engine: Mapped[str | None] = mapped_column(String(32))
    base_model: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(Text)
    adapter: Mapped[str | None] = mapped_column(Text)
    served_name: Mapped[str] = mapped_column(Text)
    run: Mapped[str | None] = mapped_column(Text)
    action: Mapped[str] = mapped_column(String(16))
    previous_pk: Mapped[int | None] = mapped_column(ForeignKey("live_models.pk"))
    note: Mapped[str | None] = mapped_column(Text)
    since: Mapped[datetime]
