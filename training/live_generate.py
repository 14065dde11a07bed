"""Verified triplets from a live API: an imported spec, its generated intents and a base URL.

The same factory as `soay generate` (sample, ground truth, code, sandbox, keep what reproduces
the answer) with a live-API environment on both sides: the oracle here, the sandbox's server
for the code. It runs in one process on purpose: a live service is rate-limited, so the speed
of the run is the service's, and Ray workers would only multiply the load on it (the response
cache is what makes a run cheap). A call the service cannot answer after its retries drops
that one candidate, counted as `api_unavailable`; every triplet verified before or after it is
kept.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from soay.dataset import MANIFEST, Manifest, write_version
from soay.domains import imported_domain
from soay.environment.live_api import LiveApiEnvironment, LiveApiOptions
from soay.settings import Settings
from soay.triplets import Triplet, TripletFactory, WorkUnit
from training.generate import sandbox_for

UNAVAILABLE_MARK = "ApiUnavailable"


@dataclass
class LiveGenerationReport:
    manifest: Manifest
    dataset_path: Path
    kept: int
    seconds: float
    stats: dict[str, int]
    api: dict[str, int] = field(default_factory=dict)
    """The oracle's calls: requests, cache hits, retries, time-outs, unavailable."""


def generate_live(
    spec_path: Path,
    options: LiveApiOptions,
    settings: Settings,
    out: Path,
    overwrite: bool = False,
    show_progress: bool = True,
) -> LiveGenerationReport:
    domain = imported_domain(spec_path, options.model_dump(mode="json"))
    spec, combinations = domain.spec, domain.combinations
    out = Path(out)
    if (out / MANIFEST).exists():
        if not overwrite:
            raise FileExistsError(f"a dataset already exists at {out}; pass --overwrite to replace it")
        shutil.rmtree(out)
    data = settings.data
    oracle = LiveApiEnvironment(options.model_copy(update={"requests_per_snippet": None}))
    stats: Counter = Counter()

    def run_batch(codes: list[str]) -> list[Any]:
        results = sandbox.run_batch(codes)
        stats["api_unavailable"] += sum(1 for r in results if not r.ok and UNAVAILABLE_MARK in (r.error or ""))
        return results

    splits = data.split_counts()
    units = [
        WorkUnit(c.id, split, count, data.seed * 1_000_003 + i)
        for i, c in enumerate(combinations)
        for split, count in splits.items()
        if count > 0
    ]
    kept: dict[tuple, Triplet] = {}
    start = time.perf_counter()
    with sandbox_for(domain, out, settings.sandbox) as sandbox:
        factory = TripletFactory(
            oracle, combinations, run_batch, data.test_fraction, data.validation_fraction, clarification_share=data.clarification_share
        )
        wanted = sum(u.count for u in units)
        with tqdm(total=wanted, desc=f"generate {spec.domain} (live)", unit="triplet", disable=not show_progress, mininterval=1.0) as bar:
            for unit in units:
                result = factory.make(unit)
                stats.update(result.stats)
                for t in result.triplets:
                    kept.setdefault((t.combination.id, t.entity_id, tuple(sorted(t.inputs.items()))), t)
                bar.update(len(result.triplets))
                bar.set_postfix(
                    kept=len(kept),
                    unanswerable=stats["unanswerable"],
                    failed=stats["template_exec_error"] + stats["template_mismatch"],
                    api_unavailable=stats["api_unavailable"] + oracle.stats["unavailable"],
                    retries=oracle.stats["retries"],
                )
    seconds = time.perf_counter() - start
    stats["api_unavailable"] += oracle.stats["unavailable"]
    oracle.close()
    ordered = sorted(kept.values(), key=lambda t: (t.split, t.combination.id, t.id))
    source = {
        "job": "generate-live",
        "base_url": options.base_url,
        "seconds": round(seconds, 3),
        "spec": str(spec_path),
        "spec_sha256": _sha256(Path(spec_path)),
        "intents_sha256": _sha256(domain.intents_path),
        "stats": dict(stats),
        "api": dict(oracle.stats),
    }
    manifest = write_version(out, spec.domain, ordered, source, data.shard_size, data.shard_format)
    return LiveGenerationReport(manifest, out, len(ordered), seconds, dict(stats), dict(oracle.stats))


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
