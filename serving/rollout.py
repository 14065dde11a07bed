"""Swapping the running Serve application to another checkpoint without dropping requests.

Ray Serve's default rolling update stops an old replica before it starts its replacement (the
Kubernetes protocol, ray-project/ray#14803; `max_surge_percent` defaults to 0). Every stage here
runs one replica by default and a vLLM engine takes about a minute to load on a CPU, so a plain
redeploy would leave each stage with no replica meanwhile: queued requests wait past the request
timeout (504), and beyond `max_queued_requests` the proxy answers 503 at once.

The application's deployments therefore carry `ServeSettings.rollout_options()`: with
`max_surge_percent` Serve starts each replacement first and stops an old replica only once its
replacement runs, and an old replica being stopped gets `request_timeout_s` to finish what it
holds. A swap is then a redeploy of the same application (`build_app`) with the new
`serve.model_dir`; this module starts it and waits until every deployment runs the new version.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray import serve

from serving.app import APP_NAME, build_app
from serving.llm import engine_checkpoint
from soay.settings import Settings

ENGINE_PREFIXES = ("planner:", "coder:")
"""Name prefixes of the two LLM deployments (serving/llm.py, engine_deployments)."""
POLL_S = 2.0
LOG_EVERY_S = 15.0


def swap(settings: Settings, model_dir: Path, timeout_s: float = 900.0, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Redeploy the running application with `model_dir` as the model of both engines; returns
    once every deployment runs the new version, or says why nothing was swapped.

    `settings` must be the ones the application was deployed with (the same config file and
    environment as `soay serve`): the whole application is rebuilt from them. On timeout the old
    replicas keep serving and Serve keeps starting the new ones; TimeoutError says so.
    """
    if APP_NAME not in serve.status().applications:
        log(f"[rollout] no {APP_NAME!r} application on this Ray: `soay serve` loads the promoted model when it starts")
        return {"swapped": False, "reason": "not serving"}
    model_dir = Path(model_dir).resolve()
    target = settings.model_copy(update={"serve": settings.serve.model_copy(update={"model_dir": model_dir})})
    started = time.perf_counter()
    log(f"[rollout] redeploying {APP_NAME!r} with {model_dir}; the old replicas serve until their replacements run")
    serve.run_many([serve.RunTarget(build_app(target), name=APP_NAME, route_prefix="/")], wait_for_applications_running=False)
    _wait_running(started + timeout_s, log)
    engines = engine_models()
    expected = str(engine_checkpoint(model_dir)[0])  # a heads model's engines load its base
    wrong = {name: source for name, source in engines.items() if source != expected}
    if wrong:
        raise RuntimeError(f"after the swap these engines do not serve {expected}: {wrong}")
    seconds = round(time.perf_counter() - started, 1)
    log(f"[rollout] {APP_NAME!r} serves {model_dir} ({seconds} s)")
    return {"swapped": True, "model": str(model_dir), "seconds": seconds, "engines": engines}


def engine_models() -> dict[str, str]:
    """Each engine deployment's checkpoint, as one of its replicas reports it."""
    deployments = serve.status().applications[APP_NAME].deployments
    return {
        name: str(serve.get_deployment_handle(name, APP_NAME).llm_config.remote().result().model_loading_config.model_source)
        for name in deployments
        if name.startswith(ENGINE_PREFIXES)
    }


def _wait_running(deadline: float, log: Callable[[str], None]) -> None:
    """Until the redeployed application is RUNNING: every deployment healthy at the new version.
    (The controller marks it DEPLOYING before the deploy call returns.)"""
    last_log = time.perf_counter()
    while True:
        app = serve.status().applications[APP_NAME]
        if app.status == "RUNNING":
            return
        if app.status == "DEPLOY_FAILED":
            raise RuntimeError(f"the redeploy failed; the old replicas keep serving: {app.message}")
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError(f"the redeploy is not done ({app.status.value}); the old replicas keep serving until the new ones run")
        if now - last_log >= LOG_EVERY_S:
            waiting = sorted(name for name, d in app.deployments.items() if d.status != "HEALTHY")
            log(f"[rollout] {app.status.value}: waiting for {', '.join(waiting) or 'the application'}")
            last_log = now
        time.sleep(POLL_S)
