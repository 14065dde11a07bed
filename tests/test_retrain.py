"""The retraining loop for real: dataset versions, LoRA runs on Ray Train from the promoted
checkpoint, SoAyEval through vLLM, the promotion pointer and the record of every attempt.

The models are tiny (a few steps), so their Scores say nothing about quality; what is checked is
the loop: when it trains, from what, on which data, and that it promotes exactly when the
candidate's real Score clears the promoted model's real Score minus the tolerance.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TEST_CORPUS_SIZE, stop
from soay.dataset import iter_triplets, write_version
from soay.settings import Settings
from training.retrain import retrain

TINY = ["shape.hidden_size=64", "shape.intermediate_size=128", "shape.num_hidden_layers=2", "shape.num_attention_heads=2",
        "batch_size=8", "vocab_size=600", "workers=1"]
LOG_TRIPLETS = 12
DATA = {"corpus_size": TEST_CORPUS_SIZE, "seed": 7, "train_per_combination": 3, "test_per_combination": 1, "unit_size": 3}


@pytest.fixture(scope="module")
def base(tmp_path_factory, aminer_db, data_root, local_ray):
    """(work dir, dataset, base model): dataset version 1 and a full-SFT model trained on it."""
    from training.generate import generate
    from training.sft import load_config
    from training.train_job import run_sft

    root = tmp_path_factory.mktemp("retrain")
    dataset = generate(Settings(data={"root": data_root, **DATA}), out=root / "dataset", show_progress=False).dataset_path
    run_sft(load_config("configs/sft/cpu_full.yaml", [*TINY, "max_steps=4"]), dataset, root / "base")
    return root, dataset, (root / "base" / "model").resolve()


def loop_settings(base, data_root, **retrain_settings) -> Settings:
    root, _, model = base
    return Settings(
        data={"root": data_root, **DATA},
        serve={"model_dir": model},
        retrain={"runs_dir": root / "runs", "recipe": "configs/sft/lora.yaml", "overrides": ["batch_size=8", "workers=1", "max_steps=2"], "eval_limit": 8,
                 "swap": False, **retrain_settings},
    )


@pytest.fixture(scope="module")
def first_attempt(base, data_root):
    """Log-derived triplets arrive as dataset version 2, exactly `min_new_triplets` of them; the
    loop trains a LoRA candidate from the base model with learning rate 0 (the base's very
    weights), so the candidate cannot score below it and must be promoted at tolerance 0."""
    root, dataset, _ = base
    logged = [t.model_copy(update={"id": f"log-{t.id}", "code_source": "log"})
              for t in list(iter_triplets(dataset, split="train"))[:LOG_TRIPLETS]]
    write_version(dataset, "aminer", logged, {"kind": "log"})
    settings = loop_settings(base, data_root, min_new_triplets=LOG_TRIPLETS, tolerance=0.0, swap=True,
                             overrides=["batch_size=8", "workers=1", "max_steps=2", "learning_rate=0"])
    return retrain(settings, dataset)


def test_too_few_new_triplets_train_nothing(base, data_root):
    root, dataset, model = base
    assert json.loads((model / "run.json").read_text())["dataset"]["version"] == 1
    # what arrived after version 1: none, or the log triplets when another test added them first
    arrived = sum(t.code_source == "log" for t in iter_triplets(dataset, split="train"))
    record = retrain(loop_settings(base, data_root, min_new_triplets=arrived + 1, runs_dir=root / "idle"), dataset)
    assert record == {"decision": "skipped", "new_triplets": arrived, "min_new_triplets": arrived + 1, "model": str(model)}
    assert not (root / "idle").exists()  # no attempt, no pointer


def test_enough_new_triplets_train_lora_from_the_base_evaluate_and_promote(base, first_attempt, data_root):
    root, _, model = base
    record = first_attempt
    assert record["decision"] == "promoted" and record["new_triplets"] == LOG_TRIPLETS and record["dataset_version"] == 2
    candidate = (root / "runs" / "retrain" / "0001" / "model").resolve()
    run = json.loads((candidate / "run.json").read_text())
    assert run["config"]["mode"] == "lora" and run["config"]["base_model"] == str(model)
    assert run["dataset"]["version"] == 2 and (candidate / "adapter" / "adapter_config.json").is_file()
    # both models scored by SoAyEval on the same 8 test cases of version 2; same weights, same Score
    new, old = record["candidate"], record["promoted_before"]
    for side in (new, old):
        report = json.loads(Path(side["eval"]).read_text())
        assert report["score"] == side["score"] and report["meta"]["test_cases"] == 8
        assert side["eval"].endswith("eval-v0002-n8/eval.json")
    assert old["model"] == str(model) and old["data_version"] == 1 and new["score"] == old["score"]

    pointer = json.loads((root / "runs" / "promoted.json").read_text())
    assert pointer["model"] == str(candidate) and pointer["data_version"] == 2 and pointer["score"] == new["score"]
    assert pointer["previous"] == str(model) and pointer["run"] == str(candidate.parent) and pointer["eval"] == new["eval"]
    assert json.loads((candidate.parent / "attempt.json").read_text()) == record
    assert record["swap"] == {"swapped": False, "reason": "not serving"}  # no Serve application on this Ray
    # serving now loads the promoted model when no model_dir is given
    assert Settings(data={"root": data_root}, retrain={"runs_dir": root / "runs"}).serve.model_dir == candidate


def test_a_candidate_below_the_bar_is_rejected_and_the_pointer_kept(base, first_attempt, data_root):
    root, dataset, _ = base
    pointer = (root / "runs" / "promoted.json").read_text()
    promoted = json.loads(pointer)
    stored_eval = json.loads((root / "runs" / "retrain" / "0001" / "attempt.json").read_text())["candidate"]["eval"]
    # no new triplets since the promoted model's version 2: forced; the bar: a gain of 100 points
    record = retrain(loop_settings(base, data_root, tolerance=-100.0), dataset, force=True)
    assert record["decision"] == "rejected" and record["new_triplets"] == 0
    new, old = record["candidate"], record["promoted_before"]
    assert new["score"] < old["score"] + 100
    assert old == {"model": promoted["model"], "score": promoted["score"], "eval": stored_eval, "data_version": 2}
    run = json.loads((root / "runs" / "retrain" / "0002" / "model" / "run.json").read_text())
    assert run["config"]["base_model"] == promoted["model"]  # LoRA from the last promoted checkpoint
    assert json.loads((root / "runs" / "retrain" / "0002" / "attempt.json").read_text()) == record
    assert (root / "runs" / "promoted.json").read_text() == pointer


HOLD_LOCK = """
import sys, time
from filelock import FileLock
lock = FileLock(sys.argv[1])  # held while the object lives
lock.acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_a_retraining_while_another_runs_trains_nothing_and_a_dead_holder_frees_the_lock(base, data_root):
    """Another job (its own process) holds the runs directory: this one does nothing; once that
    process is killed, the OS has released its lock and a retraining may start."""
    from filelock import FileLock

    root, dataset, model = base
    settings = loop_settings(base, data_root, runs_dir=root / "busy")
    lock_path = root / "busy" / "retrain.lock"
    lock_path.parent.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        record = retrain(settings, dataset, force=True)
        assert (record["decision"], record["lock"], record["model"]) == ("busy", str(lock_path), str(model))
        assert not (root / "busy" / "retrain").exists()  # no attempt started
    finally:
        stop(holder)
    with FileLock(lock_path).acquire(timeout=0):  # a killed holder leaves no stale lock behind
        pass
