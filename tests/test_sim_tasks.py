"""Viewer tasks: phrasing bank, seeded generator, splits, suites and `hat sim tasks`."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.harness.demo import load_demo_harness
from core.sim.catalog import load_catalog, recommend_size
from core.sim.faults import FAULT_KINDS
from core.sim.handlers import match_region
from core.sim.models import Catalog, IntentKind, Split, Task, TaskCategory
from core.sim.phrasings import TEMPLATES, templates
from core.sim.tasks import (
    DEFAULT_PER_CATEGORY,
    REGION_ALIASES,
    SPLITS,
    SUITES,
    build_suite,
    category_counts,
    fault_targets,
    generate_tasks,
    read_tasks,
    split_links,
    suite_bytes,
    suite_path,
    write_tasks,
)

PRODUCT_KINDS = set(IntentKind) - {IntentKind.CHIT_CHAT, IntentKind.COMPARISON}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def test_tasks() -> list[Task]:
    return generate_tasks(Split.TEST)


def task_links(task: Task) -> set[int]:
    links = {i.link_no for i in task.intents if i.link_no is not None}
    links |= {n for i in task.intents for n in i.link_nos}
    if task.room.pinned_link is not None:
        links.add(task.room.pinned_link)
    links |= {n for p in task.room.promotions for n in p.link_nos}
    return links


def check_task(task: Task, split: Split, catalog: Catalog) -> None:
    """Everything a task promises (tasks.py docstring), checked against the catalog."""
    allowed = set(split_links(catalog)[split])
    assert task.split is split
    assert task_links(task) <= allowed, task.id
    assert task.template_id.startswith(task.category.value + ".")
    assert task.intents
    message = task.viewer_message.lower()
    if task.category is TaskCategory.MULTI_INTENT:
        assert len(task.intents) in (2, 3)
    else:
        assert [i.kind.value for i in task.intents] == [task.category.value]
    assert task.room.pinned_link is not None
    for intent in task.intents:
        if intent.kind is IntentKind.CHIT_CHAT:
            assert intent.link_no is None and not intent.link_nos
            continue
        if intent.kind is IntentKind.COMPARISON:
            assert intent.link_no is None and intent.link_nos
            targets = list(intent.link_nos)
            if len(targets) == 1:  # "this one or link N"
                targets.insert(0, task.room.pinned_link)
            assert len(set(targets)) == len(targets) >= 2
            for n in intent.link_nos:
                assert re.search(rf"(?<!\d){n}(?!\d)", message), task.id
            continue
        link = intent.link_no if intent.link_no is not None else task.room.pinned_link
        product = catalog.product(link)
        assert product is not None
        if intent.link_no is not None:
            assert re.search(rf"(?<!\d){intent.link_no}(?!\d)", message), task.id
        if intent.size is not None:
            assert intent.size in product.sizes
        if intent.color is not None:
            assert intent.color in product.colors
        if intent.spec_key is not None:
            assert intent.spec_key in product.specs
        if intent.kind is IntentKind.SPEC:
            assert intent.spec_key is not None
        if intent.region is not None:
            assert intent.region in catalog.regions
        if intent.kind is IntentKind.SIZE_ADVICE and intent.height_cm is not None:
            assert intent.weight_kg is not None and product.size_chart
            assert recommend_size(product.size_chart, intent.height_cm, intent.weight_kg)
        if intent.kind is IntentKind.AFTER_SALES:
            assert intent.topic in ("return", "exchange", "warranty", "refund")
        if intent.kind is IntentKind.ADVERSARIAL:
            assert intent.claim
    for coupon in task.room.room_coupons:
        assert coupon.amount > 0


# ----------------------------------------------------------------------------- phrasing bank


def test_every_category_has_enough_templates_in_every_split() -> None:
    assert len({t.id for t in TEMPLATES}) == len(TEMPLATES)
    for category in TaskCategory:
        assert len(templates(category)) >= 5, category
        for split in SPLITS:
            assert templates(category, split), (category, split)
    slang = [
        t for t in TEMPLATES if re.search(r"\b(lol|pls|plz|ur|u|rn|hw|wat|whats|tbh)\b", t.text)
    ]
    assert len({t.category for t in slang}) >= 8
    assert {t.ref for t in templates(split=Split.TEST)} == {"link", "pinned", "none"}


def test_splits_are_disjoint_by_product_and_template(catalog: Catalog) -> None:
    parts = split_links(catalog)
    assert sorted(n for links in parts.values() for n in links) == sorted(
        p.link_no for p in catalog.products
    )
    for a in SPLITS:
        for b in SPLITS:
            if a is not b:
                assert not set(parts[a]) & set(parts[b])
    for split in SPLITS:  # every category is represented in every split
        cats = {catalog.product(n).category for n in parts[split]}  # type: ignore[union-attr]
        assert len(cats) == 7
    ids = {s: {t.template_id for t in generate_tasks(s, per_category=12)} for s in SPLITS}
    assert not ids[Split.TRAIN] & ids[Split.TEST]
    assert not ids[Split.TRAIN] & ids[Split.DEV]
    assert not ids[Split.DEV] & ids[Split.TEST]
    assert ids[Split.TEST] == {t.id for t in templates(split=Split.TEST)}  # all used
    # the partition does not depend on the generation seed
    seeded = {t.template_id for t in generate_tasks(Split.TRAIN, seed=99, per_category=12)}
    assert seeded == ids[Split.TRAIN]


# ----------------------------------------------------------------------------- generator


def test_test_split_is_large_valid_and_covers_every_category(
    test_tasks: list[Task], catalog: Catalog
) -> None:
    assert len(test_tasks) >= 500
    assert len(test_tasks) == DEFAULT_PER_CATEGORY[Split.TEST] * len(TaskCategory)
    counts = category_counts(test_tasks)
    assert set(counts) == set(TaskCategory) and min(counts.values()) >= 40
    assert len({t.id for t in test_tasks}) == len(test_tasks)
    for task in test_tasks:
        check_task(task, Split.TEST, catalog)
    intents = [i for t in test_tasks for i in t.intents]
    assert any(i.link_no is None and i.kind in PRODUCT_KINDS for i in intents)  # "this one"
    shipping = [i for i in intents if i.kind is IntentKind.SHIPPING]
    assert any(i.region is None for i in shipping) and any(i.region for i in shipping)
    clocks = {t.room.clock for t in test_tasks}
    assert len(clocks) > 100
    # sold-out asks and expired room coupons occur
    stock = [(t, i) for t in test_tasks for i in t.intents if i.kind is IntentKind.STOCK and i.size]
    assert any(
        catalog.product(i.link_no or t.room.pinned_link).stock[i.size][c] == 0  # type: ignore[union-attr,index]
        for t, i in stock
        for c in ([i.color] if i.color else [])
    )


def test_generation_is_deterministic_and_seed_dependent() -> None:
    a = generate_tasks(Split.DEV, seed=5, per_category=6)
    b = generate_tasks(Split.DEV, seed=5, per_category=6)
    c = generate_tasks(Split.DEV, seed=6, per_category=6)
    assert a == b
    assert [t.viewer_message for t in a] != [t.viewer_message for t in c]
    only_price = generate_tasks(Split.DEV, seed=5, per_category=6, categories=[TaskCategory.PRICE])
    assert only_price == [t for t in a if t.category is TaskCategory.PRICE]


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32),
    split=st.sampled_from(SPLITS),
    per_category=st.integers(1, 4),
)
def test_any_seed_gives_valid_tasks_of_the_right_split(
    seed: int, split: Split, per_category: int
) -> None:
    catalog = load_catalog()
    tasks = generate_tasks(split, seed=seed, per_category=per_category)
    assert len(tasks) == per_category * len(TaskCategory)
    for task in tasks:
        check_task(task, split, catalog)
        assert Task.model_validate_json(task.model_dump_json()) == task


# ----------------------------------------------------------------------------- suites


@pytest.mark.parametrize("name", SUITES)
def test_suite_files_are_byte_reproducible(name: str, tmp_path: Path) -> None:
    first = suite_bytes(build_suite(name, seed=0))
    second = suite_bytes(build_suite(name, seed=0))
    assert first == second
    assert suite_path(name).read_bytes() == first  # the bundled copy is current
    out = write_tasks(read_tasks(suite_path(name)), tmp_path / "again.jsonl")
    assert out.read_bytes() == first  # read + write round-trips byte for byte
    line = json.loads(first.splitlines()[0])
    assert list(line) == sorted(line)
    assert suite_bytes(build_suite(name, seed=1)) != first


def test_robustness_suite_has_every_fault_kind_and_distractors(catalog: Catalog) -> None:
    suite = build_suite("robustness")
    harness_bindings = {t.binding for t in load_demo_harness().tools}
    assert len(suite) >= 200
    kinds = Counter(f.kind for t in suite for f in t.faults)
    assert set(kinds) == set(FAULT_KINDS) and min(kinds.values()) >= 40
    assert all(t.faults and t.distractor_tools > 0 for t in suite)
    assert any(len(t.faults) == 2 for t in suite)
    for task in suite:
        check_task(task, Split.TEST, catalog)
        targets = fault_targets(task)
        for fault in task.faults:
            assert fault.binding in harness_bindings and fault.binding in targets
        assert task.id.startswith("robustness.test.")
    assert len({t.category for t in suite}) >= 10


def test_region_words_in_messages_resolve_to_the_intent_region(
    test_tasks: list[Task], catalog: Catalog
) -> None:
    """What the viewer wrote ("NYC", "toronto") is what a model would pass: the shipping
    handler must resolve it to the intent's canonical region."""
    seen = 0
    for task in test_tasks:
        for intent in task.intents:
            if intent.region is None:
                continue
            message = task.viewer_message.lower()
            written = [a for a in REGION_ALIASES[intent.region] if a.lower() in message]
            assert written, task.id
            assert match_region(catalog, max(written, key=len)) == intent.region
            seen += 1
    assert seen > 20


# ----------------------------------------------------------------------------- CLI


def test_cli_prints_stats_and_writes_reproducible_jsonl(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["sim", "tasks", "--split", "test", "--stats"])
    assert result.exit_code == 0, result.output
    assert "540 tasks" in result.output
    for category in TaskCategory:
        assert category.value in result.output
    out = tmp_path / "ls.jsonl"
    result = runner.invoke(app, ["sim", "tasks", "--suite", "ls-qa", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == suite_path("ls-qa").read_bytes()
    small = tmp_path / "train.jsonl"
    args = ["sim", "tasks", "--split", "train", "--seed", "3", "--per-category", "2"]
    result = runner.invoke(app, [*args, "--out", str(small)])
    assert result.exit_code == 0 and len(read_tasks(small)) == 24
    bad = runner.invoke(app, ["sim", "tasks", "--split", "holdout"])
    assert bad.exit_code == 1 and "unknown split" in bad.output
