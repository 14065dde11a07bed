"""Loopback services the import and live-API tests start as real processes (stopped by pid)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import ROOT, SOAY, free_port, stop, wait_http


@contextmanager
def running(cmd: list[str], health: str, port: int) -> Iterator[str]:
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + health, proc)
        yield url
    finally:
        stop(proc)


@contextmanager
def graphql_movies(db: Path) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "serving.graphql_clone", "--domain", "movies", "--db", str(db), "--port", str(port)]
    with running(cmd, "/healthz", port) as url:
        yield url


@contextmanager
def http_clone(domain: str, db: Path) -> Iterator[str]:
    port = free_port()
    with running([*SOAY, "api", "serve", "--domain", domain, "--db", str(db), "--port", str(port)], "/healthz", port) as url:
        yield url


@contextmanager
def flaky_proxy(upstream: str, *args: str) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, str(ROOT / "tests" / "flaky_proxy.py"), "--upstream", upstream, "--port", str(port), *args]
    with running(cmd, "/healthz", port) as url:
        yield url
