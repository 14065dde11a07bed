"""Triplet generation sharded over Ray (the `soay generate` job).

The driver plans work units (combination x split x a chunk of triplets), hands them to a pool of
Ray actors — each holds the environment and a warm sandbox — and writes what comes back as a new
version of the dataset. Results travel back through the object store rather than a shared disk,
so the same code runs on a laptop and on a multi-node cluster.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util import ActorPool
from tqdm import tqdm

from cluster.ray_runtime import init_ray
from soay.combinations import INTENT_DIR
from soay.dataset import MANIFEST, Manifest, VersionWriter
from soay.domains import Domain, get_domain
from soay.sandbox import Limits, Sandbox
from soay.settings import SandboxSettings, Settings
from soay.spec import SPEC_DIR
from soay.storage import mirror_url, pull, push
from soay.triplets import Triplet, TripletFactory, WorkUnit
from training.corpus import ensure_corpus
from training.teacher import Teacher

HTTP_ENV_FACTORY = "serving.api_client:open_remote_environment"


@dataclass
class GenerationReport:
    manifest: Manifest
    dataset_path: Path
    kept: int
    seconds: float
    stats: dict[str, int]
    workers: int

    @property
    def triplets_per_second(self) -> float:
        return self.kept / self.seconds if self.seconds else 0.0


LIVE_MIN_WALL_SECONDS = 30.0
"""A snippet's calls to a live service may wait for time-outs and back-off; 5 s is for SQLite."""


def sandbox_for(domain: Domain | str, db_path: Path, settings: SandboxSettings) -> Sandbox:
    """A sandbox whose APIs are the domain's environment: the corpus in-process (or the HTTP
    clone, as configured), or the live API of an imported spec."""
    domain = get_domain(domain) if isinstance(domain, str) else domain
    limits = settings.model_dump(exclude={"api_backend", "api_url", "pool_size"})  # pool_size is the executor's
    if domain.is_live:
        limits["wall_seconds"] = max(limits["wall_seconds"], LIVE_MIN_WALL_SECONDS)
    elif settings.api_backend == "http":
        return Sandbox(HTTP_ENV_FACTORY, {"base_url": settings.api_url, "domain": domain.name}, Limits(**limits))
    return Sandbox(domain.env_factory, domain.environment_options(db_path), Limits(**limits))


@ray.remote(num_cpus=1)
class GenerationWorker:
    """Holds one environment, one sandbox and one factory for the life of the job."""

    def __init__(
        self,
        domain_name: str,
        db_path: str,
        settings: Settings,
        paraphrases: dict[str, dict[str, list[str]]],
    ) -> None:
        domain = get_domain(domain_name)
        pull(settings.data, Path(db_path))  # a node without the driver's disk fetches the corpus from the mirror
        self.env = domain.open_environment(db_path)
        self.sandbox = sandbox_for(domain_name, Path(db_path), settings.sandbox)
        teacher = Teacher(settings.teacher, domain.spec) if settings.teacher.enabled and settings.teacher.propose_code else None
        self.factory = TripletFactory(
            self.env,
            domain.combinations,
            self.sandbox.run_batch,
            test_fraction=settings.data.test_fraction,
            validation_fraction=settings.data.validation_fraction,
            paraphrases=paraphrases,
            propose_code=teacher.propose_code if teacher else None,
            clarification_share=settings.data.clarification_share,
        )

    def run(self, unit: WorkUnit) -> tuple[str, list[dict[str, Any]], dict[str, int], str]:
        """The unit's combination, its triplets, its counts, and the Ray node that made them (the
        manifest says which nodes a job ran on)."""
        result = self.factory.make(unit)
        node = ray.get_runtime_context().get_node_id()
        return unit.combination_id, [t.model_dump(mode="json") for t in result.triplets], dict(result.stats), node


def plan_units(combination_ids: list[str], counts: dict[str, int], unit_size: int, seed: int) -> list[WorkUnit]:
    """Split the wanted counts per split into units of at most `unit_size`, each with its own seed."""
    units: list[WorkUnit] = []
    for cid in combination_ids:
        for split, total in counts.items():
            for k, start in enumerate(range(0, total, unit_size)):
                units.append(WorkUnit(cid, split, min(unit_size, total - start), seed * 1_000_003 + k, start))
    return units


