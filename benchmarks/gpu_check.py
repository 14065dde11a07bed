"""GPU check of the SFT recipe: the project's own loop (training/sft.py `train_loop_per_worker`) on one
CUDA device in bf16 — full fine-tuning under DeepSpeed ZeRO-3 and LoRA through peft — with the
HF checkpoint each writes reloaded and scored, and the loop's tokens/s at a few batch sizes.

    # on the GPU machine (no Ray, no index: DeepSpeed and pydantic travel as wheels in .whl/)
    PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --out $OUT/gpu_check.json
    # the same checks on this machine's CPUs, tiny and quick
    DS_ACCELERATOR=cpu .venv/bin/python benchmarks/gpu_check.py --device cpu --preset tiny --tokenizer bpe \\
        --batch-sizes 4 --steps 8 --log-every 2 --max-length 160 --eval-examples 8 --out /tmp/gpu_check.json

What runs, per mode and batch size, each through `train_loop_per_worker` exactly as Ray Train calls it
(one worker; benchmarks/gpu_check_ray_shim.py stands in for Ray, whose wheel is too big to travel):

- zero3      configs/sft/gpu_zero3.yaml + configs/sft/zero3.json with bf16 on: full fine-tuning under
             DeepSpeed ZeRO-3 with DeepSpeed's FusedAdam (JIT-built first, in the background; torch's
             AdamW through DeepSpeed when it does not build);
- lora       configs/sft/lora.yaml as it is (no DeepSpeed: the plain torch path), the loop run under
             torch.autocast(bfloat16, cache_enabled=False) since that path has no bf16 switch of its own;
- lora_zero2 configs/sft/lora.yaml + configs/sft/zero2.json with bf16 on: LoRA under DeepSpeed ZeRO-2.

The model is a randomly initialised Gemma-3 text model (the shape of the project's Gemma 3 270M base
by default, `--preset`), written as an HF checkpoint and given to the loop as `base_model`, the way the
real base reaches it (training/base_model.py); `--arch llama` uses the loop's own from-scratch Llama
(`build_model` from `ModelShape`) instead. The tokenizer is the base's (`data/models/*/`, or a copy in
`.gpu_check/tokenizer/`, whose tokenizer.json may be gzipped to travel), else a byte-level BPE trained
here (training/tokenizer.py). The examples are the project's: planner and coder pairs
(training/sft_data.py `role_pairs`, `encode`) from the gold programs of the open-world benchmark
records (benchmarks/results/open_world-failures-*.jsonl) and the solutions of soay/intents/aminer.yaml.

A check passes when the loop finishes, the checkpoint holds config.json + safetensors (+ the adapter
for LoRA) and reloads with transformers, and its mean loss on training examples is below the initial
model's (by `--min-drop`); for LoRA the adapter loaded on the base with peft scores as the merged
model does. Prints one `CHECK` line per check, rewrites the `--out` JSON after each one (so a killed
run leaves what it had), and exits 1 if any check failed. The FusedAdam build is reported, not
required.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import json
import logging
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for p in (str(ROOT), str(HERE)):  # run as a script from anywhere; the project is not installed there
    if p not in sys.path:
        sys.path.insert(0, p)

MODES = ("zero3", "lora", "lora_zero2")
RECIPES = {
    "zero3": ("configs/sft/gpu_zero3.yaml", "configs/sft/zero3.json"),
    "lora": ("configs/sft/lora.yaml", None),
    "lora_zero2": ("configs/sft/lora.yaml", "configs/sft/zero2.json"),
}
# Gemma 3 text shapes: "gemma3-270m" is the project's base (the GGUF's config), random weights
PRESETS: dict[str, dict[str, int]] = {
    "gemma3-270m": dict(hidden_size=640, intermediate_size=2048, num_hidden_layers=18, num_attention_heads=4,
                        num_key_value_heads=1, head_dim=256, sliding_window=512),
    "small": dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=6, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=64, sliding_window=512),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=32, sliding_window=64),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.json.gz", "tokenizer_config.json", "special_tokens_map.json",
                   "tokenizer.model", "chat_template.jinja", "added_tokens.json")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON of results")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cuda (default) or cpu (a local proof)")
    parser.add_argument("--modes", default="zero3,lora,lora_zero2", help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--batch-sizes", default="8,32", help="per-device batch sizes, comma-separated")
    parser.add_argument("--mode-batch-sizes", action="append", default=[], metavar="MODE=B1,B2",
                        help="batch sizes for one mode (repeatable), e.g. lora_zero2=16")
    parser.add_argument("--steps", type=int, default=40, help="optimiser steps per run (max_steps)")
    parser.add_argument("--log-every", type=int, default=5, help="the loop's log_every; steady tokens/s is measured "
                        "between its first and last in-loop report")
    parser.add_argument("--max-length", type=int, default=384, help="the recipe's max_length (longer examples dropped)")
    parser.add_argument("--arch", default="gemma3", choices=["gemma3", "llama"],
                        help="gemma3: random Gemma-3 checkpoint as base_model; llama: the loop's from-scratch build_model")
    parser.add_argument("--preset", default="gemma3-270m", choices=sorted(PRESETS), help="model shape")
    parser.add_argument("--tokenizer", default=None,
                        help="tokenizer directory, or 'bpe' to train the project's BPE here; default: data/models/*/ "
                             "(the base's), then .gpu_check/tokenizer, then bpe")
    parser.add_argument("--bpe-vocab", type=int, default=2000, help="vocabulary of a BPE tokenizer trained here")
    parser.add_argument("--lr-full", type=float, default=1e-3,
                        help="learning rate of zero3 (the recipe's 2e-5 is for a pretrained model; this one is random)")
    parser.add_argument("--lr-lora", type=float, default=1e-3, help="learning rate of the LoRA modes")
    parser.add_argument("--examples", type=int, default=0, help="cap on training examples (0: all)")
    parser.add_argument("--eval-examples", type=int, default=64, help="training examples the before/after loss is read on")
    parser.add_argument("--min-drop", type=float, default=0.05,
                        help="zero3: the loss on training examples must fall by at least this fraction")
    parser.add_argument("--min-drop-lora", type=float, default=0.02,
                        help="the LoRA modes: likewise (an adapter on a random base moves the loss less)")
    parser.add_argument("--adapter-tolerance", type=float, default=0.01,
                        help="relative difference allowed between adapter-on-base and merged-model losses")
    parser.add_argument("--fused-adam", default="auto", choices=["auto", "off"],
                        help="auto: JIT-build DeepSpeed's FusedAdam (CUDA only), torch AdamW if it fails; off: torch AdamW")
    parser.add_argument("--fused-adam-timeout", type=float, default=240.0, help="seconds the FusedAdam build may take")
    parser.add_argument("--serial-build", action="store_true",
                        help="wait for the FusedAdam build before any run (default: build while the setup and the "
                             "plain-torch LoRA runs go on)")
    parser.add_argument("--budget-s", type=float, default=270.0,
                        help="no new run starts after this many seconds from the start (the rest are reported skipped)")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; known: {MODES}")
    default_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    args.sizes = {m: list(default_sizes) for m in args.modes}
    for item in args.mode_batch_sizes:
        mode, _, sizes = item.partition("=")
        if mode not in args.sizes:
            parser.error(f"--mode-batch-sizes {item!r}: {mode!r} is not among --modes")
        args.sizes[mode] = [int(b) for b in sizes.split(",") if b.strip()]
    return args


class Results:
    """The JSON of results, rewritten (atomically) after every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.t0 = time.perf_counter()
        self.data: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "checks": []}
        path.parent.mkdir(parents=True, exist_ok=True)

    def check(self, name: str, status: str, line: str, **fields: Any) -> dict[str, Any]:
        """status: PASS, FAIL, INFO (not counted) or SKIP (counted as not run)."""
        entry = {"name": name, "status": status, "summary": line, **fields}
        self.data["checks"].append(entry)
        print(f"CHECK {name}: {status} {line} [t={time.perf_counter() - self.t0:.0f}s]", flush=True)
        self.save()
        return entry

    def save(self) -> None:
        checks = self.data["checks"]
        self.data["ok"] = bool(checks) and all(c["status"] in ("PASS", "INFO") for c in checks) and any(
            c["status"] == "PASS" for c in checks)
        tmp = self.path.with_name(self.path.name + ".partial")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        tmp.replace(self.path)


