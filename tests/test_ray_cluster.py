"""`soay generate` against a separate Ray cluster: joined through RAY_ADDRESS, and as a Ray job."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, SOAY, TEST_CORPUS_SIZE, free_port, stop

from soay.dataset import load_manifest


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A separate Ray head (with the Jobs API) started as a process and stopped by its pid.

    A throw-away loopback cluster needs no token (Ray 2.60 turns tokens on by default, and a
    driver that ran `ray.init` earlier in this process exported RAY_AUTH_MODE=token).
    """
    port, dash = free_port(), free_port()
    patch = pytest.MonkeyPatch()
    patch.setenv("RAY_AUTH_MODE", "disabled")
    temp = tmp_path_factory.mktemp("ray")
    proc = subprocess.Popen(
        [str(Path(os.sys.executable).parent / "ray"), "start", "--head", "--block", f"--port={port}", "--num-cpus=3",
         "--node-ip-address=127.0.0.1",
         "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}", "--disable-usage-stats",
         f"--temp-dir={temp}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    from ray.job_submission import JobSubmissionClient

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
        yield f"127.0.0.1:{port}", client
    finally:
        stop(proc)
        patch.undo()


def test_generate_joins_a_cluster_through_RAY_ADDRESS(ray_cluster, data_root, aminer_db, tmp_path):
    address, _ = ray_cluster
    env = {**os.environ, "RAY_ADDRESS": address, "SOAY_DATA__ROOT": str(data_root), "SOAY_DATA__SEED": "7", "SOAY_DATA__CORPUS_SIZE": str(TEST_CORPUS_SIZE)}
    out = subprocess.run(
        [*SOAY, "generate", "--train-per-combination", "1", "--test-per-combination", "1", "--workers", "2",
         "--out", str(tmp_path / "ds"), "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["kept"] > 40
    assert load_manifest(tmp_path / "ds").sources["1"]["ray_address"].endswith(address.split(":")[1])


def test_generate_runs_as_a_ray_job(ray_cluster, data_root, aminer_db, tmp_path):
    from ray.job_submission import JobStatus

    _, client = ray_cluster
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
