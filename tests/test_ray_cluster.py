"""The stack on a separate Ray cluster of two nodes (a head and a worker node, each its own `ray
start` process): `soay generate` joined through RAY_ADDRESS and as a Ray job, its workers on both
nodes, and a Serve stage with a replica on each node."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, SOAY, TEST_CORPUS_SIZE, TINY_SFT, free_port, stop

from soay.dataset import load_manifest


RAY = str(Path(os.sys.executable).parent / "ray")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A separate Ray cluster of two nodes on loopback: a head (with the Jobs API) and a worker
    node that joins it, each a `ray start --block` process stopped by its pid.

    A throw-away loopback cluster needs no token (Ray 2.60 turns tokens on by default, and a
    driver that ran `ray.init` earlier in this process exported RAY_AUTH_MODE=token).
    """
    port, dash = free_port(), free_port()
    patch = pytest.MonkeyPatch()
    patch.setenv("RAY_AUTH_MODE", "disabled")
    temp = tmp_path_factory.mktemp("ray")
    proc = subprocess.Popen(
        [RAY, "start", "--head", "--block", f"--port={port}", "--num-cpus=3",
         "--node-ip-address=127.0.0.1",
         "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}", "--disable-usage-stats",
         f"--temp-dir={temp}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    from ray.job_submission import JobSubmissionClient

    worker = None
    try:
        deadline = time.monotonic() + 120
        client = None
        while time.monotonic() < deadline and client is None:
            assert proc.poll() is None, "ray start exited"
            try:
                client = JobSubmissionClient(f"http://127.0.0.1:{dash}")
            except Exception:
                time.sleep(1)
        assert client is not None, "Ray head did not come up"
        worker = subprocess.Popen(
            [RAY, "start", "--block", f"--address=127.0.0.1:{port}", "--num-cpus=2", "--node-ip-address=127.0.0.1",
             "--disable-usage-stats"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while len(alive_nodes(f"http://127.0.0.1:{dash}")) < 2:
            assert worker.poll() is None, "the worker node's ray start exited"
            assert time.monotonic() < deadline, "the worker node did not join the head"
            time.sleep(1)
        yield f"127.0.0.1:{port}", client, f"http://127.0.0.1:{dash}"
    finally:
        if worker is not None:
            stop(worker)
        stop(proc)
        patch.undo()


def alive_nodes(dashboard: str) -> list[str]:
    """The ids of the cluster's live nodes, from its dashboard's state API (so that this process
    never joins the cluster as a driver)."""
    from ray.util.state import list_nodes

    try:
        return [node.node_id for node in list_nodes(address=dashboard, filters=[("state", "=", "ALIVE")])]
    except Exception:  # the dashboard's state API is not up yet
        return []


def cluster_env(address: str, data_root: Path) -> dict[str, str]:
    """A `soay` command's environment that joins the cluster and reads the session's test corpus."""
    return {**os.environ, "RAY_ADDRESS": address, "SOAY_DATA__ROOT": str(data_root), "SOAY_DATA__SEED": "7",
            "SOAY_DATA__CORPUS_SIZE": str(TEST_CORPUS_SIZE)}


@pytest.fixture(scope="module")
def cluster_dataset(ray_cluster, data_root, aminer_db, tmp_path_factory) -> tuple[dict, Path]:
    """(`soay generate --json`'s report, the dataset) of a generation joined through RAY_ADDRESS."""
    address, _, _ = ray_cluster
    out_dir = tmp_path_factory.mktemp("cluster") / "ds"
    out = subprocess.run(
        [*SOAY, "generate", "--train-per-combination", "1", "--test-per-combination", "1", "--workers", "2",
         "--out", str(out_dir), "--json"],
        cwd=ROOT, env=cluster_env(address, data_root), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out_dir


def test_generate_joins_a_cluster_through_RAY_ADDRESS_and_works_on_both_nodes(ray_cluster, cluster_dataset):
    address, _, dashboard = ray_cluster
    report, dataset = cluster_dataset
    assert report["kept"] > 40
    source = load_manifest(dataset).sources["1"]
    assert source["ray_address"].endswith(address.split(":")[1])
    # its two workers were spread over the two nodes, and each node made triplets
    by_node = source["triplets_by_node"]
    assert set(by_node) == set(alive_nodes(dashboard)) and all(n > 0 for n in by_node.values()), by_node


def test_sft_trains_with_a_worker_on_each_node(ray_cluster, cluster_dataset, data_root, tmp_path):
    """`soay train` of the full-SFT recipe on the cluster, its two Ray Train workers (DDP over gloo)
    placed SPREAD: one on each node, and one checkpoint."""
    address, _, dashboard = ray_cluster
    _, dataset = cluster_dataset
    out = subprocess.run(
        [*SOAY, "train", "-f", "configs/sft/cpu_full.yaml", *TINY_SFT, "max_steps=2", "workers=2", "placement=SPREAD",
         "--dataset", str(dataset), "--out", str(tmp_path / "run")],
        cwd=ROOT, env=cluster_env(address, data_root), capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "model" / "run.json").read_text())
    assert record["metrics"]["step"] == 2
    assert record["metrics"]["nodes"] == sorted(alive_nodes(dashboard))
    assert (tmp_path / "run" / "model" / "config.json").is_file()


def test_generate_runs_as_a_ray_job(ray_cluster, data_root, aminer_db, tmp_path):
    from ray.job_submission import JobStatus

    _, client, _ = ray_cluster
    deadline = time.monotonic() + 120
    while True:  # the head's job agent comes up a few seconds after the dashboard
        try:
            job = client.submit_job(
                entrypoint=f"{os.sys.executable} -m cluster.jobs.generate --train-per-combination 1 "
                f"--test-per-combination 1 --workers 2 --out {tmp_path / 'job'}",
                runtime_env={"env_vars": {"SOAY_DATA__ROOT": str(data_root), "SOAY_DATA__SEED": "7", "SOAY_DATA__CORPUS_SIZE": str(TEST_CORPUS_SIZE)}},
            )
            break
        except RuntimeError as e:
            assert "No available agent" in str(e) and time.monotonic() < deadline, e
            time.sleep(2)
    deadline = time.monotonic() + 300
    while client.get_job_status(job) not in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED}:
        assert time.monotonic() < deadline, "job did not finish"
        time.sleep(2)
    logs = client.get_job_logs(job)
    assert client.get_job_status(job) == JobStatus.SUCCEEDED, logs[-2000:]
    assert json.loads(logs.strip().splitlines()[-1])["kept"] > 40
    assert load_manifest(tmp_path / "job").counts()["test"] > 20


# A Serve stage of the application (the executor: sandboxes over the corpus) deployed with the
# stack's stage options on the cluster, as `soay serve` deploys it, two replicas at most one per node.
# Both nodes share 127.0.0.1 here, so only the head runs an HTTP proxy; the call goes through a handle.
SERVE_ON_CLUSTER = """
import json, sys
import ray
from ray import serve
from serving.app import stage_options
from serving.executor import Executor
from serving.ray_compat import serve_details
from soay.settings import Settings

ray.init(address=sys.argv[1])
settings = Settings(serve={"min_replicas": 2, "max_replicas": 2, "max_replicas_per_node": 1})
serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": int(sys.argv[2])})
handle = serve.run(Executor.options(**stage_options(settings.serve)).bind(settings=settings), name="spread", route_prefix=None)
executor = serve_details()["applications"]["spread"]["deployments"]["executor"]
replicas, config = executor["replicas"], executor["deployment_config"]
result = handle.run.remote("final_result = len(searchPerson(name='a'))").result()
with open(sys.argv[3], "w") as out:  # Ray's and Serve's own lines share the console
    json.dump({"replicas": [[r["node_id"], r["state"]] for r in replicas], "per_node": config.get("max_replicas_per_node"),
               "result": result}, out, default=str)
serve.shutdown()
"""


def test_a_serve_stage_puts_a_replica_on_each_node(ray_cluster, data_root, aminer_db, tmp_path):
    address, _, dashboard = ray_cluster
    env = {**os.environ, "SOAY_DATA__ROOT": str(data_root), "SOAY_DATA__CORPUS_SIZE": str(TEST_CORPUS_SIZE)}
    out = subprocess.run([os.sys.executable, "-c", SERVE_ON_CLUSTER, address, str(free_port()), str(tmp_path / "report.json")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert sorted(node for node, _ in report["replicas"]) == sorted(alive_nodes(dashboard))
    assert {state for _, state in report["replicas"]} == {"RUNNING"}
    assert report["per_node"] == 1  # the setting reached Serve: a third replica would find no node
    assert report["result"]["ok"] and report["result"]["result"] > 0  # a program ran on the corpus through the stage
