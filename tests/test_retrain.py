"""The retraining loop for real: dataset versions, LoRA runs on Ray Train from the promoted
checkpoint, SoAyEval through vLLM, the promotion pointer and the record of every attempt.

The models are tiny (a few steps), so their Scores say nothing about quality; what is checked is
the loop: when it trains, from what, on which data, and that it promotes exactly when the
candidate's real Score clears the promoted model's real Score minus the tolerance. The rejection
of a genuinely worse candidate at a realistic tolerance is tried on the default (heads) recipe,
whose Scores on a 2-layer base do differ with the data it is fitted on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TINY_DATA, stop
from soay.dataset import iter_triplets, write_version
from soay.settings import Settings
from serving.rollout import swap
from training.retrain import retrain

LOG_TRIPLETS = 12
DATA = TINY_DATA


@pytest.fixture(scope="module")
def generated(tmp_path_factory, local_ray, request):
    """(work dir, dataset): dataset version 1, a copy of the session's `tiny_sft` dataset (this
    module appends versions to it). Generation runs on Ray: the module's own (`local_ray`), which
    stops with the module, never one `generate` would start and leave up."""
    dataset, _ = request.getfixturevalue("tiny_sft")  # after local_ray: built on the module's Ray
    root = tmp_path_factory.mktemp("retrain")
    shutil.copytree(dataset, root / "dataset")
    return root, root / "dataset"


@pytest.fixture(scope="module")
def base(generated, request):
    """(work dir, dataset, base model): dataset version 1 and a full-SFT model trained on it (a copy
    of the session's `tiny_sft` model: the loop writes its evaluations beside the model)."""
    root, dataset = generated
    _, model = request.getfixturevalue("tiny_sft")
    shutil.copytree(model.parent, root / "base", symlinks=True)
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
    return retrain(settings, dataset, swap=swap)  # as `soay retrain` does (cli/main.py)


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
    # no logged questions in this dataset: nothing to compare for users
    assert old == {"model": promoted["model"], "score": promoted["score"], "eval": stored_eval, "data_version": 2, "logged_accuracy": None}
    run = json.loads((root / "runs" / "retrain" / "0002" / "model" / "run.json").read_text())
    assert run["config"]["base_model"] == promoted["model"]  # LoRA from the last promoted checkpoint
    assert json.loads((root / "runs" / "retrain" / "0002" / "attempt.json").read_text()) == record
    assert (root / "runs" / "promoted.json").read_text() == pointer


SMALL_BUDGET = 8
"""Distinct training questions the worse candidate is fitted on: one in six combinations."""
HEADS = ["C_grid=[1.0]", "out_of_scope=false", "mention_tagger=false"]
"""The default recipe, less what this comparison does not need (a C search, the out-of-scope class,
the learnt mention tagger: half a minute of training per model; both sides mask mentions by the
rules of soay/mentions.py instead)."""
HEADS_EVAL = 24
"""Test cases both models are scored on (spread over the split's combinations)."""
TOLERANCE = 2.0
"""A realistic bar: the candidate may lose two Score points and still be promoted."""


def test_a_candidate_fitted_on_far_less_data_is_rejected_at_a_realistic_tolerance(generated, data_root, gemma_base, gemma_small):
    """The default recipe (heads on the base, here its 2-layer copy, less HEADS) on both sides: the promoted
    model is fitted on every training question, the candidate on SMALL_BUDGET of them
    (`max_questions`, the recipe's training budget), so it cannot name most combinations and
    scores well below the promoted model on the same pinned test cases; with a two-point
    tolerance it is rejected and promoted.json is left as it was."""
    from training.fit_heads import fit_heads, load_heads_config
    from training.retrain import DEFAULT_RECIPE, Pointer

    root, dataset = generated
    settings = Settings(
        data={"root": data_root, **DATA},
        # resolves to the gemma_small checkpoint (the fixture's source and layers, its cache)
        base_model={"source": str(gemma_base), "num_layers": 2, "cache_dir": gemma_small.parent},
        retrain={"runs_dir": root / "heads-runs", "recipe": str(DEFAULT_RECIPE), "overrides": [*HEADS, f"max_questions={SMALL_BUDGET}"],
                 "eval_limit": HEADS_EVAL, "tolerance": TOLERANCE, "swap": False},
    )
    fitted = fit_heads(load_heads_config(DEFAULT_RECIPE, HEADS), settings, dataset, root / "heads-promoted", base_dir=gemma_small)
    promoted_model = Path(fitted["checkpoint"])
    version = fitted["dataset"]["version"]
    pointer_path = settings.retrain.pointer_path(settings.data)
    pointer_path.parent.mkdir(parents=True)
    pointer = Pointer(model=str(promoted_model), data_version=version, time="before").model_dump_json(indent=2)
    pointer_path.write_text(pointer)

    record = retrain(settings, dataset, force=True)  # no new triplets since the promoted version

    assert record["decision"] == "rejected" and record["tolerance"] == TOLERANCE
    new, old = record["candidate"], record["promoted_before"]
    assert old["model"] == str(promoted_model) and new["model"] != old["model"]
    trained = json.loads((Path(new["model"]) / "run.json").read_text())
    assert trained["recipe"] == "heads" and trained["examples"]["questions"] == SMALL_BUDGET < fitted["examples"]["questions"]
    scored = []
    for side in (new, old):  # the figures as recorded, each from its model's SoAyEval report
        report = json.loads(Path(side["eval"]).read_text())
        assert report["score"] == side["score"] and report["meta"]["test_cases"] == HEADS_EVAL
        assert side["eval"].endswith(f"eval-v{version:04d}-n{HEADS_EVAL}/eval.json")
        scored.append([json.loads(line)["id"] for line in (Path(side["eval"]).parent / "predictions.jsonl").read_text().splitlines()])
    assert scored[0] == scored[1]  # on the same pinned test cases
    assert old["score"] - new["score"] > TOLERANCE, (new["score"], old["score"])
    assert pointer_path.read_text() == pointer  # the promoted model stays promoted
    assert json.loads((Path(record["run"]) / "attempt.json").read_text()) == record


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


def test_retrain_right_after_the_demo_finds_the_demo_model(base, tmp_path):
    """`soay retrain` with no setting, on a data root laid out as `soay demo` leaves it: the model
    at runs/demo/model is the one it starts from, and it says so."""
    import os

    from conftest import ROOT, SOAY

    _, dataset, model = base
    domain = tmp_path / "aminer"
    (domain / "runs" / "demo").mkdir(parents=True)
    (domain / "runs" / "demo" / "model").symlink_to(model, target_is_directory=True)
    (domain / "dataset").symlink_to(dataset, target_is_directory=True)
    env = {**os.environ, "SOAY_DATA__ROOT": str(tmp_path)}
    env.pop("SOAY_SERVE__MODEL_DIR", None)
    done = subprocess.run([*SOAY, "retrain", "--json", "--min-new-triplets", "100000"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["decision"] == "skipped" and record["model"] == str(domain / "runs" / "demo" / "model")
    assert "runs/demo/model" in done.stderr


@pytest.mark.parametrize(("scores", "users", "promoted"), [
    ((91.5, 92.0), (80.0, 70.0), True),    # better for users by 10 points, 0.5 Score points down: within user_tolerance
    ((90.5, 92.0), (80.0, 70.0), False),   # better for users, but 1.5 points down: beyond it
    ((91.5, 92.0), (70.5, 70.0), False),   # a gain for users below min_user_gain: the plain tolerance (0) holds
    ((93.0, 92.0), (69.0, 70.0), False),   # worse for users: never, whatever the Score
    ((92.0, 92.0), (None, None), True),    # no logged questions: the Score alone
])
def test_the_gate_weighs_logged_questions_against_the_test_split(scores, users, promoted):
    from soay.settings import RetrainSettings
    from training.retrain import decide

    gate = decide(*scores, *users, RetrainSettings(tolerance=0.0, user_tolerance=1.0, min_user_gain=1.0))
    assert gate["promoted"] is promoted, gate
