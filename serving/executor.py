"""The executor stage: generated code runs in the sandbox, never in this (or any server) process.

Each replica owns a pool of `Sandbox`es, each a server in a separate subprocess that forks a limited child
per snippet and holds the API environment (the SQLite corpus in-process, or the HTTP clone, by
`sandbox.api_backend`; for an imported spec, the live API it describes). Runs are blocking, so they go to a thread and the replica stays responsive.
The servers run behind the sandbox's OS wall where the machine allows it; `Executor.isolation` says whether it is up.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ray import serve

from soay.domains import domain_for
from soay.settings import Settings
from training.generate import sandbox_for


@serve.deployment(name="executor", ray_actor_options={"num_cpus": 0.5})
class Executor:
    """A pool of sandboxes per replica. One sandbox serves one snippet at a time (its server forks a
    child per run and answers in order), so with a single one, concurrent requests queued behind
    each other's runs: at 4 users the execute stage's p50 was 0.84 s against 0.05 s at 1 user
    (benchmarks/REPORT-serve.md). Each request now takes a free sandbox of the pool."""

    def __init__(self, settings: Settings) -> None:
        domain, db_path, sandbox = domain_for(settings), settings.data.corpus_path(), settings.sandbox
        if not domain.is_live and sandbox.api_backend == "inprocess" and not db_path.is_file():
            raise FileNotFoundError(f"corpus {db_path} does not exist")
        self.sandboxes = [sandbox_for(domain, db_path, sandbox) for _ in range(sandbox.pool_size)]
        self.free: asyncio.Queue = asyncio.Queue()
        for box in self.sandboxes:
            self.free.put_nowait(box)

    def isolation(self) -> dict[str, Any]:
        """The OS wall around this replica's sandboxes (soay/sandbox/isolation.py), for the
        `soay_sandbox_os_isolation` gauge: `os_isolation` is 1 when every sandbox runs in bubblewrap
        namespaces, 0 when any runs without them (the machine does not allow them, or the
        `sandbox.os_isolation` setting is off); `reason` says why, `network` what the sandbox reaches,
        `seccomp` whether each snippet's process is filtered."""
        walled = all(box.isolation == "bwrap" for box in self.sandboxes)
        first = next((box for box in self.sandboxes if box.isolation != "bwrap"), self.sandboxes[0])
        return {
            "os_isolation": int(walled),
            "isolation": first.isolation,
            "reason": first.isolation_reason,
            "network": first.network,
            "seccomp": all(box.seccomp for box in self.sandboxes),
        }

    async def run(self, code: str) -> dict[str, Any]:
        """The ExecutionResult of `code` as a dict, with its call `trace` (each API call, its
        arguments and a summary of its result: what the answer stage explains the answer from);
        never raises for anything the code does."""
        sandbox = await self.free.get()
        try:
            return (await asyncio.to_thread(sandbox.run, code)).to_dict()
        finally:
            self.free.put_nowait(sandbox)