# --------------------------------------------------------------------------------------- setup


def environment(device: str) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(), "torch": torch.__version__,
                           "torch_cuda": torch.version.cuda, "cpu_count": os.cpu_count()}
    for name in ("transformers", "peft", "deepspeed", "pydantic", "accelerate", "tokenizers", "safetensors"):
        try:
            env[name] = __import__(name).__version__
        except Exception as exc:  # noqa: BLE001 - reported, the checks that need it fail on their own
            env[name] = f"unavailable: {type(exc).__name__}: {exc}"
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, capability=f"{props.major}.{props.minor}", gpu_memory_gib=round(props.total_memory / 2**30, 1),
                   bf16_supported=torch.cuda.is_bf16_supported())
        from torch.utils.cpp_extension import CUDA_HOME  # where DeepSpeed's JIT builds look for nvcc

        env["cuda_home"] = CUDA_HOME
        nvcc = shutil.which("nvcc") or (CUDA_HOME and shutil.which("nvcc", path=os.path.join(CUDA_HOME, "bin")))
        if nvcc:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
            env["nvcc"] = out[-1] if out else nvcc
    return env


def start_fused_adam_build(workdir: Path) -> tuple[subprocess.Popen | None, Path]:
    """JIT-build DeepSpeed's FusedAdam in a child process (its cache is what the loop's FusedAdam then loads)."""
    log = workdir / "fused_adam_build.log"
    code = ("import time; t = time.perf_counter()\n"
            "from deepspeed.ops.op_builder import FusedAdamBuilder\n"
            "FusedAdamBuilder().load()\n"
            "print(f'FUSED_ADAM_BUILT {time.perf_counter() - t:.1f}', flush=True)\n")
    handle = log.open("w")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=handle, stderr=subprocess.STDOUT, cwd=str(workdir))
    return proc, log


