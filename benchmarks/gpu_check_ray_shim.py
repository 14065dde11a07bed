"""A single-worker stand-in for the few `ray.train` calls of training/sft.py, for benchmarks/gpu_check.py ONLY.

Why it exists: the GPU check runs the project's own SFT loop (`training.sft.train_loop_per_worker`)
on a borrowed CUDA machine that has no package index and takes at most 64 MiB of files along. Ray's
cp312 manylinux wheel alone is 79 MB (ray 2.60.0), so Ray cannot travel there. The loop needs only
five things of Ray Train for one worker, and this module provides exactly those, as rank 0 of a
world of 1:

- `ray.train.get_context()` -> an object with `get_world_rank()` (0) and `get_world_size()` (1);
- `ray.train.report(metrics, checkpoint=None)` -> records the metrics (and the time they came);
- `ray.train.Checkpoint.from_directory(path)` -> an object whose `.path` is the directory;
- `ray.train.torch.prepare_model(model)` -> the model moved to the device (Ray does not wrap a
  world of 1 in DDP either);
- `ray.train.torch.get_device()` -> the device chosen by `install()`.

It also sets up what Ray Train's torch backend would have: a one-process `torch.distributed` group
(NCCL on CUDA, gloo on CPU), which DeepSpeed then reuses. Anything else of Ray is absent, so a loop
that starts using more of it fails loudly here rather than silently doing something else.

Production training keeps using real Ray Train (training/train_job.py); nothing outside
benchmarks/gpu_check.py imports this module.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Report:
    metrics: dict[str, Any]
    checkpoint: Any
    at: float
    """time.perf_counter() when the loop reported"""


@dataclass
class Session:
    """What one run of the loop reported, in order."""

    device: torch.device
    reports: list[Report] = field(default_factory=list)


_session: Session | None = None


class _Context:
    def get_world_rank(self) -> int:
        return 0

    def get_world_size(self) -> int:
        return 1

    def get_local_rank(self) -> int:
        return 0


class Checkpoint:
    def __init__(self, path: str) -> None:
        self.path = str(path)

    @classmethod
    def from_directory(cls, path: Any) -> "Checkpoint":
        return cls(str(path))

    def __repr__(self) -> str:
        return f"Checkpoint({self.path!r})"


def _current() -> Session:
    if _session is None:
        raise RuntimeError("ray_train_shim: call start_session() before running the loop")
    return _session


def get_context() -> _Context:
    return _Context()


def report(metrics: dict[str, Any], checkpoint: Checkpoint | None = None) -> None:
    _current().reports.append(Report(dict(metrics), checkpoint, time.perf_counter()))


def prepare_model(model: torch.nn.Module) -> torch.nn.Module:
    return model.to(_current().device)


def get_device() -> torch.device:
    return _current().device


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def install(device: str) -> None:
    """Make `import ray.train` (and `ray.train.torch`) resolve to this shim, and start the
    one-process distributed group the loop's DeepSpeed path expects. Idempotent."""
    ray = types.ModuleType("ray")
    train = types.ModuleType("ray.train")
    train_torch = types.ModuleType("ray.train.torch")
    for name in ("get_context", "report", "Checkpoint"):
        setattr(train, name, globals()[name])
    train_torch.prepare_model = prepare_model
    train_torch.get_device = get_device
    train.torch = train_torch
    ray.train = train
    ray.__doc__ = train.__doc__ = train_torch.__doc__ = f"stand-in from {__name__} (benchmarks/gpu_check.py only)"
    sys.modules.update({"ray": ray, "ray.train": train, "ray.train.torch": train_torch})

    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
                       "MASTER_ADDR": "127.0.0.1"}.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(
            backend="nccl" if device.startswith("cuda") else "gloo",
            init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
            rank=0,
            world_size=1,
        )


def start_session(device: str) -> Session:
    """A fresh record for the next run of the loop."""
    global _session
    _session = Session(torch.device(device))
    return _session


def shutdown() -> None:
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
