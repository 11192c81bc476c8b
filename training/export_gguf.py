"""Write a Llama-architecture transformers model as a GGUF file with llama.cpp's gguf-py writer.

    write_gguf(model, tokenizer, path, name=..., dtype="f16", tokenizer_gguf=None)

No converter from Hugging Face to GGUF is installable from the package index as a library:
llama.cpp's `convert_hf_to_gguf.py` ships in its repository, not in the `gguf` package, and the
sdist of llama-cpp-python that vendors it builds llama.cpp (C++) to install. The `gguf` package
(llama.cpp's gguf-py, already a dependency of the training extra: transformers reads GGUF with
it) has the writer, the tensor-name maps and the constants, so the Llama case is written here
the way the converter writes it:

- metadata `llama.*` from the config (context, sizes, heads, RMS epsilon, RoPE base);
- tensors renamed by gguf's own name map (`model.layers.3.self_attn.q_proj` -> `blk.3.attn_q`),
  the q and k projections permuted as llama.cpp's RoPE expects (transformers' GGUF loader
  undoes exactly this), 1-D tensors (norms) in F32 and the rest in F16, BF16 or F32; the LM head
  left out when tied to the embeddings (GGUF readers tie it back when `output.weight` is absent);
- the tokenizer: copied key by key from the base model's GGUF when it came from one and has the
  same vocabulary, else built from the transformers tokenizer (byte-level BPE only: a
  SentencePiece vocabulary needs llama.cpp's converter). Either way `tokenizer.ggml.pre` (how
  llama.cpp splits text before merging) is named after the tokenizer the model was trained and
  served with, when it is one llama.cpp names: transformers' GGUF import does not rebuild every
  pre-tokenizer (the demo's SmolLM2 GGUF says `smollm`, digits split off first; the imported
  tokenizer splits as GPT-2 does), and llama.cpp should cut text as HAT's chat did.

Other architectures raise `UnsupportedModel` naming the one supported: the caller says "export
it as a Hugging Face folder instead".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SUPPORTED_MODEL_TYPES = ("llama",)
DTYPES = ("f32", "f16", "bf16")


class UnsupportedModel(ValueError):
    """The model cannot be written as GGUF here (the message says why and what to do)."""


# ----------------------------------------------------------------------------- checks


def rope_settings(config: Any) -> tuple[float, str]:
    """(RoPE base, RoPE type) of a config, transformers 5 (`rope_parameters`) or 4
    (`rope_theta` + `rope_scaling`)."""
    params = getattr(config, "rope_parameters", None) or {}
    scaling = getattr(config, "rope_scaling", None) or {}
    theta = params.get("rope_theta", getattr(config, "rope_theta", None) or 10000.0)
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    return float(theta), str(kind)


def check_supported(config: Any) -> None:
    """UnsupportedModel unless the config is a plain Llama this writer can express."""
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModel(
            f"GGUF export supports Llama-architecture models (model_type "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}); this one is {model_type!r}: export it with "
            "--format hf and convert it with llama.cpp's convert_hf_to_gguf.py"
        )
    _, rope_type = rope_settings(config)
    if rope_type != "default":
        raise UnsupportedModel(
            f"GGUF export writes default RoPE only; this Llama uses {rope_type!r} RoPE scaling: "
            "export it with --format hf and convert it with llama.cpp's convert_hf_to_gguf.py"
        )
    for flag in ("attention_bias", "mlp_bias"):
        if getattr(config, flag, False):
            raise UnsupportedModel(
                f"GGUF export writes Llama without biases; this one has {flag}=true: export "
                "it with --format hf"
            )


def head_dim(config: Any) -> int:
    return int(
        getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    )


# ----------------------------------------------------------------------------- tensors


def permute_qk(weights: Any, n_head: int, n_head_kv: int | None = None) -> Any:
    """llama.cpp's q/k row order for its RoPE (convert_hf_to_gguf.py `LlamaModel.permute`):
    per head, the two rotary halves are interleaved instead of stacked. Works on numpy arrays
    and torch tensors (reshape / swapaxes)."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    shape = weights.shape
    return (
        weights.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:])
        .swapaxes(1, 2)
        .reshape(shape)
    )


