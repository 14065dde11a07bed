"""The engines' OS priority: batch inference yields the CPU to the request path.

Why: on a CPU node the two vLLM engines keep every core busy while a burst of questions is
answered, and Serve's proxy and the ingress (health probes, admission's quick 503s, the page)
wait for a time slice like any other process: during a 200-question burst a third of the
`/healthz` probes took over 0.5 s (benchmarks/REPORT-reliability.md). An engine replica a few
nice steps lower still gets every core nobody else wants, so its throughput stays, but the short
request-path work runs first. On GPU nodes the engines' CPU threads feed the device and mostly
wait for it; the step was not measured there, so it is taken on CPU nodes only.

Ray's workers all run at nice 15; the engine replica steps down from there (at most to 19) in
its callback before the engine starts (serving/llm.py), so the engine processes vLLM starts
inherit it. The step travels as an environment variable of the replica's runtime environment.
"""

from __future__ import annotations

import logging
import os

NICE_ENV = "SOAY_ENGINE_NICE"

log = logging.getLogger(__name__)


def engine_env_vars(nice: int) -> dict[str, str]:
    """The replica environment that asks for `nice` steps lower (none for 0)."""
    return {NICE_ENV: str(nice)} if nice else {}


def lower_priority() -> int:
    """In an engine replica: this process `SOAY_ENGINE_NICE` steps lower; its nice value now."""
    step = int(os.environ.get(NICE_ENV, "0"))
    if step <= 0:
        return os.nice(0)
    now = os.nice(step)
    log.info("engine replica %d now runs at nice %d", os.getpid(), now)
    return now
