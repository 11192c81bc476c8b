"""core.store: versioned harness storage on real SQLite files (no mocks of the database)."""

from __future__ import annotations

import itertools
import random
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text

from core.harness import (
    Harness,
    Hook,
    HookEvent,
    HookKind,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Skill,
    SkillKind,
    Tool,
    folder_files,
)
from core.store import ComponentDiff, Store, StoreError, VersionInfo
from core.store import delta as delta_codec
from core.store import harness_versions as hv
from core.store.objects import Tuning
from core.store.tables import (
    Base,
    HarnessBlob,
    HarnessPath,
    HarnessTree,
    HarnessTreeEntry,
    HarnessVersion,
)

PY_HOOK = "def check(event):\n    return {'decision': 'allow'}\n"

# ----------------------------------------------------------------------------- builders


def skill(i: int, body: str | None = None, kind: SkillKind = SkillKind.REPLY) -> Skill:
    return Skill(
        name=f"skill-{i}",
        description=f"Answers questions of type {i}.",
        body=body if body is not None else f"# Skill {i}\n\nStep one.\nStep two for {i}.\n",
        kind=kind,
    )


def tool(i: int, description: str | None = None) -> Tool:
    return Tool(
        name=f"tool_{i}",
        description=description or f"Looks up thing {i}.",
        parameters={
            "type": "object",
            "properties": {"id": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["id"],
        },
        binding=f"sim.tool_{i}",
    )


def make_harness(
    name: str = "demo",
    skills: int = 3,
    tools: int = 2,
    *,
    python_hook: str | None = None,
    trusted: bool = True,
) -> Harness:
    hooks = [
        Hook(name="need-skill", event=HookEvent.BEFORE_REPLY, kind=HookKind.REQUIRE_REPLY_SKILL)
    ]
    if python_hook is not None:
        hooks.append(
            Hook(
                name="custom",
                event=HookEvent.BEFORE_REPLY,
                kind=HookKind.PYTHON,
                source=python_hook,
                trusted=trusted,
            )
        )
    return Harness(
        name=name,
        description=f"{name} harness",
        prompt=PromptPipeline(
            variables={"host": "Mia"},
            sections=[
                PromptSection(id="persona", title="Persona", template="You are ${host}.\n"),
                PromptSection(id="skills", title="Skills", kind=SectionKind.SKILL_INDEX),
                PromptSection(id="tools", title="Tools", kind=SectionKind.TOOL_BLOCK),
            ],
        ),
        skills=[skill(i) for i in range(skills)],
        tools=[tool(i) for i in range(tools)],
        hooks=hooks,
    )


def with_body(harness: Harness, index: int, body: str) -> Harness:
    skills = list(harness.skills)
    skills[index] = skills[index].model_copy(update={"body": body})
    return harness.model_copy(update={"skills": skills})


def count(store: Store, table: type[Base]) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def counts(store: Store) -> dict[str, int]:
    tables = (HarnessBlob, HarnessTree, HarnessTreeEntry, HarnessPath, HarnessVersion)
    return {t.__tablename__: count(store, t) for t in tables}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store.open(tmp_path / "hat.db", busy_timeout=0.2) as s:
        yield s


# ----------------------------------------------------------------------------- basics


def test_commit_and_load_round_trip(store: Store) -> None:
    harness = make_harness()
    info = store.commit(harness, "first")
    assert isinstance(info, VersionInfo)
    assert len(info.id) == 64 and len(info.tree_hash) == 64
    assert info.parent_id is None
    assert info.harness_name == "demo" and info.message == "first"
    assert info.created_at.tzinfo is not None and info.labels == ()
    assert store.load(info.id) == harness
    assert store.files(info.id) == folder_files(harness)
    # a fresh object each time: changing it does not change the stored version
    loaded = store.load(info.id)
    loaded.skills[0].body = "changed"
    assert store.load(info.id) == harness


def test_version_id_hashes_tree_parent_message_and_time(store: Store) -> None:
    h = make_harness()
    v1 = store.commit(h, "one")
    v2 = store.commit(with_body(h, 0, "x\n"), "two")
    for v in (v1, v2):
        assert v.id == hv.version_id(
            bytes.fromhex(v.tree_hash), v.parent_id, v.message, v.created_at
        )
    assert store.info(v2.id[:7]) == v2
    assert store.info("head", "demo") == v2


def test_parent_head_log_and_names(store: Store) -> None:
    h = make_harness()
    v1 = store.commit(h, "one")
    v2 = store.commit(with_body(h, 0, "two\n"), "two")
    other = store.commit(make_harness("other"), "other one")
    root = store.commit(with_body(h, 1, "root\n"), "a new root", parent=None)
    v3 = store.commit(with_body(h, 0, "three\n"), "three", parent=v1.id[:8])
    assert v2.parent_id == v1.id and other.parent_id is None and root.parent_id is None
    assert v3.parent_id == v1.id
    assert [v.id for v in store.log("demo")] == [v3.id, root.id, v2.id, v1.id]
    assert [v.id for v in store.log("demo", limit=2)] == [v3.id, root.id]
    assert [v.id for v in store.log()][:2] == [v3.id, root.id]
    assert len(store.log()) == 5
    assert store.harness_names() == ["demo", "other"]
    assert store.resolve("head", "demo") == v3.id
    assert store.resolve("other@head") == other.id
    with pytest.raises(StoreError, match="ambiguous"):
        store.resolve("head")
    with pytest.raises(StoreError):
        store.log(limit=-1)


def test_only_changed_component_is_stored(store: Store) -> None:
    h = make_harness(skills=5, tools=3)
    store.commit(h, "v1")
    before = counts(store)
    v2 = store.commit(with_body(h, 2, "# Skill 2\n\nA new step.\n"), "edit one skill")
    after = counts(store)
    assert after["harness_blobs"] == before["harness_blobs"] + 1
    assert after["harness_trees"] == before["harness_trees"] + 1
    assert after["harness_tree_entries"] == before["harness_tree_entries"] + 1  # a delta tree
    # the same content again: no blob, no tree, only a version row
    store.commit(with_body(h, 2, "# Skill 2\n\nA new step.\n"), "same again")
    again = counts(store)
    assert again["harness_blobs"] == after["harness_blobs"]
    assert again["harness_trees"] == after["harness_trees"]
    assert again["harness_versions"] == after["harness_versions"] + 1
    # reverting the skill reuses the old blob
    store.commit(h, "revert")
    assert count(store, HarnessBlob) == after["harness_blobs"]
    assert store.load(v2.id).skills[2].body == "# Skill 2\n\nA new step.\n"


def test_small_edit_is_stored_as_a_delta(store: Store) -> None:
    long_body = "".join(
        f"Line {i}: answer the viewer politely and check stock.\n" for i in range(60)
    )
    h = with_body(make_harness(), 0, long_body)
    store.commit(h, "long")
    edited = long_body.replace("Line 30: answer", "Line 30: always answer")
    store.commit(with_body(h, 0, edited), "small edit")
    with store.engine.connect() as conn:
        newest = conn.execute(
            select(HarnessBlob.base_pk, HarnessBlob.size, func.length(HarnessBlob.data))
            .order_by(HarnessBlob.pk.desc())
            .limit(1)
        ).one()
    base_pk, size, stored = newest
    assert base_pk is not None and size > 3000 and stored < 100
    assert store.load("head", "demo").skills[0].body == edited


def test_diff_per_component(store: Store) -> None:
    h = make_harness(python_hook=PY_HOOK)
    a = store.commit(h, "a")
    changed = with_body(h, 0, "# Skill 0\n\nStep one.\nStep 2, rewritten.\n")
    changed = changed.model_copy(
        update={
            "description": "new description",
            "tools": [*changed.tools[1:], tool(7)],
            "hooks": changed.hooks[:1],
        }
    )
    b = store.commit(changed, "b")
    diffs = store.diff(a.id, b.id, renames=False)
    assert all(isinstance(d, ComponentDiff) for d in diffs)
    assert [d.path for d in diffs] == sorted(d.path for d in diffs)
    by_path = {d.path: d for d in diffs}
    assert set(by_path) == {
        "harness.yaml",
        "hooks/custom.py",
        "hooks/custom.yaml",
        "skills/skill-0/SKILL.md",
        "tools/tool_0.json",
        "tools/tool_7.json",
    }
    sk = by_path["skills/skill-0/SKILL.md"]
    assert (sk.component, sk.name, sk.change) == ("skill", "skill-0", "modified")
    assert "-Step two for 0.\n" in sk.unified and "+Step 2, rewritten.\n" in sk.unified
    assert sk.unified.startswith("--- a/skills/skill-0/SKILL.md\n+++ b/skills/skill-0/SKILL.md\n")
    assert sk.old_text == folder_files(h)["skills/skill-0/SKILL.md"]
    assert sk.new_text == folder_files(changed)["skills/skill-0/SKILL.md"]
    removed = by_path["tools/tool_0.json"]
    assert (removed.component, removed.name, removed.change) == ("tool", "tool_0", "removed")
    assert removed.new_text is None and "+++ /dev/null" in removed.unified
    added = by_path["tools/tool_7.json"]
    assert added.change == "added" and added.old_text is None
    assert "--- /dev/null" in added.unified
    assert (by_path["hooks/custom.py"].component, by_path["hooks/custom.py"].name) == (
        "hook",
        "custom",
    )
    assert by_path["harness.yaml"].component == "manifest"
    assert by_path["harness.yaml"].change == "modified"
    # with renames (the default): tool_0 gone and tool_7 new differ only in their number,
    # so they read as one rename, as git would show them
    (renamed,) = [d for d in store.diff(a.id, b.id) if d.component == "tool"]
    assert (renamed.change, renamed.old_name, renamed.name) == ("renamed", "tool_0", "tool_7")
    assert (renamed.old_path, renamed.path) == ("tools/tool_0.json", "tools/tool_7.json")
    assert renamed.unified.startswith("--- a/tools/tool_0.json\n+++ b/tools/tool_7.json\n")
    assert renamed.old_text == removed.old_text and renamed.new_text == added.new_text
    # reversed direction swaps added/removed; a version against itself has no changes
    back = {d.path: d.change for d in store.diff(b.id, a.id, renames=False)}
    assert back["tools/tool_0.json"] == "added" and back["tools/tool_7.json"] == "removed"
    assert store.diff(a.id, a.id) == []
    # from nothing (a first version): every file of the version, added, with its text
    first = store.diff(None, a.id)
    assert {d.path: d.new_text for d in first} == folder_files(h)
    assert {d.change for d in first} == {"added"} and all(d.old_text is None for d in first)
    assert all(d.unified.startswith("--- /dev/null\n") for d in first if d.new_text)


def test_diff_marks_missing_final_newline(store: Store) -> None:
    h = make_harness()
    a = store.commit(with_body(h, 0, "one\ntwo"), "a")
    b = store.commit(with_body(h, 0, "one\nthree"), "b")
    (d,) = store.diff(a.id, b.id)
    assert "-two\n\\ No newline at end of file\n" in d.unified
    assert "+three\n\\ No newline at end of file\n" in d.unified


# ----------------------------------------------------------------------------- refs and labels


def test_labels_create_move_untag(store: Store) -> None:
    h = make_harness()
    v1 = store.commit(h, "one")
    v2 = store.commit(with_body(h, 0, "two\n"), "two")
    store.tag("production", v1.id)
    store.tag("staging", "head")  # any ref works, here the head of the only harness
    assert store.resolve("production") == v1.id
    assert store.resolve("demo@production") == v1.id
    assert store.resolve("production", "demo") == v1.id
    assert store.labels("demo") == {"production": v1.id, "staging": v2.id}
    assert store.labels() == {"demo@production": v1.id, "demo@staging": v2.id}
    assert store.log("demo")[1].labels == ("production",)
    store.tag("production", v2.id[:10])  # move
    assert store.resolve("production") == v2.id
    assert store.log("demo")[0].labels == ("production", "staging")
    assert store.load("demo@production") == with_body(h, 0, "two\n")
    store.untag("production", "demo")
    assert store.labels("demo") == {"staging": v2.id}
    with pytest.raises(StoreError, match="unknown"):
        store.resolve("production")
    with pytest.raises(StoreError, match="unknown label"):
        store.untag("production", "demo")
    with pytest.raises(StoreError, match="unknown label"):
        store.resolve("demo@nope")
    store.tag("demo@canary", v1.id)
    assert store.labels("demo")["canary"] == v1.id


@pytest.mark.parametrize("label", ["", "head", "HEAD", "bad name", "a@b@c", "cafe12", "-x", "a/b"])
def test_bad_label_names(store: Store, label: str) -> None:
    v = store.commit(make_harness(), "one")
    with pytest.raises(StoreError):
        store.tag(label, v.id)
    assert store.labels() == {}


def test_label_in_several_harnesses(store: Store) -> None:
    a = store.commit(make_harness("alpha"), "a")
    b = store.commit(make_harness("beta"), "b")
    store.tag("production", a.id)
    store.tag("production", b.id)
    with pytest.raises(StoreError, match=r"alpha@production.*beta@production"):
        store.resolve("production")
    assert store.resolve("production", "alpha") == a.id
    assert store.resolve("production", "beta") == b.id
    assert store.resolve("beta@production") == b.id
    assert store.load("production", "beta").name == "beta"
    with pytest.raises(StoreError, match="not 'beta'"):
        store.tag("beta@stable", a.id)
    with pytest.raises(StoreError, match="names harness"):
        store.resolve("alpha@production", "beta")
    assert store.labels() == {"alpha@production": a.id, "beta@production": b.id}


def test_prefix_resolution(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(["abcdef01" + "0" * 56, "abcdef02" + "1" * 56, "fedcba" + "2" * 58])
    monkeypatch.setattr(hv, "version_id", lambda *args: next(ids))
    h = make_harness()
    v1 = store.commit(h, "one")
    v2 = store.commit(with_body(h, 0, "x\n"), "two")
    v3 = store.commit(with_body(h, 0, "y\n"), "three")
    assert store.resolve("abcdef01") == v1.id
    assert store.resolve("ABCDEF02") == v2.id
    assert store.resolve("fedcba") == v3.id
    assert store.resolve(v3.id.upper()) == v3.id
    with pytest.raises(StoreError, match=r"ambiguous.*abcdef010000.*abcdef021111"):
        store.resolve("abcdef")
    with pytest.raises(StoreError, match="at least 6"):
        store.resolve("fedcb")
    with pytest.raises(StoreError, match="unknown"):
        store.resolve("012345")
    with pytest.raises(StoreError, match="unknown"):
        store.resolve("0" * 64)
    with pytest.raises(StoreError, match="unknown"):
        store.load("no-such-label")
    with pytest.raises(StoreError, match="empty"):
        store.resolve("  ")
    with pytest.raises(StoreError, match="unknown"):
        store.commit(h, "bad parent", parent="123456")


def test_ancestor_refs(store: Store) -> None:
    h = make_harness()
    v = [store.commit(with_body(h, 0, f"{i}\n"), f"v{i}") for i in range(4)]
    store.tag("production", v[2].id)
    assert store.resolve("head~1", "demo") == v[2].id
    assert store.resolve("demo@head~3") == v[0].id
    assert store.resolve("production~") == v[1].id
    assert store.resolve(f"{v[3].id[:8]}~2") == v[1].id
    assert store.resolve("head~0", "demo") == v[3].id
    with pytest.raises(StoreError, match="no parent"):
        store.resolve("head~4", "demo")


def test_real_ids_have_unique_short_prefixes(store: Store) -> None:
    h = make_harness()
    infos = [store.commit(with_body(h, 0, f"{i}\n"), f"v{i}") for i in range(5)]
    for info in infos:
        assert store.resolve(info.id[:8]) == info.id


# ----------------------------------------------------------------------------- rollback


def test_rollback_makes_a_new_equal_version(store: Store) -> None:
    h = make_harness()
    v1 = store.commit(h, "one")
    v2 = store.commit(with_body(h, 0, "two\n"), "two")
    store.tag("production", v1.id)
    before = counts(store)
    v3 = store.rollback("production")
    assert v3.tree_hash == v1.tree_hash
    assert v3.id not in (v1.id, v2.id)
    assert v3.parent_id == v2.id
    assert v1.id[:12] in v3.message
    assert store.load(v3.id) == store.load(v1.id) == h
    assert store.resolve("head", "demo") == v3.id
    after = counts(store)
    assert after["harness_blobs"] == before["harness_blobs"]
    assert after["harness_trees"] == before["harness_trees"]
    assert after["harness_versions"] == before["harness_versions"] + 1
    v4 = store.rollback(v1.id, "again")
    assert v4.message == "again" and v4.parent_id == v3.id and v4.id != v3.id
    assert v4.tree_hash == v1.tree_hash
    assert store.diff(v1.id, v4.id) == []


# ----------------------------------------------------------------------------- trust


def test_python_hook_trust_round_trip(store: Store) -> None:
    trusted_src = PY_HOOK
    untrusted_src = "def check(event):\n    return {'decision': 'block'}\n"
    t = store.commit(make_harness("t", python_hook=trusted_src, trusted=True), "trusted")
    u = store.commit(make_harness("u", python_hook=untrusted_src, trusted=False), "untrusted")
    loaded_t = store.load(t.id)
    loaded_u = store.load(u.id)
    assert loaded_t.hooks[1].trusted is True
    assert loaded_u.hooks[1].trusted is False
    assert loaded_t == make_harness("t", python_hook=trusted_src, trusted=True)
    assert loaded_u == make_harness("u", python_hook=untrusted_src, trusted=False)
    # committing untrusted later does not revoke; trusting the source later applies on load
    store.commit(make_harness("t", python_hook=trusted_src, trusted=False), "again")
    assert store.load("t@head").hooks[1].trusted is True
    store.trust_source(untrusted_src)
    assert store.load(u.id).hooks[1].trusted is True


def test_trust_survives_reopen(tmp_path: Path) -> None:
    with Store.open(tmp_path / "hat.db") as s:
        v = s.commit(make_harness(python_hook=PY_HOOK, trusted=True), "one")
    with Store.open(tmp_path / "hat.db") as s:
        assert s.load(v.id).hooks[1].trusted is True


# ----------------------------------------------------------------------------- atomicity


def test_failed_commit_leaves_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    h = make_harness(python_hook=PY_HOOK)
    v1 = store.commit(h, "one")
    before = counts(store)

    def boom(*args: Any) -> None:
        raise RuntimeError("disk on fire")

    # record_trust runs after the blobs, the tree and the version row are inserted
    monkeypatch.setattr(hv, "record_trust", boom)
    edited = with_body(h, 0, "new body\n").model_copy(update={"tools": [tool(5)]})
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.commit(edited, "two")
    assert counts(store) == before
    assert store.resolve("head", "demo") == v1.id
    monkeypatch.undo()
    v2 = store.commit(edited, "two")
    assert v2.parent_id == v1.id
    assert store.load(v2.id) == edited


def test_failed_rollback_and_tag_leave_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness()
    v1 = store.commit(h, "one")
    store.commit(with_body(h, 0, "x\n"), "two")
    before = counts(store)
    with pytest.raises(StoreError):
        store.rollback("nope")
    with pytest.raises(StoreError):
        store.tag("production", "nope")
    assert counts(store) == before and store.labels() == {}
    store.tag("production", v1.id)
    assert store.labels("demo") == {"production": v1.id}


def test_unstorable_harness_is_refused(store: Store) -> None:
    # The model accepts a harness without a skill index; the folder format does not, so
    # storing it would make a version that cannot load.
    h = make_harness().model_copy(update={"prompt": PromptPipeline()})
    with pytest.raises(StoreError, match="cannot be stored"):
        store.commit(h, "broken")
    assert count(store, HarnessVersion) == 0
    with pytest.raises(StoreError, match="expected a Harness"):
        store.commit("not a harness", "x")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the file


def test_wal_mode_and_foreign_keys(store: Store) -> None:
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 200


def test_locked_database(store: Store) -> None:
    v1 = store.commit(make_harness(), "one")
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO trusted_hook_sources VALUES (x'00', '2020')")
        with pytest.raises(StoreError, match="locked by another process") as err:
            store.commit(with_body(make_harness(), 0, "x\n"), "two")
        assert str(store.path) in str(err.value)
        with pytest.raises(StoreError, match="locked"):
            store.tag("production", v1.id)
        assert store.load(v1.id) == make_harness()  # readers are not blocked (WAL)
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.commit(with_body(make_harness(), 0, "x\n"), "two")
    assert len(store.log()) == 2


def test_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is a text file, not SQLite\n" * 200)
    with pytest.raises(StoreError, match="not a HAT database"):
        Store.open(junk)
    fake = tmp_path / "fake.db"
    fake.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with pytest.raises(StoreError, match=r"not a HAT database|corrupt"):
        Store.open(fake)
    with pytest.raises(StoreError, match="folder"):
        Store.open(tmp_path)
    foreign = tmp_path / "foreign.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a HAT database"):
        Store.open(foreign)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hat.db"
    Store.open(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE alembic_version SET version_num = '9999_future'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer than this program"):
        Store.open(path)


def test_reopen_and_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    with Store.open() as s:
        v = s.commit(make_harness(), "one")
        assert s.path == tmp_path / "home" / "hat.db"
    with Store.open(tmp_path / "home" / "hat.db") as s:
        assert s.load(v.id) == make_harness()
    s.close()  # closing twice is fine
    with pytest.raises(StoreError, match="closed"):
        s.log()


def test_corruption_is_detected(store: Store) -> None:
    v = store.commit(make_harness(), "one")
    con = sqlite3.connect(store.path)
    con.execute(
        "UPDATE harness_blobs SET data = CAST('tampered' AS BLOB) "
        "WHERE pk = (SELECT max(pk) FROM harness_blobs)"
    )
    con.commit()
    con.close()
    store.cache_size = 0
    with pytest.raises(StoreError, match="corrupt"):
        store.load(v.id)


def test_migrations_match_the_tables(store: Store) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with store.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": False})
        assert compare_metadata(ctx, Base.metadata) == []


def test_concurrent_writers_chain_correctly(tmp_path: Path) -> None:
    path = tmp_path / "hat.db"
    Store.open(path).close()
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        try:
            with Store.open(path) as s:
                for i in range(6):
                    s.commit(with_body(make_harness(), 0, f"{tag} {i}\n"), f"{tag}{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Store.open(path) as s:
        log = s.log("demo")
        assert len(log) == 12
        # one linear history: every version's parent is the one committed just before it
        assert [v.parent_id for v in log] == [v.id for v in log[1:]] + [None]


# ----------------------------------------------------------------------------- long chains


def test_long_chain_loads_at_every_version(tmp_path: Path) -> None:
    rng = random.Random(7)
    with Store.open(tmp_path / "hat.db") as store:
        store.cache_size = 0
        store.verify_commits = False
        h = make_harness(skills=6, tools=3)
        committed: list[tuple[str, Harness]] = []
        for i in range(100):
            # skill 0 changes every time (hits the blob chain limit), others now and then
            index = 0 if i % 2 else rng.randrange(6)
            body = h.skills[index].body + f"Added line {i}.\n"
            h = with_body(h, index, body)
            committed.append((store.commit(h, f"v{i}").id, h))
        for vid, expected in committed:
            assert store.load(vid) == expected
        with store.engine.connect() as conn:
            tree_depth = conn.execute(select(func.max(HarnessTree.depth))).scalar_one()
            blob_depth = conn.execute(select(func.max(HarnessBlob.depth))).scalar_one()
            snapshots = conn.execute(
                select(func.count()).select_from(HarnessTree).where(HarnessTree.base_pk.is_(None))
            ).scalar_one()
        assert tree_depth == store.tuning.tree_snapshot_every - 1
        assert blob_depth == store.tuning.blob_chain_max - 1
        assert snapshots == 4  # 100 trees, a snapshot every 32


# ----------------------------------------------------------------------------- properties

safe_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="$"),
    max_size=60,
)

edit_ops = st.one_of(
    st.tuples(st.just("body"), st.integers(0, 20), safe_text),
    st.tuples(st.just("add_skill"), st.integers(0, 50), safe_text),
    st.tuples(st.just("drop_skill"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("tool_desc"), st.integers(0, 20), safe_text.filter(str.strip)),
    st.tuples(st.just("add_tool"), st.integers(0, 50), st.just("")),
    st.tuples(st.just("drop_tool"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("describe"), st.just(0), safe_text),
    st.tuples(st.just("reorder"), st.integers(0, 2**16), st.just("")),
    st.tuples(st.just("toggle_hook"), st.just(0), st.just("")),
    st.tuples(st.just("rollback"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("branch"), st.integers(0, 20), safe_text),
)


def apply_edit(h: Harness, op: str, n: int, value: str) -> Harness:
    skills, tools, hooks = list(h.skills), list(h.tools), list(h.hooks)
    if op == "body" and skills:
        i = n % len(skills)
        skills[i] = skills[i].model_copy(update={"body": skills[i].body + value})
    elif op == "add_skill" and all(s.name != f"skill-{n}" for s in skills):
        skills.append(skill(n, body=value))
    elif op == "drop_skill" and len(skills) > 1:
        skills.pop(n % len(skills))
    elif op == "tool_desc" and tools:
        i = n % len(tools)
        tools[i] = tools[i].model_copy(update={"description": value})
    elif op == "add_tool" and all(t.name != f"tool_{n}" for t in tools):
        tools.append(tool(n))
    elif op == "drop_tool" and tools:
        tools.pop(n % len(tools))
    elif op == "describe":
        return h.model_copy(update={"description": value})
    elif op == "reorder":
        random.Random(n).shuffle(skills)
    elif op == "toggle_hook":
        hooks[-1] = hooks[-1].model_copy(update={"enabled": not hooks[-1].enabled})
    if not any(s.kind.value == "reply" and s.enabled for s in skills):
        skills[0] = skills[0].model_copy(update={"kind": "reply"})
    return h.model_copy(update={"skills": skills, "tools": tools, "hooks": hooks})


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(edit_ops, min_size=1, max_size=12))
def test_random_edit_sequences_load_back_equal(ops: list[tuple[str, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "hat.db") as store:
        store.tuning = Tuning(tree_snapshot_every=3, blob_chain_max=3)
        store.cache_size = 0
        h = make_harness(skills=3, tools=2, python_hook=PY_HOOK)
        history: list[tuple[VersionInfo, Harness]] = [(store.commit(h, "start"), h)]
        for op, n, value in ops:
            if op == "rollback":
                target, h = history[n % len(history)]
                info = store.rollback(target.id)
                assert info.tree_hash == target.tree_hash
                assert info.parent_id == history[-1][0].id
            elif op == "branch":
                parent, base = history[n % len(history)]
                h = apply_edit(base, "body", n, value)
                info = store.commit(h, value, parent=parent.id)
                assert info.parent_id == parent.id
            else:
                h = apply_edit(h, op, n, value)
                info = store.commit(h, value)
            history.append((info, h))
        for info, expected in history:
            assert store.load(info.id) == expected
        # diff between consecutive versions lists exactly the files that differ
        for (a, ha), (b, hb) in itertools.pairwise(history):
            fa, fb = folder_files(ha), folder_files(hb)
            expected_paths = sorted(p for p in set(fa) | set(fb) if fa.get(p) != fb.get(p))
            diffs = store.diff(a.id, b.id, renames=False)
            assert [d.path for d in diffs] == expected_paths
            for d in diffs:
                assert d.old_text == fa.get(d.path) and d.new_text == fb.get(d.path)
            # with renames: the same files, a renamed one under both its paths, texts kept
            shown = store.diff(a.id, b.id)
            covered = {d.path for d in shown} | {d.old_path for d in shown if d.old_path}
            assert covered == set(expected_paths)
            for d in shown:
                assert d.new_text == fb.get(d.path)
                assert d.old_text == fa.get(d.old_path or d.path)
            assert (a.tree_hash == b.tree_hash) == (not expected_paths)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=300))
def test_delta_round_trips_arbitrary_bytes(base: bytes, target: bytes) -> None:
    assert delta_codec.decode(base, delta_codec.encode(base, target)) == target


lines = st.lists(st.sampled_from(["a\n", "bb\n", "\n", "ccc", "x\r\n", "é\n", "long line\n"]))


@settings(max_examples=300, deadline=None)
@given(lines, st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), lines), max_size=4))
def test_delta_round_trips_text_edits(
    base_lines: list[str], edits: list[tuple[int, int, list[str]]]
) -> None:
    target_lines = list(base_lines)
    for at, remove, insert in edits:
        at = min(at, len(target_lines))
        target_lines[at : at + remove] = insert
    base = "".join(base_lines * 3).encode("utf-8")
    target = "".join(target_lines * 3).encode("utf-8")
    encoded = delta_codec.encode(base, target)
    assert delta_codec.decode(base, encoded) == target
    if base == target and base:
        assert len(encoded) <= 12  # one copy


@given(st.text(max_size=200), st.text(max_size=200))
@settings(max_examples=200, deadline=None)
def test_delta_round_trips_text(a: str, b: str) -> None:
    base, target = a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    assert delta_codec.decode(base, delta_codec.encode(base, target)) == target


def test_delta_rejects_garbage() -> None:
    with pytest.raises(delta_codec.DeltaError):
        delta_codec.decode(b"abc", b"\x81")  # truncated varint
    with pytest.raises(delta_codec.DeltaError):
        delta_codec.decode(b"abc", bytes([10 << 1 | 1, 0]))  # copy past the end
    with pytest.raises(delta_codec.DeltaError):
        delta_codec.decode(b"abc", bytes([10 << 1, 65]))  # insert past the end
