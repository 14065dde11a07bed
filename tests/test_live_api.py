"""Import -> live-API environment -> verified triplets, through a real GraphQL server on loopback.

The movies domain is served as GraphQL (serving/graphql_clone.py), imported by URL, and
triplets are generated through it: head entities sampled from its searches, ground truth and
verification by HTTP. A flaky proxy in front of it (500s, answers slower than the time-out, an
outage) must cost no verified triplet, and what it did must show in the counts.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SOAY
from live_services import flaky_proxy, graphql_movies

from soay.answers import answers_match
from soay.dataset import iter_triplets
from soay.environment.live_api import LiveApiOptions
from soay.environment.movies_corpus import build_movie_corpus
from soay.importers import import_document, write_import
from soay.sandbox import Limits, Sandbox
from soay.settings import Settings
from training.live_generate import LIVE_ENV_FACTORY, generate_live

PER_SPLIT = {"train_per_combination": 2, "test_per_combination": 1}
pytestmark = pytest.mark.timeout(900)  # a live service on a shared 2-core machine; time-outs are part of the test


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("movies") / "corpus.sqlite"
    build_movie_corpus(db, size=2000, seed=0)
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


def _options(spec_path: Path, url: str, cache: Path, timeout_s: float = 5.0, **extra) -> LiveApiOptions:
    return LiveApiOptions(spec_path=str(spec_path), base_url=url, cache_path=str(cache), timeout_s=timeout_s,
                          backoff_s=0.01, max_backoff_s=0.05, **extra)


@pytest.fixture(scope="module")
def healthy(spec_path: Path, server: str, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("healthy")
    report = generate_live(spec_path, _options(spec_path, server, tmp / "cache.sqlite", requests_per_snippet=100), _settings(), tmp / "ds", show_progress=False)
    return report, tmp


def test_triplets_are_verified_through_the_live_server(healthy, spec_path: Path, server: str, tmp_path: Path) -> None:
    report, _ = healthy
    triplets = list(iter_triplets(report.dataset_path))
    assert report.kept == len(triplets) >= 30
    assert {t.split for t in triplets} == {"train", "test"}
    assert len({t.combination.id for t in triplets}) >= 12
    assert report.api["requests"] > 0 and report.api["cache_hits"] > 0
    # re-run every program in a fresh sandbox with an empty cache: the live server gives the answer
    options = _options(spec_path, server, tmp_path / "fresh.sqlite", requests_per_snippet=100)
    with Sandbox(LIVE_ENV_FACTORY, options.model_dump(mode="json"), Limits(wall_seconds=30)) as sandbox:
        results = sandbox.run_batch([t.code for t in triplets])
    assert all(r.ok and answers_match(t.answer, r.result) for t, r in zip(triplets, results))


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
    with flaky_proxy(server, "--fail-every", "3", "--slow-every", "11", "--slow-s", "4") as url:
        options = _options(spec_path, url, tmp_path / "cache.sqlite", timeout_s=2.0, requests_per_snippet=100)
        flaky = generate_live(spec_path, options, _settings(), tmp_path / "ds", show_progress=False)
    assert flaky.api["retries"] > 0 and flaky.api["http_500"] > 0 and flaky.api["timeouts"] > 0
    assert flaky.stats.get("api_unavailable", 0) == 0
    assert {t.id for t in iter_triplets(flaky.dataset_path)} == {t.id for t in iter_triplets(report.dataset_path)}


def test_an_outage_during_generation_is_counted_and_keeps_what_was_verified(healthy, spec_path: Path, server: str, tmp_path: Path) -> None:
    report, _ = healthy
    verified = {t.id: t for t in iter_triplets(report.dataset_path)}
    out = tmp_path / "ds"
    env = {**os.environ, "SOAY_LIVE_API__ATTEMPTS": "2", "SOAY_LIVE_API__TIMEOUT_S": "2", "SOAY_LIVE_API__BACKOFF_S": "0.01",
           "SOAY_DATA__TRAIN_PER_COMBINATION": "2", "SOAY_DATA__TEST_PER_COMBINATION": "1", "SOAY_DATA__VALIDATION_PER_COMBINATION": "0"}
    with flaky_proxy(server, "--down-after", "400") as url:
        done = subprocess.run([*SOAY, "spec", "generate", str(spec_path), "--base-url", url, "--out", str(out)],
                              cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    unavailable = int(re.search(r"unavailable calls: (\d+)", done.stdout)[1])
    assert unavailable > 0
    shown = [int(n) for n in re.findall(r"api_unavailable=(\d+)", done.stderr)]
    assert shown and shown[-1] > 0  # the progress display counts them as they happen
    kept = list(iter_triplets(out))
    assert 0 < len(kept) < len(verified)
    assert all(t.id in verified and t.answer == verified[t.id].answer for t in kept)
