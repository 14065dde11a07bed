"""The batch (re)training job: dataset manifest -> examples -> Ray Train -> checkpoint + run record.

The driver prepares everything a worker needs on disk (tokenizer, encoded examples) so workers
only train; the run record written next to the checkpoint says which config and which dataset
version produced it.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer

from soay.dataset import iter_triplets, load_manifest
from soay.settings import DataSettings
from soay.storage import pull, push
from training.sft import SFTConfig, train_loop_per_worker
from training.sft_data import encode, role_pairs
from training.tokenizer import save_tokenizer, train_tokenizer


def prepare_tokenizer(config: SFTConfig, texts: list[str], out_dir: Path) -> Path:
    """The tokenizer directory to train with: given, the base model's, or trained on `texts`."""
    from transformers import AutoTokenizer

    source = config.tokenizer or config.base_model
    tokenizer = AutoTokenizer.from_pretrained(source) if source else train_tokenizer(texts, config.vocab_size)
    return save_tokenizer(tokenizer, out_dir / "tokenizer")


def run_sft(config: SFTConfig, dataset_root: Path, out_dir: Path, data: DataSettings | None = None) -> dict[str, Any]:
    """Train on the dataset's train split; returns the run record (also saved as run.json). With
    `data` and its mirror, the dataset is pulled from the mirror first and the checkpoint pushed
    to it after (soay/storage.py)."""
    from transformers import AutoTokenizer

    if data is not None:
        pull(data, Path(dataset_root))

    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    model_dir = out_dir / "model"
    resumed_from = None
    if config.resume and (model_dir / "config.json").is_file():
        previous = model_dir.with_name("model.previous")
        if previous.exists():
            shutil.rmtree(previous)
        model_dir.rename(previous)
        resumed_from = str(previous)
        # a LoRA run resumes from its merged model; its adapter starts afresh on top of it
        config = config.model_copy(update={"base_model": resumed_from, "tokenizer": resumed_from})
    manifest = load_manifest(dataset_root)
    triplets = list(iter_triplets(dataset_root, split="train"))
    if not triplets:
        raise ValueError(f"dataset at {dataset_root} has no training triplets")
    # the tokenizer learns from what the model reads and writes: masked questions and code
    texts = [t for p in role_pairs(triplets, config.coder_per_combination) for t in p]
    tokenizer_dir = prepare_tokenizer(config, texts, out_dir)
    examples = encode(role_pairs(triplets, config.coder_per_combination), AutoTokenizer.from_pretrained(tokenizer_dir), config.max_length)
    examples_path = out_dir / "examples.json"
    examples_path.write_text(json.dumps(examples))

    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={
            "config": config.model_dump(mode="json"),
            "tokenizer_dir": str(tokenizer_dir),
            "examples_path": str(examples_path),
            "output_dir": str(model_dir),
            # read here: workers may run elsewhere, with another working directory
            "deepspeed_config": json.loads(Path(config.deepspeed).read_text()) if config.deepspeed else None,
        },
        scaling_config=ScalingConfig(
            num_workers=config.workers, use_gpu=config.use_gpu, resources_per_worker={"CPU": 1}, placement_strategy=config.placement
        ),
        torch_config=TorchConfig(backend="nccl" if config.use_gpu else "gloo"),
        run_config=RunConfig(storage_path=str(out_dir / "ray_results"), name="sft"),
    )
    started = time.perf_counter()
    result = trainer.fit()
    record = {
        "config": config.model_dump(mode="json"),
        "dataset": {"root": str(dataset_root), "version": manifest.version, "train_triplets": len(triplets)},
        "examples": len(examples),
        "metrics": result.metrics,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "resumed_from": resumed_from,
        "checkpoint": str(model_dir),
    }
    (model_dir / "run.json").write_text(json.dumps(record, indent=2, default=str))
    if data is not None:
        push(data, model_dir)
    return record
