"""The studio's golden path as an operator's day, in one real window on a fresh home (issue 23,
#35): first start imports the demo model → the Data page's default generation → Train with the
data's own defaults (max length follows the longest row) → the run succeeds → a run whose child
dies → Start works again, the log shows the child's last lines → Rename… on a tool carries to the
hook matcher and the skills, a rename typed by hand is flagged by Problems → Chat serves the
trained adapter, with live TTFT and tok/s while a reply streams, and Esc stops it → Evaluate
against a server that does not answer → the items are infrastructure errors, "Retry failed"
reruns only them. Nothing is typed that names a file, a model or a run: each page starts from
what the one before it made.

Real parts throughout: the demo model's real import, the real oracle generator, real
`python -m training sft` children, a real model server (vLLM with the LoRA adapter where its
environment exists, else transformers serve with the adapter merged on first use), the real
evaluation runner. One test double: `_StallingFront`, a pass-through in front of that server
that can withhold its answers (a real server cannot be made to stall on cue).
"""

from __future__ import annotations

import os
import re
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from core.store import Store
from tests.test_studio_train import no_orphans  # noqa: F401 - a fixture, shared

SCREENSHOTS = os.environ.get("HAT_SCREENSHOTS")


def _grab(win: Any, name: str) -> None:
    if SCREENSHOTS:
        folder = Path(SCREENSHOTS)
        folder.mkdir(parents=True, exist_ok=True)
        win.grab().save(str(folder / name))


