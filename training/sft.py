"""The SFT recipe: full fine-tuning or LoRA, on Ray Train, with DDP or DeepSpeed ZeRO.

One recipe covers every case the YAML configs in `configs/sft/` describe: a from-scratch small
Llama on CPUs (the embedded default) or any HF checkpoint directory on GPUs; plain DDP (gloo on
CPU, NCCL on GPU) or DeepSpeed ZeRO-2/3 from a JSON config. The loop reads top to bottom:
set up the model, set up the data, train, save an HF-format checkpoint that vLLM loads.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

from training.deepspeed_compat import consolidated_state_dict
from training.recipes import read_recipe

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "sft"


class ModelShape(BaseModel):
    """Dimensions of the from-scratch Llama (ignored when `base_model` is a checkpoint)."""

    model_config = ConfigDict(extra="forbid")

    hidden_size: int = 256
    intermediate_size: int = 688
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    max_position_embeddings: int = 1024


class LoraSettings(BaseModel):
    """RESTful-Llama, Table 8: rank 8, alpha 32, dropout 0.1, on all linear layers."""

    model_config = ConfigDict(extra="forbid")

    r: int = 8
    alpha: int = 32
    dropout: float = 0.1
    target_modules: list[str] | str = "all-linear"
    merge: bool = True
    """Save the merged model (loads in vLLM as a plain checkpoint) besides the adapter."""


class SFTConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["full", "lora"] = "full"
    base_model: str | None = None
    """HF checkpoint directory to start from; None trains the small Llama from scratch."""
    tokenizer: str | None = None
    """Tokenizer directory; None uses base_model's, or trains one on the data."""
    shape: ModelShape = ModelShape()
    lora: LoraSettings = LoraSettings()
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1
    epochs: float = 1.0
    max_steps: int | None = None
    """Stop after this many optimiser steps (overrides epochs); for smoke tests and benchmarks."""
    batch_size: int = 16
    """Per worker."""
    max_length: int = 384
    coder_per_combination: int | None = None
    """Cap on coder examples per combination (None: one per triplet); see sft_data.role_pairs."""
    seed: int = 0
    workers: int = 2
    placement: Literal["PACK", "SPREAD"] = "PACK"
    """Where Ray Train puts the workers: PACK on as few nodes as fit them (no gradient crosses the
    network when one node has room), SPREAD on as many nodes as there are workers."""
    use_gpu: bool = False
    deepspeed: str | None = None
    """A DeepSpeed JSON config (e.g. configs/sft/zero3.json); None uses DDP."""
    log_every: int = 10
    vocab_size: int = 2000
    resume: bool = True
    """Start from the run directory's last checkpoint when there is one (weights; the optimiser
    and schedule start afresh), so a retraining job picks up where the previous one stopped."""
    metrics_port: int | None = None
    """Rank 0 serves the loss and throughput as Prometheus gauges on this port while training
    (training/train_metrics.py); None serves nothing."""


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> SFTConfig:
    """An SFT recipe config from YAML with `key=value` / `a.b=value` overrides laid on top."""
    return SFTConfig.model_validate(read_recipe(path, overrides))


def build_model(config: SFTConfig, tokenizer: Any) -> torch.nn.Module:
    """The base model: a checkpoint, or a small Llama initialised from the seed."""
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    if config.base_model:
        return AutoModelForCausalLM.from_pretrained(config.base_model, torch_dtype=torch.float32)
    torch.manual_seed(config.seed)
    shape = config.shape
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=shape.hidden_size,
            intermediate_size=shape.intermediate_size,
            num_hidden_layers=shape.num_hidden_layers,
            num_attention_heads=shape.num_attention_heads,
            num_key_value_heads=shape.num_attention_heads,
            max_position_embeddings=shape.max_position_embeddings,
            tie_word_embeddings=True,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )


def add_lora(model: torch.nn.Module, lora: LoraSettings) -> torch.nn.Module:
    from peft import LoraConfig, get_peft_model

    return get_peft_model(
        model,
        LoraConfig(
            r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=lora.target_modules, task_type="CAUSAL_LM"
        ),
    )


