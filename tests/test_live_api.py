"""Import -> live-API environment -> verified triplets, through a real GraphQL server on loopback.

The movies domain is served as GraphQL (serving/graphql_clone.py), imported by URL, and
triplets are generated through it: head entities sampled from its searches, ground truth and
verification by HTTP. A flaky proxy in front of it (500s, answers slower than the time-out, an
outage) must cost no verified triplet, and what it did must show in the counts.

Sized for CI on a shared 2-core machine: a small corpus, few head entities sampled, one
triplet per combination and split (every combination of the import still runs), time-outs
only as long as they must be, and retries with a back-off of milliseconds, all given as
settings. The flaky and outage runs are deterministic: one process makes the calls one at a
time, and the proxy's failures follow its request counter.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SOAY
from live_services import flaky_proxy, graphql_movies

from soay.clarifications import reproduces
from soay.combinations import load_combinations
from soay.dataset import iter_triplets
from soay.domains import LIVE_ENV_FACTORY
from soay.environment.live_api import LiveApiOptions
from soay.environment.movies_corpus import build_movie_corpus
from soay.importers import import_document, write_import
from soay.importers.writer import sidecar
from soay.outcomes import fuzzy_apis
from soay.sandbox import Limits, Sandbox
from soay.settings import Settings
from soay.solutions import SolutionLibrary
from soay.spec import load_spec
from training.live_generate import generate_live

CORPUS_SIZE = 500
SAMPLE_SIZE = 20  # head entities sampled per search: ~40 probe requests instead of ~130 at the default 200
PER_SPLIT = {"train_per_combination": 1, "test_per_combination": 1}
HEALTHY_TIMEOUT_S = 10.0  # nothing injected: a generous time-out costs nothing and keeps a loaded machine from failing a call
FLAKY_TIMEOUT_S = 1.5  # every slow answer waits out one time-out, so it is short; a loopback call takes ~40 ms under load
FLAKY_SLOW_S = 4.0  # longer than the time-out: the proxy's slow answers always time out
FLAKY_ATTEMPTS = 4  # fail-every 3 and slow-every 17 fail at most 2 requests in a row; 4 tries leave a spare for a stray time-out
pytestmark = pytest.mark.timeout(300)  # about a minute on an idle 2-core machine


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("movies") / "corpus.sqlite"
    build_movie_corpus(db, size=CORPUS_SIZE, seed=0)
    with graphql_movies(db) as url:
        yield url


@pytest.fixture(scope="module")
def spec_path(server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = import_document(f"{server}/graphql", domain="movies")
    return write_import(result, tmp_path_factory.mktemp("import") / "movies.yaml")["spec"]


def _settings() -> Settings:
    s = Settings()
    update = dict(PER_SPLIT)
    if "validation_per_combination" in type(s.data).model_fields:
        update["validation_per_combination"] = 0
    return s.model_copy(update={"data": s.data.model_copy(update=update)})


def _options(spec_path: Path, url: str, cache: Path, timeout_s: float = HEALTHY_TIMEOUT_S, **extra) -> LiveApiOptions:
    return LiveApiOptions(spec_path=str(spec_path), base_url=url, cache_path=str(cache), timeout_s=timeout_s,
                          backoff_s=0.01, max_backoff_s=0.05, sample_size=SAMPLE_SIZE, **extra)


@pytest.fixture(scope="module")
def healthy(spec_path: Path, server: str, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("healthy")
    report = generate_live(spec_path, _options(spec_path, server, tmp / "cache.sqlite", requests_per_snippet=100), _settings(), tmp / "ds", show_progress=False)
    return report, tmp


def test_triplets_are_verified_through_the_live_server(healthy, spec_path: Path, server: str, tmp_path: Path) -> None:
    report, _ = healthy
    triplets = list(iter_triplets(report.dataset_path))
    spec = load_spec(spec_path)
    combinations = load_combinations(spec, SolutionLibrary(spec), sidecar(spec_path, "intents")).combinations
    assert len(combinations) >= 12  # one-, two- and three-hop questions about movies and people
    assert report.kept == len(triplets) >= 0.8 * len(combinations) * sum(PER_SPLIT.values())
    assert {t.split for t in triplets} == {"train", "test"}
    assert len({t.combination.id for t in triplets}) >= max(12, 0.8 * len(combinations))
    assert report.api["requests"] > 0 and report.api["cache_hits"] > 0
    # re-run every program in a fresh sandbox with an empty cache: the live server gives the answer
    options = _options(spec_path, server, tmp_path / "fresh.sqlite", requests_per_snippet=100)
    with Sandbox(LIVE_ENV_FACTORY, options.model_dump(mode="json"), Limits(wall_seconds=30)) as sandbox:
        results = sandbox.run_batch([t.code for t in triplets])
    assert all(reproduces(t.answer, r, fuzzy_apis(spec)) for t, r in zip(triplets, results))  # a value, or the clarification


def test_a_second_run_is_answered_from_the_cache(healthy, spec_path: Path, server: str) -> None:
    report, tmp = healthy
    again = generate_live(spec_path, _options(spec_path, server, tmp / "cache.sqlite", requests_per_snippet=100), _settings(), tmp / "ds2", show_progress=False)
    assert again.api.get("requests", 0) == 0  # sampling, ground truth and verification all hit the cache
    assert {t.id for t in iter_triplets(again.dataset_path)} == {t.id for t in iter_triplets(report.dataset_path)}


def test_a_snippet_cannot_spend_more_than_its_request_budget(spec_path: Path, server: str, tmp_path: Path) -> None:
    options = _options(spec_path, server, tmp_path / "cache.sqlite", requests_per_snippet=5)
    loop = "final_result = [len(searchPeople(name=w)) for w in ['ann', 'bob', 'carl', 'dana', 'eve', 'finn', 'gus']]\n"
    with Sandbox(LIVE_ENV_FACTORY, options.model_dump(mode="json"), Limits(wall_seconds=30)) as sandbox:
        first, second = sandbox.run_batch([loop, "final_result = len(searchPeople(name='ann'))\n"])
    assert not first.ok and "budget of 5 API requests per snippet" in first.error
    assert second.ok  # the next snippet has its budget back (and 'ann' comes from the cache)


def test_a_flaky_service_loses_no_verified_triplet(healthy, spec_path: Path, server: str, tmp_path: Path) -> None:
    report, _ = healthy
    with flaky_proxy(server, "--fail-every", "3", "--slow-every", "17", "--slow-s", str(FLAKY_SLOW_S)) as url:
        options = _options(spec_path, url, tmp_path / "cache.sqlite", timeout_s=FLAKY_TIMEOUT_S, attempts=FLAKY_ATTEMPTS, requests_per_snippet=100)
        flaky = generate_live(spec_path, options, _settings(), tmp_path / "ds", show_progress=False)
    assert flaky.api["retries"] > 0 and flaky.api["http_500"] > 0 and flaky.api["timeouts"] > 0
    assert flaky.stats.get("api_unavailable", 0) == 0
    assert {t.id for t in iter_triplets(flaky.dataset_path)} == {t.id for t in iter_triplets(report.dataset_path)}


def test_an_outage_during_generation_is_counted_and_keeps_what_was_verified(healthy, spec_path: Path, server: str, tmp_path: Path) -> None:
    report, _ = healthy
    verified = {t.id: t for t in iter_triplets(report.dataset_path)}
    out = tmp_path / "ds"
    # the same run as `healthy` (same settings, a fresh cache), and the service goes down halfway
    # through the calls that follow the sampling of head entities (which must see the whole service,
    # or other entities would be drawn): what was verified before the outage is kept, later candidates are lost
    probes, requests = report.api["probe_calls"], report.api["requests"]
    assert requests - probes >= 10
    down_after = probes + (requests - probes) // 2
    env = {**os.environ, "SOAY_LIVE_API__ATTEMPTS": "2", "SOAY_LIVE_API__TIMEOUT_S": str(HEALTHY_TIMEOUT_S),
           "SOAY_LIVE_API__BACKOFF_S": "0.01", "SOAY_LIVE_API__MAX_BACKOFF_S": "0.05", "SOAY_LIVE_API__SAMPLE_SIZE": str(SAMPLE_SIZE),
           "SOAY_DATA__TRAIN_PER_COMBINATION": str(PER_SPLIT["train_per_combination"]),
           "SOAY_DATA__TEST_PER_COMBINATION": str(PER_SPLIT["test_per_combination"]), "SOAY_DATA__VALIDATION_PER_COMBINATION": "0"}
    with flaky_proxy(server, "--down-after", str(down_after)) as url:
        done = subprocess.run([*SOAY, "spec", "generate", str(spec_path), "--base-url", url, "--out", str(out)],
                              cwd=ROOT, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    unavailable = int(re.search(r"unavailable calls: (\d+)", done.stdout)[1])
    assert unavailable > 0
    shown = [int(n) for n in re.findall(r"api_unavailable=(\d+)", done.stderr)]
    assert shown and shown[-1] > 0  # the progress display counts them as they happen
    kept = list(iter_triplets(out))
    assert 0 < len(kept) < len(verified)
    kept_verified = [t for t in kept if t.id in verified]
    assert kept_verified and all(t.answer == verified[t.id].answer for t in kept_verified)
    # A candidate lost to the outage is replaced by the next one its unit draws; one whose every
    # call was already cached before the outage is verified from the cache. Such a triplet can only
    # stand in for a verified one of its own unit that the outage cost, and it must be right too.
    kept_ids = {t.id for t in kept}
    lost_units = {(t.combination.id, t.split) for t in verified.values() if t.id not in kept_ids}
    assert all((t.combination.id, t.split) in lost_units for t in kept if t.id not in verified)
    options = _options(spec_path, server, tmp_path / "fresh.sqlite", requests_per_snippet=100)
    with Sandbox(LIVE_ENV_FACTORY, options.model_dump(mode="json"), Limits(wall_seconds=30)) as sandbox:
        results = sandbox.run_batch([t.code for t in kept])
    assert all(reproduces(t.answer, r, fuzzy_apis(load_spec(spec_path))) for t, r in zip(kept, results))  # nothing wrong was kept