def tensor_plan(model: Any) -> list[tuple[str, str]]:
    """[(transformers state-dict key, GGUF tensor name)] for every weight the GGUF holds;
    UnsupportedModel for a weight the Llama map has no name for."""
    import gguf

    config = model.config
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    tied = bool(getattr(config, "tie_word_embeddings", False))
    plan: list[tuple[str, str]] = []
    for key in model.state_dict():
        if key.endswith("rotary_emb.inv_freq"):
            continue
        if tied and key == "lm_head.weight":
            continue  # a GGUF without output.weight ties the head to token_embd
        stem, dot, suffix = key.rpartition(".")
        mapped = name_map.get_name(stem) if dot else None
        if mapped is None:
            raise UnsupportedModel(f"no GGUF name for the tensor {key!r} of this Llama model")
        plan.append((key, f"{mapped}.{suffix}"))
    return plan


def _as_numpy(tensor: Any, dtype: str) -> tuple[Any, Any]:
    """(array, raw GGML type or None) of one tensor in the GGUF's storage type."""
    import gguf
    import torch

    if tensor.ndim <= 1 or dtype == "f32":
        return tensor.to(torch.float32).contiguous().numpy(), None
    if dtype == "f16":
        return tensor.to(torch.float16).contiguous().numpy(), None
    bits = tensor.to(torch.bfloat16).contiguous().view(torch.int16).numpy()
    return bits, gguf.GGMLQuantizationType.BF16


# ----------------------------------------------------------------------------- tokenizer


class _Field:
    """A GGUF metadata field read back without version-specific reader helpers."""

    def __init__(self, field: Any) -> None:
        self.field = field
        self.types = list(field.types)

    def value(self) -> Any:
        import gguf

        field = self.field
        main = self.types[0]
        if main == gguf.GGUFValueType.ARRAY:
            sub = self.types[-1]
            if sub == gguf.GGUFValueType.STRING:
                return [bytes(field.parts[i]) for i in field.data]
            return [field.parts[i].tolist()[0] for i in field.data]
        if main == gguf.GGUFValueType.STRING:
            return bytes(field.parts[field.data[0]])
        return field.parts[field.data[0]].tolist()[0]


_ARRAY_ITEM_TYPES = ("STRING", "INT32", "FLOAT32", "BOOL")


