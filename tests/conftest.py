"""Shared, session-scoped real services: a small corpus, a local Ray, the HTTP API clone.

Each heavy service starts once per test session and is stopped by its pid at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from soay.dataset import iter_triplets
from soay.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SOAY = [sys.executable, "-m", "cli.main"]
TEST_CORPUS_SIZE = 2000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop a service by its pid: SIGTERM, then SIGKILL if it lingers past `grace` seconds (a
    service that starts its own Ray needs longer: killed, it would leave its cluster behind)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"service exited with {proc.returncode} before {url} answered")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


OWN_LINES = ("ray: ", "vllm: ", "serve: ", "serving at ", "replica logs: ", "error: ")
"""How the lines `soay serve` itself prints begin: one per component it starts (its Ray, each Serve
deployment, each vLLM engine), its address, where the libraries' logs went, an error."""


def foreign_lines(console: str) -> list[str]:
    """The lines of a console that the stack did not write: Ray's, Serve's, vLLM's, torch's...
    (cluster/library_logs.py sends theirs to log files)."""
    return [line for line in console.splitlines() if line.strip() and not line.startswith(OWN_LINES)]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of the served application run last, together: one app (minutes to start) serves
    them all, and no other module's Ray (`local_ray`) starts or stops while it runs. A module that
    deploys its own Serve application and shuts Serve down (test_retriever) must sort before the
    first module that uses the session's app: their files are named test_serving*. A test that
    starts a second `soay serve` uses `served_data`, not the app, and so runs before it: the two
    stacks together cross Ray's memory threshold on a 24 GiB machine, and Ray kills the app's
    workers (its Serve controller among them) to make room."""
    items.sort(key=lambda item: "served" in getattr(item, "fixturenames", ()))  # stable: order kept within each group


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def aminer_db(data_root) -> Path:
    from training.corpus import build_corpus

    path = data_root / "aminer" / "corpus.sqlite"
    build_corpus("aminer", path, TEST_CORPUS_SIZE, seed=7, show_progress=False)
    return path


@pytest.fixture(scope="session")
def aminer_env(aminer_db):
    from soay.domains import get_domain

    env = get_domain("aminer").open_environment(aminer_db)
    yield env
    env.close()


def verified_triplets(
    settings, env, db: Path, per_split: dict[str, int], seed: int = 0, clarification_share: float = 0.0
) -> tuple[list, list]:
    """(train, test) triplets of every combination, made and verified in this process by the
    factory of `soay generate`; a different `seed` gives other entities and phrasings. With the
    default `clarification_share` of 0 every answer is a plain value: no clarification question
    (soay/clarifications.py) is made on purpose, and the few the runs turn up (namesakes at one
    organisation) are left out."""
    from soay.clarifications import is_clarification
    from soay.domains import get_domain
    from soay.triplets import TripletFactory, WorkUnit
    from training.generate import sandbox_for

    domain = get_domain("aminer")
    made: dict[tuple, object] = {}
    with sandbox_for("aminer", db, settings.sandbox) as sandbox:
        factory = TripletFactory(env, domain.combinations, sandbox.run_batch, settings.data.test_fraction, settings.data.validation_fraction,
                                 clarification_share=clarification_share)
        for n, c in enumerate(domain.combinations):
            for split, count in per_split.items():
                for t in factory.make(WorkUnit(c.id, split, count, seed=seed + n)).triplets:
                    if clarification_share == 0 and is_clarification(t.answer):
                        continue
                    made.setdefault((t.combination.id, t.entity_id, tuple(sorted(t.inputs.items()))), t)
    ordered = sorted(made.values(), key=lambda t: t.id)
    return [t for t in ordered if t.split == "train"], [t for t in ordered if t.split == "test"]


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray for the module; the session's Ray when one is already up (the served app's),
    which this fixture then leaves running."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


TINY_SFT = ["shape.hidden_size=64", "shape.intermediate_size=128", "shape.num_hidden_layers=2", "shape.num_attention_heads=2",
            "batch_size=8", "log_every=2", "vocab_size=600"]
"""A tiny model from scratch for the full-SFT recipe (configs/sft/cpu_full.yaml): seconds on a CPU."""
TINY_SFT_RUN = ["max_steps=6", "workers=2"]
"""The run `tiny_sft` makes with TINY_SFT: 6 steps on 2 Ray Train workers (DDP over gloo), the run
test_sft checks as its DDP run and resumes."""
TINY_DATA = {"corpus_size": TEST_CORPUS_SIZE, "seed": 7, "train_per_combination": 3, "test_per_combination": 1, "unit_size": 3}
"""The dataset `tiny_sft` generates: a few triplets per combination."""


@pytest.fixture(scope="session")
def tiny_sft(tmp_path_factory, aminer_db, data_root) -> tuple[Path, Path]:
    """(dataset, model directory): dataset version 1 (TINY_DATA) and a TINY_SFT model trained on it
    (TINY_SFT_RUN), built once for the modules that check, load or retrain such a model (test_sft,
    test_retrain, test_vllm_models). Shared: a module that appends to the dataset or writes beside
    the model works on copies. Generation and training run on the Ray that is up (a module fixture asks for
    this one after `local_ray`), else on one of its own, shut down after."""
    import ray

    from training.generate import generate
    from training.sft import load_config
    from training.train_job import run_sft

    root = tmp_path_factory.mktemp("tiny_sft")
    own_ray = not ray.is_initialized()
    if own_ray:
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        dataset = generate(Settings(data={"root": data_root, **TINY_DATA}), out=root / "dataset", show_progress=False).dataset_path
        run_sft(load_config("configs/sft/cpu_full.yaml", [*TINY_SFT, *TINY_SFT_RUN]), dataset, root / "base")
    finally:
        if own_ray:
            ray.shutdown()
    return dataset, (root / "base" / "model").resolve()


TINY_LORA = ["max_steps=4", "workers=2"]
"""The LoRA run `tiny_lora` makes on top of TINY_SFT: 2 Ray Train workers, 4 steps."""


@pytest.fixture(scope="session")
def tiny_lora(tmp_path_factory, tiny_sft) -> Path:
    """The output directory (adapter/ and the merged model) of one LoRA run (configs/sft/lora.yaml,
    TINY_SFT shape, TINY_LORA) from the `tiny_sft` model on its dataset, made once for the modules
    that check or load such an adapter (test_sft, test_vllm_models); read only. Runs on the Ray
    that is up (ask for it after `local_ray`), else on one of its own, shut down after."""
    import ray

    from training.sft import load_config
    from training.train_job import run_sft

    dataset, base = tiny_sft
    out = tmp_path_factory.mktemp("tiny_lora") / "lora"
    own_ray = not ray.is_initialized()
    if own_ray:
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        run_sft(load_config("configs/sft/lora.yaml", [*TINY_SFT, *TINY_LORA, f"base_model={base}"]), dataset, out)
    finally:
        if own_ray:
            ray.shutdown()
    return out / "model"


@pytest.fixture(scope="session")
def api_server(aminer_db):
    """The HTTP clone as its own process on a free loopback port."""
    port = free_port()
    proc = subprocess.Popen(
        [*SOAY, "api", "serve", "--db", str(aminer_db), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc)
        yield url, proc
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def kafka_broker():
    """The embedded Kafka-compatible broker (Tansu) on a free loopback port, stopped by its pid."""
    from cluster.broker import start_broker

    broker = start_broker(port=free_port())
    yield broker
    broker.stop()


# --- the served application, one for the whole session (test_serving.py, test_web.py) ---------

RECIPE = ROOT / "configs" / "heads.yaml"
"""The model under test: the default recipe, heads on the packaged Gemma base, fitted on the
session's small dataset (the served-answer test holds it to a floor)."""

