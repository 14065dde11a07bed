"""Readiness from Serve's controller, shared by the application's `/healthz` and by a health port
that the `soay serve` process answers itself.

Why a port of its own: under a burst both cores run the engines, the Serve proxy and the ingress,
which are Ray workers at a low OS priority, so the app's `/healthz` waits for the proxy and the
ingress to be scheduled (benchmarks/REPORT-reliability.md: 67-89 % of probes within 0.5 s during a
200-question burst). The `soay serve` process idles at normal priority once the application is
deployed; a probe it answers from a view refreshed in the background never waits behind a question.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from serving.ray_compat import serve_details

log = logging.getLogger(__name__)

REFRESH_S = 1.0
"""How old a view may be before a probe has a fresh one fetched (in the background)."""
STALE_S = 10.0
"""How long a view that could not be refreshed still stands: one controller call that fails under a
burst is the prober's blind moment, not a stage without replicas; a controller gone longer is reported."""


def deployment_states(app_name: str, names: dict[str, str] | None = None) -> dict[str, str]:
    """Each deployment's state in Serve's controller: "ok" while it has a running replica, else why
    not. `names` maps the keys to report (stages) to deployment names; without it every deployment
    of the application is reported under its own name."""
    application = serve_details().get("applications", {}).get(app_name) or {}
    deployments = application.get("deployments", {})
    if names is None:
        names = {name: name for name in deployments} or {app_name: app_name}

    def state(name: str) -> str:
        overview = deployments.get(name)
        if overview is None:
            return "not deployed"
        if any(replica["state"] == "RUNNING" for replica in overview.get("replicas", [])):  # ReplicaState is a str enum
            return "ok"
        return f"{overview['status']}: no running replica {overview.get('message', '')}".strip()

    return {key: state(name) for key, name in names.items()}


class StatusView:
    """The last view of the stages and when it was taken; a failed refresh keeps a good view for
    STALE_S and then reports the controller as the problem."""

    def __init__(self, fetch: Callable[[], dict[str, str]]) -> None:
        self._fetch = fetch
        self.checked, self.stages = 0.0, {}

    def refresh(self) -> dict[str, str]:
        try:
            stages = self._fetch()
        except Exception as exc:  # noqa: BLE001 - no view of the stages is a "not ready", said with why
            if self.stages and "controller" not in self.stages and time.monotonic() - self.checked < STALE_S:
                log.warning("health: the controller's view could not be refreshed (%s: %s); the last one stands", type(exc).__name__, exc)
                return self.stages  # its time is kept, so it ages out
            stages = {"controller": f"{type(exc).__name__}: {exc}"}
        self.checked, self.stages = time.monotonic(), stages
        return stages


def health_body(stages: dict[str, str], model: str) -> tuple[int, dict[str, object]]:
    """The status code and body of a health answer: 200 when every stage is "ok", else 503."""
    ready = bool(stages) and all(v == "ok" for v in stages.values())
    return (200 if ready else 503), {"status": "ok" if ready else "unavailable", "model": model, "stages": stages}


class HealthServer:
    """`GET /healthz` on a port of its own, in threads of the calling process. A probe is answered
    from the last view of the application's deployments at once; when that view is older than
    REFRESH_S a fresh one is fetched in the background (no probes, no controller calls)."""

    def __init__(self, app_name: str, model: str, host: str, port: int) -> None:
        self.view = StatusView(lambda: deployment_states(app_name))
        self.model = model
        self._refreshing = threading.Lock()
        self._http = ThreadingHTTPServer((host, port), self._handler())
        self._http.daemon_threads = True
        self.url = f"http://{host}:{self._http.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server convention
                if self.path.split("?", 1)[0] != "/healthz":
                    self._send(404, {"error": f"no such path: {self.path[:200]}; this port answers GET /healthz"})
                    return
                server.refresh_if_old()
                self._send(*health_body(server.view.stages, server.model))

            def do_POST(self) -> None:  # noqa: N802
                self._send(405, {"error": "this port answers GET /healthz only"})

            do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815

            def _send(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - probes are not worth a line each
                pass

        return Handler

    def start(self) -> HealthServer:
        """Take a first view, then answer probes in background threads."""
        self.view.refresh()
        threading.Thread(target=self._http.serve_forever, name="health-http", daemon=True).start()
        return self

    def refresh_if_old(self) -> None:
        """Fetch a fresh view in the background when the last one is older than REFRESH_S and no
        fetch is running; the probe that notices does not wait for it."""
        if time.monotonic() - self.view.checked > REFRESH_S and self._refreshing.acquire(blocking=False):
            threading.Thread(target=self._refresh, name="health-refresh", daemon=True).start()

    def _refresh(self) -> None:
        try:
            self.view.refresh()
        finally:
            self._refreshing.release()

    def stop(self) -> None:
        """Stop answering; returns once no controller call is in flight (one after Serve's shutdown
        would start Serve again)."""
        self._http.shutdown()
        self._http.server_close()
        with self._refreshing:
            pass