def finish_fused_adam_build(proc: subprocess.Popen | None, log: Path, started: float, timeout: float,
                            results: Results) -> bool:
    if proc is None:
        return False
    try:
        proc.wait(timeout=max(1.0, timeout - (time.perf_counter() - started)))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = log.read_text(errors="replace") if log.exists() else ""
    ok = proc.returncode == 0 and "FUSED_ADAM_BUILT" in text
    seconds = round(time.perf_counter() - started, 1)
    if ok:
        results.check("fused_adam_build", "INFO", f"DeepSpeed FusedAdam JIT-built in {seconds} s: zero3/lora_zero2 use it",
                      built=True, seconds=seconds)
    else:
        tail = text.strip().splitlines()[-25:]
        results.check("fused_adam_build", "INFO", f"FusedAdam did not build (rc {proc.returncode}, {seconds} s): "
                      "DeepSpeed runs use torch AdamW (torch_adam)", built=False, seconds=seconds, log_tail=tail)
    return ok


def open_world_triplets() -> list[SimpleNamespace]:
    """Triplet-like records (query, solution, code, combination.id) that `role_pairs` reads, from the gold
    programs of the open-world benchmark records and the solutions of the AMiner combinations."""
    import yaml

    solutions = {c["id"]: c["solution"] for c in yaml.safe_load((ROOT / "soay/intents/aminer.yaml").read_text())["combinations"]}
    found: dict[str, tuple[str, str, str]] = {}
    for path in sorted((ROOT / "benchmarks/results").glob("open_world-failures-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            gold = record.get("gold") or {}
            if gold.get("program") and gold.get("intent") in solutions:
                found.setdefault(record["question"], (record["id"], gold["intent"], gold["program"]))
    return [SimpleNamespace(query=q, solution=solutions[intent], code=code, combination=SimpleNamespace(id=intent))
            for q, (_, intent, code) in sorted(found.items(), key=lambda kv: (kv[1][0], kv[0]))]


def phrasing_pairs() -> list[tuple[str, str]]:
    """Planner pairs from the combinations' own phrasings (a fallback when the benchmark records are gone)."""
    import yaml

    from soay.prompts import planner_prompt, target

    values = {"name": "Ann Lee", "organization": "Tsinghua University", "interest": "graph neural networks",
              "publication_info": "Attention Is All You Need", "field": "machine learning", "affiliation": "MIT"}
    pairs = []
    for c in yaml.safe_load((ROOT / "soay/intents/aminer.yaml").read_text())["combinations"]:
        for phrasings in (c.get("phrasings") or {}).values():
            for p in phrasings:
                with contextlib.suppress(KeyError, IndexError, ValueError):
                    pairs.append((planner_prompt(p.format(**values)), target(c["solution"])))
    return list(dict.fromkeys(pairs))


def prepare_tokenizer(choice: str | None, texts: list[str], out: Path, vocab: int) -> tuple[Any, dict[str, Any]]:
    """The tokenizer directory the loop reads (`out`), from the base's, a carried copy, or trained here."""
    from transformers import AutoTokenizer

    from training.tokenizer import save_tokenizer, train_tokenizer

    candidates: list[Path] = []
    if choice and choice != "bpe":
        candidates = [Path(choice)]
    elif choice is None:
        candidates = [*sorted(p for p in (ROOT / "data/models").glob("*") if p.is_dir()), ROOT / ".gpu_check/tokenizer"]
    for source in candidates:
        if not (source / "tokenizer_config.json").is_file():
            if choice:
                raise FileNotFoundError(f"--tokenizer {source}: no tokenizer_config.json there")
            continue
        out.mkdir(parents=True, exist_ok=True)
        for name in TOKENIZER_FILES:
            if (source / name).is_file():
                shutil.copyfile(source / name, out / name)
        if (out / "tokenizer.json.gz").is_file():
            with gzip.open(out / "tokenizer.json.gz", "rb") as src, (out / "tokenizer.json").open("wb") as dst:
                shutil.copyfileobj(src, dst)
            (out / "tokenizer.json.gz").unlink()
        tokenizer = AutoTokenizer.from_pretrained(out)
        return tokenizer, {"source": str(source), "class": type(tokenizer).__name__, "vocab": len(tokenizer)}
    tokenizer = train_tokenizer(texts, vocab)
    save_tokenizer(tokenizer, out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    return tokenizer, {"source": f"byte-level BPE trained here (training/tokenizer.py, vocab_size={vocab})",
                       "class": type(tokenizer).__name__, "vocab": len(tokenizer)}


def write_gemma3_base(shape: dict[str, int], tokenizer: Any, out: Path, seed: int) -> int:
    """A randomly initialised Gemma-3 text model of `shape` as an HF checkpoint (float32, safetensors)."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    layers = shape["num_hidden_layers"]
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape["hidden_size"],
        intermediate_size=shape["intermediate_size"],
        num_hidden_layers=layers,
        num_attention_heads=shape["num_attention_heads"],
        num_key_value_heads=shape["num_key_value_heads"],
        head_dim=shape["head_dim"],
        query_pre_attn_scalar=shape["head_dim"],
        sliding_window=shape["sliding_window"],
        layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    n = sum(p.numel() for p in model.parameters())
    del model
    return n


# ------------------------------------------------------------------------------------- helpers


def mean_loss(model: Any, examples: list[dict[str, list[int]]], pad_id: int, device: str, batch: int = 8) -> float:
    """Mean next-token loss over the examples' answer tokens (the loss the loop trains)."""
    import torch

    from training.sft_data import IGNORE, collate

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(examples), batch):
            b = {k: v.to(device) for k, v in collate(examples[i : i + batch], pad_id).items()}
            n = int((b["labels"][:, 1:] != IGNORE).sum())
            total += float(model(**b).loss.float()) * n
            count += n
    return total / max(count, 1)


def step_tokens(examples: list[dict[str, list[int]]], batch_size: int, seed: int, steps: int) -> list[int]:
    """Tokens (attention-mask ones) of each step of the loop, from the same batching it uses (one worker)."""
    from training.sft_data import length_grouped_batches

    out: list[int] = []
    epoch = 0
    while len(out) < steps:
        for batch in length_grouped_batches(examples, batch_size, seed + epoch, 1):
            out.append(sum(len(e["input_ids"]) for e in batch))
            if len(out) >= steps:
                break
        epoch += 1
    return out


def free_memory(device: str) -> None:
    import torch

    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def checkpoint_files(out: Path) -> dict[str, Any]:
    from safetensors import safe_open

    weights = sorted(p.name for p in out.glob("*.safetensors"))
    dtypes = set()
    for name in weights[:1]:
        with safe_open(str(out / name), framework="pt") as f:
            for key in list(f.keys())[:3]:
                dtypes.add(str(f.get_slice(key).get_dtype()))
    config = json.loads((out / "config.json").read_text()) if (out / "config.json").is_file() else {}
    return {"weights": weights, "weight_dtypes": sorted(dtypes), "config_dtype": config.get("dtype", config.get("torch_dtype")),
            "model_type": config.get("model_type"), "files": sorted(p.name for p in out.iterdir()),
            "bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file())}


class DeepSpeedWatch:
    """Records what `deepspeed.initialize` built (optimizer, ZeRO stage, dtype) for the current run; the
    loop's call goes through unchanged."""

    def __init__(self) -> None:
        self.record: dict[str, Any] = {}
        self.installed = False

    def install(self) -> None:
        import deepspeed

        if self.installed:
            return
        original = deepspeed.initialize

        def initialize(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            engine = result[0]
            with contextlib.suppress(Exception):
                self.record.update(
                    basic_optimizer=type(getattr(engine, "basic_optimizer", None)).__name__,
                    zero_optimizer=type(engine.optimizer).__name__,
                    zero_stage=engine.zero_optimization_stage(),
                    bf16=engine.bfloat16_enabled(),
                    module_dtype=str(next(engine.module.parameters()).dtype),
                    device=str(engine.device),
                )
            return result

        deepspeed.initialize = initialize
        self.installed = True


# ----------------------------------------------------------------------------------------- run


def run_one(mode: str, batch_size: int, ctx: SimpleNamespace, args: argparse.Namespace, results: Results) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import gpu_check_ray_shim as shim
    from training.sft import build_model, load_config, train_loop_per_worker

    name = f"{mode}-bs{batch_size}"
    recipe, ds_path = RECIPES[mode]
    run_dir = ctx.workdir / name
    out = run_dir / "model"
    shape = PRESETS[args.preset]
    overrides = [
        f"base_model={ctx.base_dir}" if ctx.base_dir else "base_model=null",
        f"tokenizer={ctx.tokenizer_dir}",
        f"batch_size={batch_size}", f"max_steps={args.steps}", f"log_every={args.log_every}",
        f"max_length={args.max_length}", "workers=1", f"use_gpu={'true' if args.device == 'cuda' else 'false'}",
        f"learning_rate={args.lr_full if mode == 'zero3' else args.lr_lora}", f"seed={args.seed}", "resume=false",
        *(f"shape.{k}={shape[k]}" for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")),
    ]
    if ds_path:
        overrides.append(f"deepspeed={ds_path}")
    config = load_config(ROOT / recipe, overrides)
    ds_config = None
    if ds_path:
        ds_config = json.loads((ROOT / ds_path).read_text())
        ds_config["bf16"] = {"enabled": True}
        if args.device == "cuda" and not ctx.fused_adam:  # the loop keeps an optimizer the config gives
            ds_config["optimizer"] = {"type": "AdamW", "params": {"lr": config.learning_rate,
                                                                   "weight_decay": config.weight_decay, "torch_adam": True}}
        ctx.watch.install()
    ctx.watch.record = {}
    loop_config = {"config": config.model_dump(mode="json"), "tokenizer_dir": str(ctx.tokenizer_dir),
                   "examples_path": str(ctx.examples_path), "output_dir": str(out), "deepspeed_config": ds_config}
    building = ctx.build_proc is not None and ctx.build_proc.poll() is None
    session = shim.start_session(ctx.device)
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    # cache_enabled=False: the loop runs inside one autocast region, and autocast's cache would keep the
    # first bf16 cast of each trainable weight (LoRA's B at zero) for every later step and for the merge
    autocast = (torch.autocast(device_type=args.device, dtype=torch.bfloat16, cache_enabled=False) if mode == "lora"
                else contextlib.nullcontext())
    print(f"--- {name}: {recipe}{' + ' + ds_path + ' (bf16 on)' if ds_path else ' under torch.autocast(bfloat16)'}, "
          f"{args.steps} steps", flush=True)
    started = time.perf_counter()
    with autocast:
        train_loop_per_worker(loop_config)
    if args.device == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - started
    peak = round(torch.cuda.max_memory_allocated() / 2**30, 2) if args.device == "cuda" else None
    final = session.reports[-1]
    inloop = [r for r in session.reports if r.checkpoint is None]
    steady = None
    if len(inloop) >= 2:
        a, b = inloop[0], inloop[-1]
        tokens = step_tokens(ctx.examples, batch_size, args.seed, args.steps)
        steady = sum(tokens[a.metrics["step"] : b.metrics["step"]]) / (b.at - a.at)
    free_memory(args.device)

    # --- the checkpoint: files, reload, loss on training examples ---------------------------------
    files = checkpoint_files(out)
    problems = []
    if not files["weights"] or "config.json" not in files["files"]:
        problems.append(f"checkpoint lacks config.json or *.safetensors: {files['files']}")
    AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).to(ctx.device)
    after = mean_loss(model, ctx.eval_examples, ctx.pad_id, ctx.device)
    del model
    free_memory(args.device)
    adapter_loss = None
    if mode.startswith("lora"):
        adapter = out / "adapter"
        if not (adapter / "adapter_config.json").is_file() or not list(adapter.glob("*.safetensors")):
            problems.append(f"no adapter (adapter_config.json + safetensors) in {adapter}")
        else:
            base = ctx.make_base().to(ctx.device)
            peft_model = PeftModel.from_pretrained(base, adapter).to(ctx.device)
            adapter_loss = mean_loss(peft_model, ctx.eval_examples, ctx.pad_id, ctx.device)
            del base, peft_model
            free_memory(args.device)
            if abs(adapter_loss - after) > args.adapter_tolerance * after:
                problems.append(f"adapter on base scores {adapter_loss:.4f}, merged model {after:.4f}")
    before = ctx.loss_before
    min_drop = args.min_drop_lora if mode.startswith("lora") else args.min_drop
    if not math.isfinite(after) or after > before * (1 - min_drop):
        problems.append(f"loss on training examples {before:.4f} -> {after:.4f}: not down by {min_drop:.0%}")
    opt = ctx.watch.record if ds_path else {"optimizer": "torch AdamW (the loop's plain path)", "weights": "float32",
                                             "compute": "bfloat16 autocast"}
    fields = {
        "mode": mode, "batch_size": batch_size, "steps": final.metrics.get("step"), "recipe": recipe,
        "deepspeed_config": ds_path and f"{ds_path} with bf16 enabled", "engine": opt,
        "eval_loss_before": round(before, 4), "eval_loss_after": round(after, 4),
        "adapter_eval_loss": None if adapter_loss is None else round(adapter_loss, 4),
        "train_loss_first_window": inloop[0].metrics["loss"] if inloop else None,
        "train_loss_last_window": final.metrics.get("loss"),
        "tokens_per_s_loop": round(final.metrics.get("tokens_per_s", 0.0)),
        "tokens_per_s_steady": None if steady is None else round(steady),
        "steady_window_steps": [inloop[0].metrics["step"], inloop[-1].metrics["step"]] if len(inloop) >= 2 else None,
        "loop_seconds": round(final.metrics.get("seconds", 0.0), 2), "wall_seconds": round(wall, 2),
        "peak_gpu_memory_gib": peak, "fused_adam_build_running": building, "checkpoint": files, "problems": problems,
    }
    label = opt.get("basic_optimizer", "") if ds_path else "torch AdamW"
    line = (f"loss {before:.3f} -> {after:.3f} (train window {fields['train_loss_first_window'] or float('nan'):.3f} -> "
            f"{fields['train_loss_last_window']:.3f}) | tokens/s loop {fields['tokens_per_s_loop']}, steady "
            f"{fields['tokens_per_s_steady']} | {fields['steps']} steps {fields['loop_seconds']} s | peak {peak} GiB | "
            f"{label}{' (build running)' if building else ''} | ckpt {','.join(files['weight_dtypes'])} "
            f"{files['bytes'] / 2**20:.0f} MiB")
    if problems:
        line += " | " + "; ".join(problems)
    results.check(name, "FAIL" if problems else "PASS", line, **fields)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    results = Results(args.out)
    if args.device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; the GPU machine reaches no network
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")  # ninja, for the JIT
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpu_check-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results.data.update(args={k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}, workdir=str(workdir))
    ctx = SimpleNamespace(workdir=workdir, build_proc=None, fused_adam=False, watch=DeepSpeedWatch(), base_dir=None)
    build_log = workdir / "fused_adam_build.log"
    build_started = time.perf_counter()
    try:
        import torch

        if args.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda but torch sees no CUDA device")
        ctx.device = "cuda:0" if args.device == "cuda" else "cpu"
        wants_ds = any(m in ("zero3", "lora_zero2") for m in args.modes)
        if args.device == "cuda" and wants_ds and args.fused_adam == "auto":
            cap = torch.cuda.get_device_capability(0)
            os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{cap[0]}.{cap[1]}")  # the same in the child and here
            os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
            ctx.build_proc, build_log = start_fused_adam_build(workdir)
        env = environment(args.device)
        results.data["environment"] = env
        results.check("environment", "INFO", " ".join(f"{k}={env[k]}" for k in (
            "python", "torch", "torch_cuda", "gpu", "capability", "bf16_supported", "nvcc", "cuda_home", "transformers",
            "peft", "deepspeed", "pydantic") if k in env))
        if ctx.build_proc is not None and args.serial_build:
            ctx.fused_adam = finish_fused_adam_build(ctx.build_proc, build_log, build_started, args.fused_adam_timeout, results)
            ctx.build_proc = None

        logging.getLogger("DeepSpeed").setLevel(logging.WARNING)
        with contextlib.suppress(Exception):
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # the "Loading weights" bars, in every run's log
        import gpu_check_ray_shim as shim
        from training.sft import SFTConfig, build_model
        from training.sft_data import encode, role_pairs

        shim.install(ctx.device)

        # --- data and tokenizer ----------------------------------------------------------------
        setup_started = time.perf_counter()
        triplets = open_world_triplets()
        pairs = role_pairs(triplets) if triplets else []
        if len(pairs) < 64:
            pairs += phrasing_pairs()
        tokenizer, tok_info = prepare_tokenizer(args.tokenizer, [t for p in pairs for t in p], workdir / "tokenizer",
                                                args.bpe_vocab)
        ctx.tokenizer_dir = workdir / "tokenizer"
        examples = encode(pairs, tokenizer, args.max_length)
        if args.examples:
            examples = examples[: args.examples]
        if not examples:
            raise RuntimeError("no training examples")
        ctx.examples = examples
        ctx.examples_path = workdir / "examples.json"
        ctx.examples_path.write_text(json.dumps(examples))
        ctx.pad_id = tokenizer.pad_token_id
        stride = max(1, len(examples) // max(1, args.eval_examples))
        ctx.eval_examples = examples[::stride][: args.eval_examples]
        lengths = [len(e["input_ids"]) for e in examples]

        # --- the base model ----------------------------------------------------------------------
        shape = PRESETS[args.preset]
        if args.arch == "gemma3":
            ctx.base_dir = workdir / "base"
            n_params = write_gemma3_base(shape, tokenizer, ctx.base_dir, args.seed)

            def make_base() -> Any:
                from transformers import AutoModelForCausalLM

                return AutoModelForCausalLM.from_pretrained(ctx.base_dir, dtype=torch.float32)
        else:
            scratch = SFTConfig.model_validate({"shape": {k: shape[k] for k in (
                "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")}, "seed": args.seed})

            def make_base() -> Any:
                return build_model(scratch, tokenizer)

            n_params = None
        ctx.make_base = make_base
        base = make_base()
        n_params = n_params or sum(p.numel() for p in base.parameters())
        ctx.loss_before = mean_loss(base.to(ctx.device), ctx.eval_examples, ctx.pad_id, ctx.device)
        del base
        free_memory(args.device)
        results.data["setup"] = {"tokenizer": tok_info, "pairs": len(pairs), "triplets": len(triplets),
                                 "examples": len(examples), "mean_tokens": round(sum(lengths) / len(lengths), 1),
                                 "max_tokens": max(lengths), "eval_examples": len(ctx.eval_examples),
                                 "arch": args.arch, "preset": args.preset, "shape": shape, "parameters": n_params,
                                 "initial_eval_loss": round(ctx.loss_before, 4),
                                 "seconds": round(time.perf_counter() - setup_started, 1)}
        results.check("setup", "INFO", f"{args.arch} {args.preset} {n_params / 1e6:.1f}M params, tokenizer "
                      f"{tok_info['class']} vocab {tok_info['vocab']} ({tok_info['source']}), {len(examples)} examples "
                      f"(mean {results.data['setup']['mean_tokens']} tokens), initial loss {ctx.loss_before:.3f}")
    except Exception as exc:  # noqa: BLE001 - reported in the JSON; nothing else can run
        traceback.print_exc()
        results.check("setup", "FAIL", f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc().splitlines()[-30:])
        if ctx.build_proc is not None and ctx.build_proc.poll() is None:
            ctx.build_proc.kill()
        return 1

    # --- the runs: plain-torch LoRA first (while FusedAdam builds), then the DeepSpeed ones -------
    plan = [(m, b) for m in sorted(args.modes, key=lambda m: m != "lora") for b in args.sizes[m]]
    for mode, batch_size in plan:
        name = f"{mode}-bs{batch_size}"
        if time.perf_counter() - t0 > args.budget_s:
            results.check(name, "SKIP", f"time budget of {args.budget_s:.0f} s spent before it started")
            continue
        if mode != "lora" and ctx.build_proc is not None:
            ctx.fused_adam = finish_fused_adam_build(ctx.build_proc, build_log, build_started, args.fused_adam_timeout, results)
            ctx.build_proc = None
        try:
            run_one(mode, batch_size, ctx, args, results)
        except Exception as exc:  # noqa: BLE001 - one failed run must not stop the others
            traceback.print_exc()
            results.check(name, "FAIL", f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc().splitlines()[-30:])
        free_memory(args.device)
    if ctx.build_proc is not None:  # every DeepSpeed run was skipped: report the build as it stands, wait no more
        ctx.fused_adam = finish_fused_adam_build(ctx.build_proc, build_log, build_started,
                                                 time.perf_counter() - build_started + 1, results)

    results.data["seconds"] = round(time.perf_counter() - t0, 1)
    results.save()
    with contextlib.suppress(Exception):
        import gpu_check_ray_shim as shim

        shim.shutdown()
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    passed = sum(c["status"] == "PASS" for c in results.data["checks"])
    failed = [c["name"] for c in results.data["checks"] if c["status"] in ("FAIL", "SKIP")]
    print(f"GPU CHECK {'OK' if results.data['ok'] else 'FAILED'}: {passed} passed, {len(failed)} failed or skipped "
          f"{failed if failed else ''} in {results.data['seconds']} s; results in {args.out}", flush=True)
    return 0 if results.data["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