def gguf_vocabulary(path: Path) -> dict[str, _Field]:
    """The `tokenizer.*` fields of a GGUF file."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    return {k: _Field(f) for k, f in reader.fields.items() if k.startswith("tokenizer.")}


def tokenizer_tokens(tokenizer: Any) -> list[str]:
    """Every token of a transformers tokenizer in id order (added tokens included)."""
    vocab = tokenizer.get_vocab()
    size = max(vocab.values()) + 1 if vocab else 0
    tokens = [f"[PAD{i}]" for i in range(size)]
    for token, index in vocab.items():
        tokens[index] = token
    return tokens


def matches_vocabulary(fields: dict[str, _Field], tokenizer: Any, vocab_size: int) -> str | None:
    """None when the GGUF's vocabulary is the tokenizer's, else why not."""
    tokens_field = fields.get("tokenizer.ggml.tokens")
    if tokens_field is None:
        return "it has no tokenizer.ggml.tokens"
    stored = [t.decode("utf-8", errors="replace") for t in tokens_field.value()]
    if len(stored) != vocab_size:
        return f"it has {len(stored)} tokens, the model {vocab_size}"
    mine = tokenizer_tokens(tokenizer)
    differ = [i for i, (a, b) in enumerate(zip(stored, mine, strict=False)) if a != b]
    if differ or len(mine) > len(stored):
        first = differ[0] if differ else len(stored)
        return f"its tokens differ from the model's tokenizer (first at id {first})"
    return None


def copy_vocabulary(
    writer: Any, fields: dict[str, _Field], chat_template: str | None, pre: str | None
) -> None:
    """The base GGUF's tokenizer keys, as they were, but for the chat template and the
    pre-tokenizer name, which are the model's own tokenizer's when it has them."""
    import gguf

    own = {"tokenizer.chat_template": chat_template, "tokenizer.ggml.pre": pre}
    for key, field in fields.items():
        if own.get(key):
            continue
        main = field.types[0]
        value = field.value()
        if main == gguf.GGUFValueType.ARRAY:
            sub = field.types[-1]
            if sub.name not in _ARRAY_ITEM_TYPES or not value:
                continue  # nothing a tokenizer reader needs is stored that way
            writer.add_array(key, value)
        else:
            writer.add_key_value(key, value, main)
    if chat_template:
        writer.add_chat_template(chat_template)
    if pre:
        writer.add_tokenizer_pre(pre)


# llama.cpp's pre-tokenizer names (`tokenizer.ggml.pre`) of the byte-level BPE splits it knows.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SPLITS = {_LLAMA3_SPLIT: "llama-bpe", _QWEN2_SPLIT: "qwen2"}


def pre_tokenizer_name(tokenizer_json: dict[str, Any]) -> str:
    """llama.cpp's name for how this byte-level BPE tokenizer splits text before merging;
    UnsupportedModel for a split it has no name for here."""
    pre = tokenizer_json.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    kinds = [s.get("type") for s in steps]
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
        return "gpt-2"
    if kinds == ["Digits", "ByteLevel"] and steps[0].get("individual_digits"):
        return "smollm"
    if kinds == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True):
        pattern = (steps[0].get("pattern") or {}).get("Regex")
        if pattern in _SPLITS:
            return _SPLITS[pattern]
    raise UnsupportedModel(
        f"cannot tell llama.cpp's pre-tokenizer for this tokenizer (pre-tokenizer {kinds}): "
        "export it with --format hf and convert it with llama.cpp's convert_hf_to_gguf.py"
    )


def own_pre_tokenizer(tokenizer: Any) -> str | None:
    """llama.cpp's pre-tokenizer name for the model's own (byte-level BPE) tokenizer, or None
    when it cannot be told: a vocabulary copied from the base GGUF then keeps the base's."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    try:
        return pre_tokenizer_name(json.loads(backend.to_str()))
    except UnsupportedModel:
        return None


