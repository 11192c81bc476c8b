"""Model servers and the client the agent loop talks to (DESIGN.md §3, Serving and Latency).

* `engines` — how `transformers serve` and vLLM are started (interpreter, flags, model id);
* `server.ManagedServer` — a server as a child process: start, health-wait, stop, restart;
* `client.OpenAIChatClient` — async streaming OpenAI-compatible client (a `ChatClient`);
* `latency` — `LatencyStats` (P50/P95/P99), per-request rows, the chat latency line;
* `metrics` — vLLM's /metrics histograms (the server's view of latency);
* `bench` — `hat bench latency`: tasks replayed through the loop;
* `chat.ChatSession` — `hat chat` and the studio chat: history across turns, stored latency.
"""

from core.serving.client import GenerationOptions, OpenAIChatClient, tokenizer_counter
from core.serving.engines import ENGINES, EngineConfig, EngineError, build_launch
from core.serving.latency import LatencyStats, MetricSummary, RecordingClient, request_row
from core.serving.server import ManagedServer, ServerError, free_port, port_in_use

__all__ = [
    "ENGINES",
    "EngineConfig",
    "EngineError",
    "GenerationOptions",
    "LatencyStats",
    "ManagedServer",
    "MetricSummary",
    "OpenAIChatClient",
    "RecordingClient",
    "ServerError",
    "build_launch",
    "free_port",
    "port_in_use",
    "request_row",
    "tokenizer_counter",
]