def generate(
    settings: Settings,
    domain_name: str | None = None,
    out: Path | None = None,
    overwrite: bool = False,
    show_progress: bool = True,
) -> GenerationReport:
    """Build the corpus if needed, generate verified triplets on Ray, write a fresh dataset.

    An existing dataset is kept unless `overwrite`: it may hold enlarged versions that took
    real user traffic to collect.
    """
    data = settings.data
    domain_name = domain_name or data.domain
    domain = get_domain(domain_name)
    out = Path(out or data.dataset_path(domain_name))
    if (out / MANIFEST).exists():
        if not overwrite:
            raise FileExistsError(f"a dataset already exists at {out}; pass --overwrite to replace it")
        shutil.rmtree(out)
    if data.mirror:
        mirror_url(data, out)  # fails now, not after the work, when the dataset could not be mirrored
    db_path = ensure_corpus(domain_name, data.corpus_path(domain_name), data.corpus_size, data.seed, show_progress)
    push(data, db_path)
    paraphrases = Teacher(settings.teacher, domain.spec).paraphrase_all(domain.combinations) if settings.teacher.enabled else {}

    ray_address = init_ray(settings.ray)
    # by combination id: the order the dataset lists them in, so that each is written once its units are done
    units = plan_units(sorted(c.id for c in domain.combinations), data.split_counts(), data.unit_size, data.seed)
    # SPREAD: on a cluster the workers go to different nodes, not to the first with free CPUs
    workers = [GenerationWorker.options(scheduling_strategy="SPREAD").remote(domain_name, str(db_path), settings, paraphrases)
               for _ in range(settings.ray.workers)]
    pool = ActorPool(workers)
    for unit in units:
        pool.submit(lambda actor, u: actor.run.remote(u), unit)

    start = time.perf_counter()
    stats: Counter = Counter()
    triplets_by_node: Counter = Counter()
    writer = VersionWriter(out, domain_name, data.shard_size, data.shard_format)
    # a combination's triplets are held until its last unit is in (two units may make the same
    # question: `keep_triplet`), then written in id order; memory holds a few combinations, not the job
    remaining = Counter(u.combination_id for u in units)
    order = sorted(remaining)
    held: dict[str, dict[tuple, Triplet]] = defaultdict(dict)
    wanted = sum(u.count for u in units)
    with tqdm(total=wanted, desc=f"generate {domain_name}", unit="triplet", disable=not show_progress, smoothing=0.1, mininterval=1.0) as bar:
        while pool.has_next():
            combination_id, rows, unit_stats, node = pool.get_next_unordered()
            stats.update(unit_stats)
            triplets_by_node[node] += len(rows)
            for row in rows:
                if not keep_triplet(held[combination_id], Triplet.model_validate(row)):
                    stats["duplicate_across_units"] += 1
            remaining[combination_id] -= 1
            while order and remaining[order[0]] == 0:
                for triplet in sorted(held.pop(order.pop(0), {}).values(), key=lambda t: (t.split, t.id)):
                    writer.add(triplet)
            bar.update(unit_stats.get("kept", 0))
            bar.set_postfix(written=writer.count, unanswerable=stats["unanswerable"], failed=stats["template_exec_error"] + stats["template_mismatch"])
    seconds = time.perf_counter() - start
    for w in workers:
        ray.kill(w)

    source = {
        "job": "generate",
        "ray_address": ray_address,
        "workers": settings.ray.workers,
        "triplets_by_node": dict(triplets_by_node),
        "seconds": round(seconds, 3),
        "data": data.model_dump(mode="json"),
        "corpus": str(db_path),
        "spec_sha256": _sha256(SPEC_DIR / f"{domain_name}.yaml"),
        "intents_sha256": _sha256(INTENT_DIR / f"{domain_name}.yaml"),
        "teacher": settings.teacher.enabled,
        "stats": dict(stats),
    }
    manifest = writer.commit(source)
    push(data, out)
    return GenerationReport(manifest, out, writer.count, seconds, dict(stats), settings.ray.workers)


def keep_triplet(kept: dict[tuple, Triplet], t: Triplet) -> bool:
    """Add `t` unless another unit made the same question about the same entity (False then).
    Of two such, the smaller id stays, not the first to arrive: units finish in any order, and
    keeping the first made two runs of the same settings differ in which phrasing was learnt."""
    key = (t.combination.id, t.entity_id, tuple(sorted(t.inputs.items())))
    if key not in kept:
        kept[key] = t
        return True
    kept[key] = min(kept[key], t, key=lambda k: k.id)
    return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report_dict(report: GenerationReport) -> dict[str, Any]:
    d = asdict(report)
    d["manifest"] = {"version": report.manifest.version, "counts": report.manifest.counts()}
    d["dataset_path"] = str(report.dataset_path)
    d["triplets_per_second"] = round(report.triplets_per_second, 1)
    return d