class _StallingFront:
    """A pass-through in front of a model server that withholds its chat answers while
    `stalling` is set (the server overloaded, as an operator meets it); otherwise every request
    goes to the server behind it and its answer comes back whole."""

    def __init__(self, behind: str) -> None:
        parts = urlsplit(behind)
        self.root = f"{parts.scheme}://{parts.netloc}"
        self.stalling = threading.Event()
        self.stalling.set()
        self.released = threading.Event()
        self.stalled = 0
        self.passed = 0
        front = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                front._pass(self, b"")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/chat/completions") and front.stalling.is_set():
                    front.stalled += 1
                    front.released.wait(120)  # no answer: the caller's timeout ends it
                    self.close_connection = True
                    return
                front._pass(self, body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{parts.path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _pass(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        import httpx

        headers = {k: v for k, v in handler.headers.items()
                   if k.lower() in ("content-type", "authorization", "accept")}  # fmt: skip
        with httpx.Client(timeout=600) as http:
            answer = http.request(handler.command, self.root + handler.path,
                                  content=body or None, headers=headers)  # fmt: skip
        if handler.path.endswith("/chat/completions"):
            self.passed += 1
        handler.send_response(answer.status_code)
        handler.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
        handler.send_header("Content-Length", str(len(answer.content)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(answer.content)
        handler.close_connection = True

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


LIVE = re.compile(r"TTFT \d+ ms · \d+\.\d tok/s · \d+ tok")
"""The chat column's live readout once tokens stream (studio/logic/live_speed.py)."""


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_an_operators_day_without_typing_a_path(
    qapp: Any,
    hat_home: Path,
    no_orphans: None,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest

    from core.models import DEMO_MODEL_NAME, list_models
    from studio.main_window import DEMO_IMPORT_ENV
    from tests.studio_helpers import idle, open_studio, run_qasync, shut, spin, wait_until

    # 0. First start: the demo model is imported in the background, once (#35 item 4)
    monkeypatch.setenv(DEMO_IMPORT_ENV, "1")
    win = open_studio(hat_home, size=(1440, 900), timeout=120, settle=600)
    chat_panel = None
    front = None
    try:
        with Store.open() as store:
            assert [r.name for r in list_models(store)] == [DEMO_MODEL_NAME]

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

        # 2. Train: the form offers that dataset and the demo model; max length and the system
        # prompt stay at their defaults, and the length follows the data's longest row (#35 item 1)
        win.show_page("train")
        train = win.page("train")
        wait_until(lambda: train.env is not None and train.hub.attached, timeout=120)
        idle()
        form = train.forms["sft"]
        assert Path(form.value("data")) == made[0]
        assert form.value("model") == DEMO_MODEL_NAME  # the first start's import, preselected
        file_edit = form.editors["data"]
        assert file_edit.start_dir == str(hat_home / "datasets")  # Browse opens there
        form.set_values({"per_device_batch_size": 1, "max_steps": 2, "save_steps": 2,
                         "learning_rate": "2e-3"})  # fmt: skip
        train.validate()
        wait_until(train.start_button.isEnabled, timeout=300)
        from core.train.measure import measure_rows
        from core.train.runs import resolve_model

        with Store.open() as store:
            folder, _name = resolve_model(store, DEMO_MODEL_NAME, field="model")
        prompt = str(form.value("system_prompt"))
        longest = measure_rows(folder, [str(made[0])], system_prompt=prompt).longest
        assert int(form.value("max_length")) >= longest > 2048  # the old default cut every row
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
        assert adapters[0].base == DEMO_MODEL_NAME
        wait_until(lambda: "training run" not in win.status_jobs.text(), timeout=30)

        def zombies() -> list[int]:  # item 10: the finished child is waited for
            import psutil

            return [c.pid for c in psutil.Process().children() if c.status() == "zombie"]

        wait_until(lambda: not zombies(), timeout=30)
        assert f"model  {adapter}" == win.status_model.text()

        # 3. A run that fails: its child dies mid-run. Start is given back at once, and the Log
        # tab shows what the child wrote last (#35 items 1 and 2)
        train.tabs.setCurrentIndex(0)
        form.set_values({"max_steps": 50, "output_name": "day-crash"})
        train.validate()
        wait_until(train.start_button.isEnabled, timeout=300)
        train.start_button.click()
        wait_until(lambda: train.monitor.run_id not in (None, run_id), timeout=120)
        crash_id = train.monitor.run_id

        def crash_record() -> Any:
            record = train.hub.record(crash_id)
            assert record is not None
            return record

        wait_until(lambda: train.hub.record(crash_id) is not None, timeout=60)
        wait_until(lambda: crash_record().pid is not None, timeout=120)
        wait_until(lambda: train.monitor.log.toPlainText().strip() != "", timeout=300)
        os.killpg(crash_record().pid, signal.SIGKILL)
        wait_until(lambda: crash_record().status == "failed", timeout=120)
        wait_until(train.start_button.isEnabled, timeout=120)
        assert "Failed" in train.monitor.banner.text.text()
        assert train.monitor.log.toPlainText().strip()
        # nothing the operator typed is lost (#35, bad input and faults)
        assert form.value("output_name") == "day-crash" and int(form.value("max_steps")) == 50
        wait_until(lambda: "training run" not in win.status_jobs.text(), timeout=30)

        # 4. Harness: Rename… on a tool carries to the hook matcher and the skills (#35 item 3);
        # a rename typed into the name field by hand leaves the matcher behind, and Problems
        # says so. Both are undone: the day goes on with the harness as saved.
        win.show_page("harness")
        page = win.harness_page
        idle()
        before = [t.name for t in win.ctx.session.harness.tools]
        assert page.tree.select_name("tools", "check_stock")
        ed = page.tool_editor

        def rename_in_dialog() -> None:
            dialog = ed.open_rename
            if dialog is None:
                QTimer.singleShot(20, rename_in_dialog)
                return
            dialog.name.setText("stock_level")
            dialog.ok.click()

        QTimer.singleShot(0, rename_in_dialog)
        ed.rename_button.click()
        harness = win.ctx.session.harness
        assert harness.tool("stock_level") is not None and harness.tool("check_stock") is None
        hook = next(h for h in harness.hooks if h.name == "link-number-range")
        assert "stock_level" in hook.matcher.split("|") and "check_stock" not in hook.matcher
        assert not any("check_stock" in s.body for s in harness.skills)
        page.undo()
        assert [t.name for t in win.ctx.session.harness.tools] == before
        assert page.tree.select_name("tools", "check_stock")
        ed = page.tool_editor
        ed.name.setText("stock_level")
        ed.edited("name")
        ed.flush()
        page._select("overview", None)
        wait_until(page.overview.isVisible)
        page.overview.refresh_problems()
        problems = [page.overview.problems.item(i).text()
                    for i in range(page.overview.problems.count())]  # fmt: skip
        assert any("link-number-range" in t and "'check_stock'" in t for t in problems), problems
        page.undo()
        assert [t.name for t in win.ctx.session.harness.tools] == before

        # 5. Chat: the server card shows the trained adapter; Start serves it
        win.show_page("chat")
        chat = win.page("chat")
        idle()
        chat_panel = chat.servers["A"]
        wait_until(lambda: chat_panel.adapter.currentData() == adapter, timeout=60)
        assert chat_panel.model.currentData() == DEMO_MODEL_NAME
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

        # 6. Evaluate, on Chat's server behind a front that stalls: the items end as
        # infrastructure errors, apart from the scores; "Retry failed" reruns only them once
        # the server answers again (#35 item 5)
        front = _StallingFront(endpoint.base_url)
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
        assert view.picker.model.currentData() == DEMO_MODEL_NAME
        assert view.picker.adapter.currentData() == adapter
        view.base_url.setText(front.url)
        for key, b in view.suite_buttons.items():
            b.setChecked(key == "ls-qa")
        view.limit.setValue(2)
        view.max_tokens.setValue(24)
        view.call_timeout.setValue(20)  # a stalled call ends here; a real one takes ~1-3 s
        view.item_timeout.setValue(300)
        wait_until(lambda: view.size.text().startswith("2 items"), timeout=60)
        view.start_button.click()
        wait_until(lambda: view.result is not None, timeout=900)
        idle()
        first = view.result
        assert (first.total, first.errors, first.passed) == (2, 2, 0), first
        assert front.stalled >= 2 and front.passed == 0
        view.results_button.click()
        results = evaluate.results
        wait_until(lambda: results.view is not None and results.view.run.id == first.id)
        idle()
        assert sorted(r.status for r in results.view.items) == ["error", "error"]
        if first.status.value == "done":  # the server answered its health check: a done run
            retry = results.retry_button  # with error items, "Retry 2 failed items"
            assert retry.text() == "Retry 2 failed items"
            assert "infrastructure error" in results.banner.text.text()
        else:  # its health check timed out too (a starved machine): the run failed with the
            retry = results.resume_button  # server named, and Resume reruns the error items
            assert "stopped answering" in results.banner.text.text()
            assert "runs the 2 error item(s) again" in results.banner.text.text()
        assert retry.isVisibleTo(results)
        _grab(win, "golden-errors.png")
        front.stalling.clear()
        retry.click()
        wait_until(lambda: view.result is not None and view.result.id == first.id, timeout=60)
        wait_until(lambda: view.result.status.value == "done" and view.result.errors == 0,
                   timeout=900)  # fmt: skip
        idle()
        again = view.result
        assert again.done == 2 and again.errors == 0
        assert front.passed >= 2  # both items answered by the real server, nothing else rerun

        # 7. Results: the two items of that run, answered
        view.results_button.click()
        wait_until(lambda: results.view is not None and results.view.run.id == first.id)
        results.refresh(select=first.id)
        wait_until(lambda: results.view is not None and results.view.run.errors == 0, timeout=60)
        idle()
        assert len(results.items.records()) == 2
        assert "error" not in {r.status for r in results.view.items}  # answered, rightly or not
        assert adapter in again.model or again.adapter == adapter
        _grab(win, "golden-results.png")

        # 8. Chat again, last (closing the qasync loop below ends what runs on it): a long
        # reply, the column header reads TTFT and tok/s while it streams, and Esc stops it
        # (#35 item 10). On the application's own loop (qasync): there a reply is an asyncio
        # task that can be cut off. A reply that ends before a reading is seen is asked again.
        win.show_page("chat")
        idle()
        chat.max_tokens.setValue(600)
        seen: dict[str, Any] = {}

        async def stream_then_escape() -> None:
            import asyncio

            seen["history"] = list(chat.lanes["A"].history)
            for ask in ("tell me a long story about a lighthouse keeper and her cat",
                        "write a long poem about the sea, at least twenty lines",
                        "list one hundred colours, one per line"):  # fmt: skip
                chat.composer.setText(ask)
                chat.send()
                while chat.busy and not LIVE.fullmatch(chat.columns["A"].status.text()):
                    await asyncio.sleep(0.02)
                seen["status"] = chat.columns["A"].status.text()
                if chat.busy:
                    break
                seen["history"] = list(chat.lanes["A"].history)
            assert LIVE.fullmatch(seen["status"]), seen
            win.activateWindow()
            chat.columns["A"].setFocus()
            for _ in range(50):  # the window manager's activation arrives as an event
                if win.isActiveWindow():
                    break
                await asyncio.sleep(0.05)
            QTest.keyClick(chat.columns["A"], Qt.Key.Key_Escape)
            seen["busy_after_esc"] = chat.busy
            await asyncio.sleep(0.2)

        run_qasync(qapp, stream_then_escape, 900)
        spin(100)
        assert seen["busy_after_esc"] is False and not chat.cancel_button.isVisibleTo(chat)
        stopped = chat.columns["A"].turns[-1]
        assert stopped.fault is not None and "Stopped" in stopped.fault.title.text()
        assert chat.lanes["A"].history == seen["history"]  # the stopped message is not in it
    finally:
        if front is not None:
            front.close()
        if chat_panel is not None:
            chat_panel.shutdown()
        shut(win, timeout=300)