MAX_ONGOING, MAX_QUEUED = 4, 4
"""Serve counts a request as queued until its router has picked a replica (a probe's round trip),
so n requests arriving at once need max_queued_requests >= n even when replicas have room: tests
send at most 3 at once, and only the overload test more."""
KEY = "serving-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
LIMITED_KEY = "serving-test-limited-key"
"""A key of the served app's keys file with a low limit: 2 requests at once, then one every 5 s."""
SERVE = {
    "api_key": KEY, "rate_per_key": 1000.0, "burst_per_key": 1000, "min_replicas": 1, "max_replicas": 2, "max_ongoing_requests": MAX_ONGOING, "max_queued_requests": MAX_QUEUED,
    # a program the coder writes takes two 256-token writes when its first breaks the sandbox rules:
    # about 60 s on 2 cores (test_serving's write path), as long as the default timeout
    "request_timeout_s": 120.0,
    "engine_kwargs": {"dtype": "float32", "max_model_len": 512, "enforce_eager": True, "kv_cache_memory_bytes": 64 * 2**20},
}  # fmt: skip


@pytest.fixture(scope="session")
def ray_session():
    import ray

    # more logical CPUs than cores: each engine reserves one, and the ingress must still fit
    ray.init(address="local", num_cpus=8, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def log_broker():
    """The log stream's broker (Tansu on loopback), up before the app and stopped after it. A test
    may stop it and start a new one on the same port: the list's last broker is the running one."""
    from cluster.broker import start_broker

    brokers = [start_broker(port=free_port())]
    yield brokers
    brokers[-1].stop()


@pytest.fixture(scope="session")
def served_data(tmp_path_factory, aminer_db, log_broker, gemma_base):
    """(settings, dataset) of the served application: its data root with the session's corpus, a
    dataset, a heads model and the retriever's index, laid out as `soay serve` reads them. Built
    with a Ray of its own when none is up, shut down after, so that a test that needs only the
    files (the Ctrl-C test) runs before the app is up, in the other tests' group."""
    import ray

    from retriever.build import build_index
    from serving.keys import KeyEntry, KeysFile, digest
    from training.fit_heads import fit_heads, load_heads_config
    from training.generate import generate

    root = tmp_path_factory.mktemp("serving")
    # the app's own data root, laid out as `soay serve` reads it: the session's corpus, and the dataset
    # where the settings say (the page's example questions come from it)
    (root / "aminer").mkdir()
    shutil.copyfile(aminer_db, root / "aminer" / "corpus.sqlite")
    limited = KeyEntry(name="limited", sha256=digest(LIMITED_KEY), rate_per_s=0.2, burst=2)
    (root / "api_keys.yaml").write_text(yaml.safe_dump(KeysFile(keys=[limited]).model_dump(exclude_none=True)))
    settings = Settings(
        data={"root": root, "corpus_size": TEST_CORPUS_SIZE, "seed": 7, "train_per_combination": 32, "validation_per_combination": 4,
              "test_per_combination": 4, "unit_size": 8},
        ray={"workers": 1},
        retriever={"index_dir": root / "index", "device": "cpu"},
        serve={**SERVE, "model_dir": root / "run" / "model", "port": free_port()},
        kafka={"bootstrap_servers": log_broker[0].bootstrap},
    )
    own_ray = not ray.is_initialized()
    if own_ray:
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    started = time.perf_counter()
    try:  # generation and the index run on Ray
        dataset = generate(settings, show_progress=False).dataset_path
        fit_heads(load_heads_config(RECIPE), settings, dataset, root / "run", base_dir=gemma_base)
        build_index(settings, dataset, show_progress=False)
    finally:
        if own_ray:
            ray.shutdown()
    print(f"data, model and index in {time.perf_counter() - started:.0f} s")
    return settings, dataset


@pytest.fixture(scope="session")
def served(served_data, ray_session):
    """(base URL, settings, test triplets) of the running application."""
    from ray import serve

    from serving.app import deploy

    settings, dataset = served_data
    started = time.perf_counter()
    url = deploy(settings)
    print(f"app up in {time.perf_counter() - started:.0f} s")
    try:
        yield url, settings, list(iter_triplets(dataset, split="test"))
    finally:
        serve.shutdown()


@pytest.fixture(scope="session")
def gemma_base() -> Path:
    """The packaged Gemma 3 270M as an HF checkpoint, converted once per machine (data/models)."""
    from soay.settings import Settings
    from training.base_model import resolve_base_model

    settings = Settings(data={"root": ROOT / "data"})
    return resolve_base_model(settings.base_model, settings.data, announce=False)


@pytest.fixture(scope="session")
def gemma_small(gemma_base) -> Path:
    """A 2-layer copy of the base: real weights and tokenizer, a fraction of the compute."""
    from soay.settings import Settings
    from training.base_model import resolve_base_model

    settings = Settings(data={"root": ROOT / "data"}, base_model={"source": str(gemma_base), "num_layers": 2})
    return resolve_base_model(settings.base_model, settings.data, announce=False)
