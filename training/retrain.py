"""The retraining loop: new triplets -> heads refitted (or LoRA from the promoted model) -> SoAyEval -> promote or reject.

Why it is shaped this way:

- The trigger counts training triplets added (by `soay generate`, or the log enlargement job)
  after the dataset version the promoted model was trained on, so nothing retrains until enough
  new data is there to learn from (`retrain.min_new_triplets`).
- Each attempt trains in a fresh directory (<runs>/retrain/NNNN) from the promoted checkpoint, so
  a rejected candidate never touches what is served, and every attempt can be inspected later.
- The dataset is pinned to one version for the whole attempt (a manifest of that version's shards
  in the attempt directory): enlargement may append meanwhile, and the candidate and the promoted
  model must be trained and scored on exactly the same data. SoAyEval's score depends on the test
  cases and on the training exemplars the retriever finds, so both models are scored on the same
  version, each at most once per version and test limit (eval-vNNNN-<limit>/ beside the model).
- Promotion is one atomic rename of a pointer file (<runs>/promoted.json); serving reads it at
  start (soay/settings.py), and a running application is swapped to it without dropping requests
  (serving/rollout.py). Every attempt leaves attempt.json beside its run: the decision, both scores.
- One attempt at a time per runs directory (<runs>/retrain.lock, an OS file lock that dies with
  its process): two attempts started together would both train from the same promoted model and
  the later promotion would silently replace the earlier. A periodic job that finds one running
  does nothing ("busy") rather than queue behind hours of training.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import BaseModel

from cluster.ray_runtime import init_ray
from soay.dataset import MANIFEST, Manifest, iter_triplets, load_manifest
from soay.domains import domain_for
from soay.files import atomic_write_text
from soay.settings import RetrainSettings, Settings
from soay.heads import HEADS_FILE, is_model_dir
from soay.splits import LOGGED
from soay.triplets import Triplet
from training.evaluate import predict_with_heads, run_eval
from training.fit_heads import fit_heads, is_heads_recipe, load_heads_config
from training.sft import load_config
from training.train_job import run_sft

DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "configs" / "heads.yaml"

Log = Callable[[str], None]
Swap = Callable[..., dict[str, Any]]
"""Swaps the running service to a promoted model: called as swap(settings, model_dir, log=log) and
returns what happened (serving/rollout.py `swap`; the CLI passes it, training never imports serving)."""


class Pointer(BaseModel):
    """promoted.json: the checkpoint to serve, and what it was trained on and scored."""

    model: str
    data_version: int
    score: float | None = None
    eval: str | None = None
    """The eval.json the score comes from."""
    run: str | None = None
    """The attempt directory that produced it (None for the first, configured model)."""
    previous: str | None = None
    """The model it replaced: what to roll back to."""
    time: str = ""


def current_model(settings: Settings) -> Pointer:
    """What is promoted now: the pointer's model, or before the first promotion the configured
    serving model, with the dataset version its run.json names (0 when it has none)."""
    pointer = settings.retrain.pointer_path(settings.data)
    if pointer.is_file():
        return Pointer.model_validate_json(pointer.read_text(encoding="utf-8"))
    model = settings.serve.model_path(settings.data).absolute()
    if not is_model_dir(model):
        raise FileNotFoundError(f"no model to retrain from: none promoted, none at {model} (nor where `soay train` and `soay demo` "
                                "write theirs): run `soay demo` or `soay train` first, or set serve.model_dir")
    run = model / "run.json"
    version = json.loads(run.read_text())["dataset"]["version"] if run.is_file() else 0
    return Pointer(model=str(model), data_version=version)


def new_triplets(manifest: Manifest, since_version: int) -> int:
    """Training triplets in dataset versions after `since_version`."""
    return sum(s.count for s in manifest.shards if s.split == "train" and s.version > since_version)


def pin_version(dataset_root: Path, out: Path) -> Manifest:
    """A read-only view of the dataset as it is now: a manifest in `out` listing the current
    version's shards by absolute path, so later appends to the dataset do not reach this attempt."""
    manifest = load_manifest(dataset_root)
    root = Path(dataset_root).resolve()
    pinned = manifest.model_copy(
        update={"shards": [s.model_copy(update={"path": str(root / s.path)}) for s in manifest.shards]}
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(pinned.model_dump_json(indent=2), encoding="utf-8")
    return pinned


def score(model: Path, dataset: Path, version: int, settings: Settings, log: Log) -> tuple[float, Path]:
    """SoAyEval Score of `model` on the pinned dataset, and its eval.json; a model already scored
    on this version and test limit is not scored again."""
    limit = settings.retrain.eval_limit
    out = model.parent / f"eval-v{version:04d}-{'all' if limit is None else f'n{limit}'}"
    stored = out / "eval.json"
    if stored.is_file():
        report = json.loads(stored.read_text())
        log(f"[retrain] {model}: Score {report['score']} (stored in {stored})")
        return float(report["score"]), stored
    log(f"[retrain] SoAyEval of {model} on dataset version {version} ({limit or 'all'} test cases)")
    started = time.perf_counter()
    report = run_eval(model, dataset, settings.data.corpus_path(), domain_for(settings), out, limit=limit)
    log(f"[retrain] {model}: Score {report['score']} ({time.perf_counter() - started:.0f} s)")
    return float(report["score"]), stored


def logged_questions(dataset: Path) -> list[Triplet]:
    """The person-labelled logged questions held out for the gate (soay/splits.py LOGGED)."""
    return list(iter_triplets(dataset, split=LOGGED))


def users_accuracy(model: Path, questions: list[Triplet], settings: Settings, log: Log) -> float | None:
    """Percent of `questions` whose reading (combination) the model's planner gets right; None
    without questions or for a model without a planner head (it is measured by SoAyEval alone)."""
    if not questions or not (model / HEADS_FILE).is_file():
        return None
    plans, _ = predict_with_heads(model, [t.query for t in questions], domain_for(settings))
    accuracy = round(100 * sum(p[0] == t.combination.id for p, t in zip(plans, questions)) / len(questions), 2)
    log(f"[retrain] {model}: {accuracy} % of {len(questions)} logged questions read right")
    return accuracy


def decide(new_score: float, old_score: float, new_users: float | None, old_users: float | None, r: RetrainSettings) -> dict[str, Any]:
    """Promote or not. The synthetic test split guards against forgetting what the templates
    teach; the logged questions say whether people are served better. A candidate better for
    users by `min_user_gain` points may lose up to `user_tolerance` Score points on the templates;
    one worse for users is never promoted."""
    measured = new_users is not None and old_users is not None
    better = measured and new_users - old_users >= r.min_user_gain
    tolerance = max(r.tolerance, r.user_tolerance) if better else r.tolerance
    if measured and new_users < old_users:
        return {"promoted": False, "tolerance": tolerance, "why": "worse on the logged questions"}
    if new_score < old_score - tolerance:
        return {"promoted": False, "tolerance": tolerance, "why": f"Score {new_score} below {old_score} by more than {tolerance}"}
    return {"promoted": True, "tolerance": tolerance,
            "why": "better for users, within the tolerance on the test split" if better else "no regression"}


def retrain(
    settings: Settings, dataset_root: Path | None = None, force: bool = False, log: Log = print, swap: Swap | None = None,
) -> dict[str, Any]:
    """One turn of the loop; returns what happened (also attempt.json when a model was trained).

    decision: "skipped" (too few new triplets), "busy" (another attempt holds the runs directory),
    "promoted" or "rejected". `force` trains even when fewer than `retrain.min_new_triplets` new
    triplets arrived. With `retrain.swap` on, a promoted model is handed to `swap` (the running
    service is swapped to it); without one, the record says that nothing was swapped.
    """
    r = settings.retrain
    dataset_root = Path(dataset_root or settings.data.dataset_path())
    before, arrived = _due(settings, dataset_root)
    if arrived < r.min_new_triplets and not force:
        return _skipped(settings, before, arrived, log)
    lock_path = r.runs_path(settings.data) / "retrain.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log(f"[retrain] another retraining holds {lock_path}: nothing to do")
        return {"decision": "busy", "new_triplets": arrived, "lock": str(lock_path), "model": before.model}
    try:
        # what the last attempt promoted while this one was starting
        before, arrived = _due(settings, dataset_root)
        if arrived < r.min_new_triplets and not force:
            return _skipped(settings, before, arrived, log)
        return _attempt(settings, dataset_root, before, arrived, log, swap)
    finally:
        lock.release()


def _due(settings: Settings, dataset_root: Path) -> tuple[Pointer, int]:
    """The promoted model and how many training triplets arrived after its dataset version."""
    before = current_model(settings)
    return before, new_triplets(load_manifest(dataset_root), before.data_version)


def _skipped(settings: Settings, before: Pointer, arrived: int, log: Log) -> dict[str, Any]:
    needed = settings.retrain.min_new_triplets
    log(f"[retrain] {arrived} new training triplets since dataset version {before.data_version} of {before.model} "
        f"(fewer than {needed}): nothing to do")
    return {"decision": "skipped", "new_triplets": arrived, "min_new_triplets": needed, "model": before.model}


def _attempt(settings: Settings, dataset_root: Path, before: Pointer, arrived: int, log: Log, swap: Swap | None) -> dict[str, Any]:
    """Train, score both, promote or reject, swap: the attempt's record."""
    r = settings.retrain
    run_dir = _new_attempt_dir(r.runs_path(settings.data) / "retrain")
    pinned = pin_version(dataset_root, run_dir / "dataset")
    log(f"[retrain] {arrived} new training triplets since version {before.data_version}: attempt {run_dir.name}, "
        f"training from {before.model} on dataset version {pinned.version}")
    recipe = Path(r.recipe) if r.recipe else DEFAULT_RECIPE
    if is_heads_recipe(recipe):  # the heads are refitted on the frozen base: nothing to start from
        trained = fit_heads(load_heads_config(recipe, r.overrides), settings, run_dir / "dataset", run_dir)
    else:  # an SFT recipe continues from the promoted checkpoint (LoRA by default on GPUs)
        config = load_config(recipe, [*r.overrides, f"base_model={before.model}", "resume=false"])
        init_ray(settings.ray, worker_output=True)  # the training workers print their progress
        trained = run_sft(config, run_dir / "dataset", run_dir)
    candidate = Path(trained["checkpoint"])
    log(f"[retrain] trained {recipe.name} in {trained['wall_seconds']} s -> {candidate}")

    new_score, new_eval = score(candidate, run_dir / "dataset", pinned.version, settings, log)
    old_score, old_eval = score(Path(before.model), run_dir / "dataset", pinned.version, settings, log)
    logged = logged_questions(run_dir / "dataset")
    new_users = users_accuracy(candidate, logged, settings, log)
    old_users = users_accuracy(Path(before.model), logged, settings, log)
    gate = decide(new_score, old_score, new_users, old_users, r)
    promoted = gate["promoted"]
    record: dict[str, Any] = {
        "decision": "promoted" if promoted else "rejected",
        "gate": gate,
        "run": str(run_dir),
        "time": _now(),
        "new_triplets": arrived,
        "dataset_version": pinned.version,
        "tolerance": r.tolerance,
        "eval_limit": r.eval_limit,
        "candidate": {"model": str(candidate), "score": new_score, "eval": str(new_eval), "train_seconds": trained["wall_seconds"],
                      "logged_accuracy": new_users},
        "promoted_before": {"model": before.model, "score": old_score, "eval": str(old_eval), "data_version": before.data_version,
                            "logged_accuracy": old_users},
    }
    log(f"[retrain] candidate Score {new_score} vs promoted {old_score}; on {len(logged)} logged questions {new_users} vs {old_users} "
        f"(tolerance {gate['tolerance']}): {record['decision']} ({gate['why']})")
    if promoted:
        pointer = Pointer(
            model=str(candidate), data_version=pinned.version, score=new_score, eval=str(new_eval),
            run=str(run_dir), previous=before.model, time=record["time"],
        )
        atomic_write_text(r.pointer_path(settings.data), pointer.model_dump_json(indent=2))
        log(f"[retrain] promoted: {r.pointer_path(settings.data)} -> {candidate}")
    attempt = run_dir / "attempt.json"
    attempt.write_text(json.dumps(record, indent=2))
    if promoted and r.swap:
        try:
            record["swap"] = swap(settings, candidate, log=log) if swap else {"swapped": False, "reason": "no swap given to retrain()"}
        except Exception as exc:  # the promotion stands: `soay serve` loads it at its next start
            record["swap"] = {"swapped": False, "error": f"{type(exc).__name__}: {exc}"}
            raise
        finally:
            attempt.write_text(json.dumps(record, indent=2))
    return record


def _new_attempt_dir(parent: Path) -> Path:
    """The next numbered attempt directory, created here (two concurrent jobs get two)."""
    parent.mkdir(parents=True, exist_ok=True)
    n = max((int(p.name) for p in parent.iterdir() if p.name.isdigit()), default=0)
    while True:
        n += 1
        try:
            (parent / f"{n:04d}").mkdir()
            return parent / f"{n:04d}"
        except FileExistsError:
            continue


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
