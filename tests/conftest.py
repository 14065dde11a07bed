"""Shared, session-scoped real services: a small corpus, a local Ray, the HTTP API clone.

Each heavy service starts once per test session and is stopped by its pid at the end.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOAY = [sys.executable, "-m", "cli.main"]
TEST_CORPUS_SIZE = 2000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Stop a service by its pid: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
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


def verified_triplets(settings, env, db: Path, per_split: dict[str, int], seed: int = 0) -> tuple[list, list]:
    """(train, test) triplets of every combination, made and verified in this process by the
    factory of `soay generate`; a different `seed` gives other entities and phrasings."""
    from soay.domains import get_domain
    from soay.triplets import TripletFactory, WorkUnit
    from training.generate import sandbox_for

    domain = get_domain("aminer")
    made: dict[tuple, object] = {}
    with sandbox_for("aminer", db, settings.sandbox) as sandbox:
        factory = TripletFactory(env, domain.combinations, sandbox.run_batch, settings.data.test_fraction)
        for n, c in enumerate(domain.combinations):
            for split, count in per_split.items():
                for t in factory.make(WorkUnit(c.id, split, count, seed=seed + n)).triplets:
                    made.setdefault((t.combination.id, t.entity_id, tuple(sorted(t.inputs.items()))), t)
    ordered = sorted(made.values(), key=lambda t: t.id)
    return [t for t in ordered if t.split == "train"], [t for t in ordered if t.split == "test"]


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


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
