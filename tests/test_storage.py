"""The data root's object-store mirror (soay/storage.py) against a loopback S3 server (moto's, a
process stopped by its pid): a dataset version and a checkpoint written on one "node" are read back
on another whose data root starts empty."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TEST_CORPUS_SIZE, TINY_SFT, free_port, stop, wait_http
from soay.dataset import iter_triplets, load_manifest
from soay.settings import Settings
from soay.storage import MirrorError, mirror_url, pull, push

BUCKET = "soay-data"


@pytest.fixture(scope="module")
def s3_options():
    """fsspec options of a moto S3 server on loopback with one empty bucket."""
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/moto-api/", proc, timeout=60)
        options = {"endpoint_url": f"http://127.0.0.1:{port}", "key": "testing", "secret": "testing"}
        import s3fs

        s3fs.S3FileSystem(**options).mkdir(BUCKET)
        yield options
    finally:
        stop(proc)


def node_settings(root: Path, s3_options: dict) -> Settings:
    return Settings(
        data={"root": root, "mirror": f"s3://{BUCKET}/cluster", "mirror_options": s3_options, "corpus_size": TEST_CORPUS_SIZE,
              "seed": 7, "train_per_combination": 1, "test_per_combination": 1, "unit_size": 4},
        ray={"workers": 2},
    )


def digests(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def node_a(tmp_path_factory, aminer_db, s3_options, local_ray) -> Settings:
    """The first node: the session's corpus in its data root, and a dataset `soay generate` wrote
    there (pushing it to the mirror)."""
    from training.generate import generate

    settings = node_settings(tmp_path_factory.mktemp("node_a"), s3_options)
    corpus = settings.data.corpus_path()
    corpus.parent.mkdir(parents=True)
    shutil.copy(aminer_db, corpus)
    generate(settings, show_progress=False)
    return settings


def test_a_dataset_version_written_on_one_node_is_read_on_another(node_a, s3_options, tmp_path):
    node_b = node_settings(tmp_path / "node_b", s3_options).data
    dataset_a, dataset_b = node_a.data.dataset_path(), node_b.dataset_path()
    assert not dataset_b.exists()
    assert pull(node_b, dataset_b) == len(digests(dataset_a))  # manifest and shards
    assert digests(dataset_b) == digests(dataset_a)
    manifest = load_manifest(dataset_b)
    assert manifest.version == 1 and len(list(iter_triplets(dataset_b, split="train"))) > 20
    # the corpus the workers read came along too, and nothing is fetched twice
    assert pull(node_b, node_b.corpus_path()) == 1 and node_b.corpus_path().stat().st_size == node_a.data.corpus_path().stat().st_size
    assert pull(node_b, dataset_b) == 0
    # a second push of what the mirror holds sends nothing; a new file alone is sent
    assert push(node_a.data, dataset_a) == 0
    (dataset_a / "NOTE.txt").write_text("grown")
    assert push(node_a.data, dataset_a) == 1 and pull(node_b, dataset_b) == 1


def test_a_checkpoint_trained_on_one_node_is_read_on_another(node_a, s3_options, tmp_path):
    from training.sft import load_config
    from training.train_job import run_sft

    run_dir = node_a.data.root / "aminer" / "runs" / "full"
    run_sft(load_config("configs/sft/cpu_full.yaml", [*TINY_SFT, "max_steps=1", "workers=1"]), node_a.data.dataset_path(),
            run_dir, node_a.data)
    node_b = node_settings(tmp_path / "node_b", s3_options).data
    model_b = node_b.root / "aminer" / "runs" / "full" / "model"
    assert pull(node_b, model_b) > 0
    assert digests(model_b) == digests(run_dir / "model")
    assert {"config.json", "model.safetensors", "run.json"} <= set(digests(model_b))
    assert mirror_url(node_b, model_b) == f"s3://{BUCKET}/cluster/aminer/runs/full/model"


def test_what_lies_outside_the_data_root_cannot_be_mirrored(node_a, tmp_path):
    from training.generate import generate

    with pytest.raises(MirrorError, match="not under the data root"):
        push(node_a.data, tmp_path)
    with pytest.raises(MirrorError, match="not under the data root"):  # before any work, not after it
        generate(node_a, out=tmp_path / "elsewhere", show_progress=False)
    assert not (tmp_path / "elsewhere").exists()
