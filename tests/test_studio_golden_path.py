"""The studio's golden path in one real window (issue 23): generate oracle data → the Train
form picks that dataset → a tiny SFT run of the demo model → Chat serves the trained adapter
and answers through the agent loop → Evaluate runs two items on Chat's server → the results
show them. Nothing is typed that names a file, a URL, a model or a run: each page starts from
what the one before it made.

Real parts throughout: the demo model, the real oracle generator, a real `python -m training
sft` child, a real model server (vLLM with the LoRA adapter where its environment exists, else
transformers serve with the adapter merged on first use), the real evaluation runner.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from core.store import Store
from tests.test_studio_train import no_orphans  # noqa: F401 - a fixture, shared

SCREENSHOTS = os.environ.get("HAT_SCREENSHOTS")


def _grab(win: Any, name: str) -> None:
    if SCREENSHOTS:
        folder = Path(SCREENSHOTS)
        folder.mkdir(parents=True, exist_ok=True)
        win.grab().save(str(folder / name))


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_data_train_chat_evaluate_without_typing_a_path(
    qapp: Any,
    hat_home: Path,
    demo_model_folder: Path,
    no_orphans: None,  # noqa: F811 - the fixture imported above
) -> None:
    from core.models import add_folder, list_models
    from tests.studio_helpers import idle, open_studio, shut, wait_until

    with Store.open() as store:  # a registered base model, as `hat models add-demo` leaves it
        add_folder(store, "smollm2-demo", demo_model_folder)
    win = open_studio(hat_home, size=(1440, 900), timeout=120)
    chat_panel = None
    try:
        # 1. Data: oracle rows under the edited harness, into the workspace's datasets folder
        win.show_page("data")
        data = win.page("data")
        idle()
        data.generate_button.click()
        gen = data.generate
        gen.source.setCurrentIndex(gen.source.findData("train"))
        gen.per_category.setValue(1)
        gen.variants.setValue(1)
        gen.start_button.click()
        wait_until(lambda: gen.result is not None, timeout=300)
        idle()
        assert gen.result.progress.written > 0
        made = sorted((hat_home / "datasets").glob("*.jsonl"))
        made = [p for p in made if not p.name.endswith(".rejects.jsonl")]
        assert len(made) == 1

        # 2. Train: the form offers that dataset (its default names a file that is not there)
        win.show_page("train")
        train = win.page("train")
        wait_until(lambda: train.env is not None and train.hub.attached, timeout=120)
        idle()
        form = train.forms["sft"]
        assert Path(form.value("data")) == made[0]
        assert form.value("model") == "smollm2-demo"  # the registered base, preselected
        file_edit = form.editors["data"]
        assert file_edit.start_dir == str(hat_home / "datasets")  # Browse opens there
        form.set_values({
            "system_prompt": "compact", "max_length": 320, "per_device_batch_size": 1,
            "max_steps": 3, "save_steps": 3, "learning_rate": "2e-3",
        })  # fmt: skip
        train.validate()
        wait_until(train.start_button.isEnabled, timeout=120)
        _grab(win, "golden-train-form.png")
        train.start_button.click()
        wait_until(lambda: train.monitor.run_id is not None, timeout=120)
        run_id = train.monitor.run_id
        # while it trains: the status bar counts it, and Start waits for it (items 3)
        wait_until(lambda: bool(train.hub.live_runs()), timeout=60)
        wait_until(lambda: "1 training run" in win.status_jobs.text(), timeout=30)
        assert not train.start_button.isEnabled()
        assert run_id in train.start_button.toolTip()

        def finished() -> bool:
            entry = train.monitor.entry()
            return entry is not None and entry.run is not None and entry.run.finished

        wait_until(finished, timeout=1500)
        run = train.monitor.entry().run
        assert run.status == "done", run.reason
        wait_until(lambda: bool(win.ctx.current_model), timeout=60)
        with Store.open() as store:
            adapters = [r for r in list_models(store) if r.kind == "adapter"]
        assert [a.name for a in adapters] == [win.ctx.current_model]
        adapter = adapters[0].name
        assert adapters[0].base == "smollm2-demo"
        wait_until(lambda: "training run" not in win.status_jobs.text(), timeout=30)

        def zombies() -> list[int]:  # item 10: the finished child is waited for
            import psutil

            return [c.pid for c in psutil.Process().children() if c.status() == "zombie"]

        wait_until(lambda: not zombies(), timeout=30)
        assert f"model  {adapter}" == win.status_model.text()

        # 3. Chat: the server card shows the trained adapter; Start serves it
        win.show_page("chat")
        chat = win.page("chat")
        idle()
        chat_panel = chat.servers["A"]
        wait_until(lambda: chat_panel.adapter.currentData() == adapter, timeout=60)
        assert chat_panel.model.currentData() == "smollm2-demo"
        chat_panel.start()
        wait_until(lambda: chat_panel.state in ("running", "failed", "died"), timeout=900)
        assert chat_panel.state == "running", chat_panel.banner.text.text()
        endpoint = chat_panel.endpoint
        assert endpoint is not None and adapter in endpoint.label
        if endpoint.engine == "vllm":
            assert endpoint.model_id == adapter  # requests name the adapter on vLLM
        else:  # transformers serve: the adapter merged on demand, once
            with Store.open() as store:
                merged = [r for r in list_models(store) if r.kind == "merged"]
            assert [m.meta.get("adapter") for m in merged] == [adapter]
        wait_until(lambda: "A" in chat.lanes, timeout=60)
        chat.max_tokens.setValue(24)  # a short reply keeps the CPU test short
        chat.composer.setText("hi! what is on sale today?")
        chat.send()
        assert chat.busy and chat.cancel_button.isVisibleTo(chat)
        wait_until(lambda: not chat.busy, timeout=600)
        turn = chat.columns["A"].turns[-1]
        trace = turn.trace
        assert trace is not None and trace.counts.model_calls >= 1
        assert trace.status.value != "model_error", trace.reason
        _grab(win, "golden-chat.png")

        # 4. Evaluate: "use a running server" is Chat's, the model is the trained adapter
        win.show_page("evaluate")
        evaluate = win.page("evaluate")
        idle()
        evaluate.new_button.click()
        view = evaluate.run
        view.load_choices()
        idle()
        assert view.server.value() == "url"
        assert view.base_url.text() == endpoint.base_url
        assert view.model_id.text() == endpoint.model_id
        assert view.picker.model.currentData() == "smollm2-demo"
        assert view.picker.adapter.currentData() == adapter
        for key, b in view.suite_buttons.items():
            b.setChecked(key == "ls-qa")
        view.limit.setValue(2)
        view.max_tokens.setValue(24)
        wait_until(lambda: view.size.text().startswith("2 items"), timeout=60)
        view.start_button.click()
        wait_until(lambda: view.result is not None, timeout=900)
        idle()
        stored = view.result
        assert stored.total == 2 and stored.done == 2
        shown = view.stat_labels
        assert int(shown["passed"].text()) + int(shown["failed"].text()) == 2  # item 4

        # 5. Results: the two items of that run
        view.results_button.click()
        results = evaluate.results
        wait_until(lambda: results.view is not None and results.view.run.id == stored.id)
        idle()
        assert len(results.items.records()) == 2
        assert adapter in stored.model or stored.adapter == adapter
        _grab(win, "golden-results.png")
    finally:
        if chat_panel is not None:
            chat_panel.shutdown()
        shut(win, timeout=300)