def train_loop_per_worker(loop_config: dict[str, Any]) -> None:
    """What every Ray Train worker runs: set up, train, save (rank 0), report."""
    import ray.train
    from transformers import AutoTokenizer, get_cosine_schedule_with_warmup

    from training.sft_data import collate, length_grouped_batches
    from training.train_metrics import TrainMetrics

    config = SFTConfig.model_validate(loop_config["config"])
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.manual_seed(config.seed)

    # --- set up the model -----------------------------------------------------------------
    tokenizer = AutoTokenizer.from_pretrained(loop_config["tokenizer_dir"])
    model = build_model(config, tokenizer)
    if config.mode == "lora":
        model = add_lora(model, config.lora)
    examples = json.loads(Path(loop_config["examples_path"]).read_text())

    # --- set up the data ------------------------------------------------------------------
    def epoch_batches(epoch: int) -> list[list[dict[str, list[int]]]]:
        """This rank's share of the epoch's batches (a different shuffle every epoch)."""
        return length_grouped_batches(examples, config.batch_size, config.seed + epoch, world)[rank::world]

    steps = config.max_steps or max(1, math.ceil(config.epochs * len(epoch_batches(0))))
    params = [p for p in model.parameters() if p.requires_grad]

    if config.deepspeed:
        import deepspeed

        ds_config = dict(loop_config["deepspeed_config"])
        ds_config.update(train_micro_batch_size_per_gpu=config.batch_size, gradient_accumulation_steps=1)
        # on CPU, DeepSpeed's own Adam is a C++ extension compiled at first use (about a minute per
        # fresh machine); torch's AdamW makes the same update
        on_cpu = deepspeed.accelerator.get_accelerator().device_name() == "cpu"
        adam = {"lr": config.learning_rate, "weight_decay": config.weight_decay, **({"torch_adam": True} if on_cpu else {})}
        ds_config.setdefault("optimizer", {"type": "AdamW", "params": adam})
        ds_config.setdefault(
            "scheduler",
            {"type": "WarmupCosineLR", "params": {"total_num_steps": steps, "warmup_num_steps": max(1, int(config.warmup_ratio * steps))}},
        )
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=params, config=ds_config)
        device = engine.device
    else:
        model = ray.train.torch.prepare_model(model)
        optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
        scheduler = get_cosine_schedule_with_warmup(optimizer, int(config.warmup_ratio * steps), steps)
        device = ray.train.torch.get_device()

    # --- train ----------------------------------------------------------------------------
    exporter = TrainMetrics(config.metrics_port) if config.metrics_port and rank == 0 else None
    step, epoch, tokens, started = 0, 0, 0, time.perf_counter()
    running = 0.0
    while step < steps:
        for examples_in_batch in epoch_batches(epoch):
            batch = {k: v.to(device) for k, v in collate(examples_in_batch, tokenizer.pad_token_id).items()}
            if config.deepspeed:
                loss = engine(**batch).loss
                engine.backward(loss)
                engine.step()
            else:
                loss = model(**batch).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            step += 1
            tokens += int(batch["attention_mask"].sum())
            running += float(loss.detach())
            if step % config.log_every == 0 or step == steps:
                n = config.log_every if step % config.log_every == 0 else step % config.log_every
                elapsed = time.perf_counter() - started
                metrics = {"step": step, "epoch": epoch, "loss": running / n, "tokens_per_s": tokens * world / elapsed}
                running = 0.0
                if exporter:
                    exporter.update(metrics)
                if rank == 0:  # worker stdout reaches the driver's console: the progress lines
                    print(f"step {step}/{steps} epoch {epoch} loss {metrics['loss']:.4f} "
                          f"{metrics['tokens_per_s']:.0f} tokens/s {elapsed:.0f}s", flush=True)
                if step < steps:
                    ray.train.report(metrics)
            if step >= steps:
                break
        epoch += 1
    if exporter:
        exporter.close()

    # --- save an HF checkpoint (rank 0 writes; every rank reports it) ---------------------
    module = engine.module if config.deepspeed else getattr(model, "module", model)
    state = consolidated_state_dict(engine) if config.deepspeed else None  # every rank: a collective under ZeRO-3
    out = Path(loop_config["output_dir"])
    if rank == 0:
        save_checkpoint(module, tokenizer, out, config, state)
    metrics["seconds"] = time.perf_counter() - started
    metrics["nodes"] = worker_nodes(world)
    ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(out) if rank == 0 else None)


def worker_nodes(world: int) -> list[str]:
    """The Ray nodes the run's workers ran on, each once (the run record says where it trained)."""
    import ray
    import torch.distributed as dist

    node = ray.get_runtime_context().get_node_id()
    nodes: list[str | None] = [node] * world
    if world > 1 and dist.is_initialized():
        dist.all_gather_object(nodes, node)
    return sorted({n for n in nodes if n})


def save_checkpoint(module: Any, tokenizer: Any, out: Path, config: SFTConfig, state: dict | None = None) -> None:
    """HF-format model (merged when LoRA) + tokenizer in `out`; the LoRA adapter in `out/adapter`."""
    out.mkdir(parents=True, exist_ok=True)
    if config.mode == "lora":
        module.save_pretrained(out / "adapter", state_dict=state)
        if config.lora.merge:
            module.merge_and_unload().save_pretrained(out)
    else:
        module.save_pretrained(out, state_dict=state)
    tokenizer.save_pretrained(out)
    (out / "sft_config.json").write_text(config.model_dump_json(indent=2))