def build_vocabulary(writer: Any, tokenizer: Any, vocab_size: int) -> None:
    """A byte-level BPE tokenizer's keys, built the way llama.cpp's converter builds them."""
    import gguf

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise UnsupportedModel("the tokenizer has no tokenizer.json (a slow tokenizer)")
    data = json.loads(backend.to_str())
    model = data.get("model") or {}
    decoder = data.get("decoder") or {}
    if (
        model.get("type") != "BPE"
        or model.get("byte_fallback")
        or decoder.get("type") != "ByteLevel"
    ):
        raise UnsupportedModel(
            "GGUF export builds byte-level BPE tokenizers only (this one is "
            f"{model.get('type')} with a {decoder.get('type')} decoder): export it with "
            "--format hf and convert it with llama.cpp's convert_hf_to_gguf.py"
        )
    pre = pre_tokenizer_name(data)
    tokens = tokenizer_tokens(tokenizer)
    if len(tokens) > vocab_size:
        raise UnsupportedModel(
            f"the tokenizer has {len(tokens)} tokens, more than the model's {vocab_size}"
        )
    tokens += [f"[PAD{i}]" for i in range(len(tokens), vocab_size)]
    added = {t.content: t.special for t in tokenizer.added_tokens_decoder.values()}
    types = []
    for token in tokens:
        if re.fullmatch(r"\[PAD\d+\]", token) and token not in tokenizer.get_vocab():
            types.append(gguf.TokenType.UNUSED)
        elif token in added:
            types.append(gguf.TokenType.CONTROL if added[token] else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    merges = model.get("merges") or []
    merges = [" ".join(m) if isinstance(m, list) else m for m in merges]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types([int(t) for t in types])
    writer.add_token_merges(merges)
    for kind in ("bos", "eos", "unk", "pad"):
        token_id = getattr(tokenizer, f"{kind}_token_id", None)
        if isinstance(token_id, int) and 0 <= token_id < vocab_size:
            getattr(writer, f"add_{kind}_token_id")(token_id)
    probe = tokenizer("a")["input_ids"]
    bos = tokenizer.bos_token_id
    writer.add_add_bos_token(bool(probe) and bos is not None and probe[0] == bos)
    if tokenizer.chat_template:
        writer.add_chat_template(tokenizer.chat_template)


# ----------------------------------------------------------------------------- the file


def write_gguf(
    model: Any,
    tokenizer: Any,
    path: Path,
    *,
    name: str,
    dtype: str = "f16",
    tokenizer_gguf: Path | None = None,
    on_note: Any = None,
) -> dict[str, Any]:
    """Write `model` (a transformers Llama) and `tokenizer` to the GGUF file `path`.

    Returns what was written: tensor count, dtype, where the tokenizer came from."""
    import gguf
    import torch

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    config = model.config
    check_supported(config)
    plan = tensor_plan(model)
    theta, _ = rope_settings(config)
    n_head = int(config.num_attention_heads)
    n_kv = int(getattr(config, "num_key_value_heads", None) or n_head)
    dim = head_dim(config)
    vocab_size = int(config.vocab_size)

    writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(name)
    file_type = {"f32": "ALL_F32", "f16": "MOSTLY_F16", "bf16": "MOSTLY_BF16"}[dtype]
    writer.add_file_type(int(gguf.LlamaFileType[file_type]))
    writer.add_vocab_size(vocab_size)
    writer.add_context_length(int(config.max_position_embeddings))
    writer.add_embedding_length(int(config.hidden_size))
    writer.add_block_count(int(config.num_hidden_layers))
    writer.add_feed_forward_length(int(config.intermediate_size))
    writer.add_rope_dimension_count(dim)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv)
    writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    writer.add_rope_freq_base(theta)
    if dim != config.hidden_size // n_head:
        writer.add_key_length(dim)
        writer.add_value_length(dim)

    source = "tokenizer.json"
    chat_template = getattr(tokenizer, "chat_template", None)
    copied = False
    if tokenizer_gguf is not None and tokenizer_gguf.is_file():
        fields = gguf_vocabulary(tokenizer_gguf)
        why = matches_vocabulary(fields, tokenizer, vocab_size)
        if why is None:
            pre = own_pre_tokenizer(tokenizer)
            stored = fields.get("tokenizer.ggml.pre")
            before = stored.value().decode("utf-8", "replace") if stored is not None else None
            if pre and before and pre != before and on_note is not None:
                on_note(
                    f"pre-tokenizer {pre!r}, as the model's tokenizer splits text (the base "
                    f"GGUF says {before!r})"
                )
            template = chat_template if isinstance(chat_template, str) else None
            copy_vocabulary(writer, fields, template, pre)
            source = f"base GGUF {tokenizer_gguf.name}"
            copied = True
        elif on_note is not None:
            on_note(f"the base GGUF's vocabulary is not used ({why}); built from tokenizer.json")
    if not copied:
        build_vocabulary(writer, tokenizer, vocab_size)

    state = model.state_dict()
    with torch.no_grad():
        for key, gguf_name in plan:
            tensor = state[key].detach().to("cpu")
            if gguf_name.endswith("attn_q.weight"):
                tensor = permute_qk(tensor, n_head, n_head)
            elif gguf_name.endswith("attn_k.weight"):
                tensor = permute_qk(tensor, n_head, n_kv)
            array, raw = _as_numpy(tensor, dtype)
            writer.add_tensor(gguf_name, array, raw_dtype=raw)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    writer.close()
    return {"tensors": len(plan), "dtype": dtype, "tokenizer": source}
