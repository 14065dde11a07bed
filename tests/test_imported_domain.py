"""Bring your own API, end to end: the README's command sequence on an API this project did not
hand-write a domain for.

A GraphQL server of the movies data runs on loopback (serving/graphql_clone.py, its own process);
`soay spec import` reads its schema by URL into a spec named `films` (not the packaged `movies`,
so nothing can fall back to the hand-written domain); then, with only `live_api.spec` and
`live_api.base_url` set, `soay spec generate` verifies triplets through the server, `soay index`
and `soay train` build the retriever and the heads, and `soay serve` answers over HTTP: the ask
endpoint, the OpenAI endpoint and the page's config all speak about the imported API, and every
API call of the served program goes to the live server.

Sized for CI on a 2-core machine: a 500-movie corpus, a few triplets per combination, the 2-layer
copy of the base (the `gemma_small` fixture's cache), one replica per stage.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, SOAY, foreign_lines, free_port, stop, wait_http
from live_services import graphql_movies

from soay.answers import answers_match
from soay.clarifications import is_clarification
from soay.dataset import iter_triplets, load_manifest
from soay.environment.movies_corpus import build_movie_corpus

pytestmark = pytest.mark.timeout(900)

DOMAIN = "films"
ENGINE = {"dtype": "float32", "max_model_len": 512, "enforce_eager": True, "kv_cache_memory_bytes": 64 * 2**20}


def soay(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([*SOAY, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"soay {' '.join(args)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def graphql_server(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("films-db") / "corpus.sqlite"
    build_movie_corpus(db, size=500, seed=3)
    with graphql_movies(db) as url:
        yield url


@pytest.fixture(scope="module")
def deployed(graphql_server: str, gemma_base: Path, gemma_small: Path, tmp_path_factory: pytest.TempPathFactory):
    """import -> generate -> index -> train -> serve, each as the CLI command a person types."""
    root = tmp_path_factory.mktemp("films")
    spec = root / "specs" / f"{DOMAIN}.yaml"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("SOAY_")}
    soay(base_env, "spec", "import", f"{graphql_server}/graphql", "--domain", DOMAIN, "--out", str(spec))

    port = free_port()
    env = {
        **base_env,
        "SOAY_DATA__ROOT": str(root / "data"),
        "SOAY_LIVE_API__SPEC": str(spec),
        "SOAY_LIVE_API__BASE_URL": graphql_server,
        "SOAY_LIVE_API__SAMPLE_SIZE": "20",  # head entities sampled from the server's searches
        "SOAY_DATA__TRAIN_PER_COMBINATION": "6",
        "SOAY_DATA__VALIDATION_PER_COMBINATION": "2",
        "SOAY_DATA__TEST_PER_COMBINATION": "1",
        "SOAY_BASE_MODEL__SOURCE": str(gemma_base),  # the gemma_small fixture's 2-layer copy, from its cache
        "SOAY_BASE_MODEL__NUM_LAYERS": "2",
        "SOAY_BASE_MODEL__CACHE_DIR": str(gemma_small.parent),
        "SOAY_RAY__WORKERS": "1",
        "SOAY_RETRIEVER__DEVICE": "cpu",
        "SOAY_SERVE__PORT": str(port),
        "SOAY_SERVE__MAX_REPLICAS": "1",
        "SOAY_SERVE__ENGINE_KWARGS": json.dumps(ENGINE),
        "SOAY_KAFKA__BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}",  # no broker: the log stream warns and drops
    }
    soay(env, "spec", "generate")
    soay(env, "index")
    soay(env, "train", "out_of_scope=false")  # the out-of-scope questions are written for the academic domain
    log = root / "serve.log"
    with log.open("w") as out:
        serve = subprocess.Popen([*SOAY, "serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_http(f"{url}/healthz", serve, timeout=400)
            deadline = time.monotonic() + 60  # the replicas answer a moment before the command says so
            while "serving at" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
        except (RuntimeError, TimeoutError) as exc:
            raise AssertionError(f"{exc}; soay serve printed:\n{log.read_text()[-3000:]}") from None
        yield url, root / "data" / DOMAIN, log
    finally:
        stop(serve, grace=180)  # its own shutdown stops the app and the Ray cluster it started


def test_an_imported_graphql_api_is_generated_trained_served_and_answers(deployed, graphql_server: str) -> None:
    url, data, log = deployed
    manifest = load_manifest(data / "dataset")
    assert manifest.domain == DOMAIN and manifest.counts()["train"] > 0
    assert (data / "runs" / "heads" / "model" / "heads.npz").is_file()

    # a question the model was trained on, with the server's own entity: answered through the live API
    asked = next(t for t in iter_triplets(data / "dataset", split="train") if t.hops == 2 and not is_clarification(t.answer))
    response = httpx.post(f"{url}/v1/ask", json={"query": asked.query}, timeout=120)
    assert response.status_code == 200, response.text
    record = response.json()
    assert record["ok"] and record["kind"] == "answer", json.dumps(record, ensure_ascii=False)
    assert record["solution"] == asked.solution
    assert answers_match(record["result"], asked.answer), (record["result"], asked.answer)
    assert [step["api"] for step in record["explanation"]] == asked.solution.split(" -> ")

    # the OpenAI endpoint answers the same question in words
    chat = httpx.post(f"{url}/v1/chat/completions", json={"model": "soay", "messages": [{"role": "user", "content": asked.query}]}, timeout=120)
    assert chat.status_code == 200, chat.text
    assert chat.json()["choices"][0]["message"]["content"].strip()

    # the page is about the imported API: its name, its APIs, examples from its own phrasings
    page = httpx.get(f"{url}/page.json", timeout=30)
    assert page.status_code == 200, log.read_text()[-3000:]
    config = page.json()
    spec_apis = {a["name"] for a in httpx.get(f"{url}/v1/library", timeout=30).json()["apis"]}
    assert config["domain"] == DOMAIN and set(config["apis"]) == spec_apis
    assert config["examples"] and all("{" not in e["question"] for e in config["examples"])

    # the console names where the replicas' logs are, and is not flooded with their per-call lines
    console = log.read_text()
    assert re.search(r"replica logs: /tmp/ray/session_[^/\s]+/logs/serve ", console), console[-3000:]
    assert not re.search(r" -- (POST|GET|CALL) \S+ (OK|\d{3}) ", console), console[-3000:]
    # nor with Ray's, Serve's and the two vLLM engines' start-up lines: one line per component
    foreign = foreign_lines(console)
    assert len(foreign) <= 2, f"{len(foreign)} lines not the stack's:\n" + "\n".join(foreign[:40])
    assert sum(line.startswith("vllm: ") for line in console.splitlines()) == 2, console[-3000:]


def test_spec_generate_without_a_spec_or_address_says_what_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOAY_")} | {"SOAY_DATA__ROOT": str(tmp_path)}
    done = subprocess.run([*SOAY, "spec", "generate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "base-url" in done.stderr and "Traceback" not in done.stderr
    env["SOAY_LIVE_API__SPEC"] = str(tmp_path / "missing.yaml")
    done = subprocess.run([*SOAY, "spec", "generate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "missing.yaml" in done.stderr and "Traceback" not in done.stderr
