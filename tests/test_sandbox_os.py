"""The sandbox's OS wall, end to end: real bwrap, real namespaces, real escape attempts.

The AST policy stops generated code from even trying these, so the attempts run as the API of a
hostile environment (benchmarks/sandbox_escapes.py), inside the sandbox child exactly where code
that got past the policy would run. Where this machine cannot run bubblewrap, the tests that need
it are skipped (with bwrap's reason) and the fallback tests still run.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from soay.sandbox import Limits, Sandbox
from soay.sandbox import isolation, seccomp
from soay.sandbox.forwarder import ApiForwarder, Origin, api_origin
from soay.settings import SandboxSettings

sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import sandbox_escapes as escapes  # noqa: E402

FACTORY = "sandbox_fixture_env:make_env"
NORMAL = "final_result = [p['name'] for p in searchPerson(name='alan')]"
NORMAL_RESULT = ["Alan Turing", "Alan Kay"]
MISSING_BWRAP = "/nonexistent/bwrap"
# Attempts that must get through when the wall is off, whatever the machine: proof that each one
# really tries what it says (dns_lookup depends on the machine's network, write_repo on who owns
# the checkout, new_user_namespace on the kernel).
ESCAPE_WITHOUT_WALL = {
    "tcp_host_listener", "udp_host_listener", "write_host_tmp", "read_host_secret", "read_caller_env",
    "list_host_pids", "kill_host_pid", "fork_bomb", "exec_binary", "api_host_direct",
    "api_channel_other_port",
}  # fmt: skip


def _bwrap_problem() -> str | None:
    bwrap = isolation.find_bwrap()
    return "no bwrap binary" if bwrap is None else isolation.probe(bwrap)


needs_bwrap = pytest.mark.skipif(_bwrap_problem() is not None, reason=f"bubblewrap cannot run here: {_bwrap_problem()}")


@pytest.fixture(scope="module")
def hostile() -> Iterator[escapes.Host]:
    with escapes.hostile_host("bwrap", None) as host:
        yield host


# --- the wall holds -----------------------------------------------------------------------------


@needs_bwrap
def test_default_sandbox_runs_behind_the_wall() -> None:
    with Sandbox(FACTORY) as box:
        assert box.isolation == "bwrap"
        assert box.seccomp
        assert box.network.startswith("none")
        result = box.run(NORMAL)
        assert result.ok and result.result == NORMAL_RESULT


@needs_bwrap
@pytest.mark.parametrize("attempt", escapes.ATTEMPTS, ids=[a.__name__ for a in escapes.ATTEMPTS])
def test_escape_attempt_is_contained(hostile: escapes.Host, attempt: Any) -> None:
    contained, detail = attempt(hostile)
    assert contained, detail
    assert hostile.box.run("final_result = run_python('result = 1 + 1')").result == 2  # the sandbox lives on


@needs_bwrap
def test_api_channel_reaches_the_api(hostile: escapes.Host) -> None:
    assert escapes.api_channel_works(hostile)


def test_attempts_escape_without_the_wall() -> None:
    report = escapes.run_escapes("off")
    assert report["isolation"] == "none" and not report["seccomp"]
    escaped = {a["name"] for a in report["attempts"] if not a["contained"]}
    assert ESCAPE_WITHOUT_WALL <= escaped, [a for a in report["attempts"] if a["name"] in ESCAPE_WITHOUT_WALL - escaped]
    assert report["api_channel_works"]


@needs_bwrap
def test_run_escapes_reports_every_attempt_contained() -> None:
    report = escapes.run_escapes("bwrap")
    assert report["escapes_tried"] == len(escapes.ATTEMPTS) >= 8
    assert report["contained"] == report["escapes_tried"], [a for a in report["attempts"] if not a["contained"]]
    assert report["api_channel_works"]


# --- the API channel --------------------------------------------------------------------------


class _FakeApi(BaseHTTPRequestHandler):
    """Answers POST /api/<name> with the JSON body it got, over HTTP/1.1 keep-alive."""

    protocol_version = "HTTP/1.1"
    paths: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.paths.append(self.path)
        length = int(self.headers.get("Content-Length", 0))
        body = json.dumps([{"id": "p1", "name": json.loads(self.rfile.read(length))["name"]}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeApi)
    _FakeApi.paths = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@needs_bwrap
def test_http_environment_reaches_its_api_through_the_forwarder(fake_api: str) -> None:
    """The HTTP clone's client (serving/api_client.py), unchanged, inside the sandbox: its calls go
    through the proxy to the one origin, each request checked and sent in origin form."""
    with Sandbox("serving.api_client:open_remote_environment", {"base_url": fake_api, "domain": "aminer"}) as box:
        assert box.isolation == "bwrap"
        assert box.network == f"only {api_origin({'base_url': fake_api})}, through the sandbox forwarder"
        result = box.run("a = searchPerson(name='ada')\nb = searchPerson(name='alan')\nfinal_result = [a, b]")
    assert result.ok, result.error
    assert result.result == [[{"id": "p1", "name": "ada"}], [{"id": "p1", "name": "alan"}]]
    assert _FakeApi.paths == ["/api/searchPerson", "/api/searchPerson"]


@needs_bwrap
def test_https_origin_is_tunnelled() -> None:
    """An https API gets a CONNECT tunnel (TLS stays end to end): bytes cross both ways."""
    echo = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = echo.accept()
        with conn:
            conn.sendall(conn.recv(64).upper())

    threading.Thread(target=serve, daemon=True).start()
    port = echo.getsockname()[1]
    code = f"""
import os, socket
address, proxy_port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
s = socket.create_connection((address, int(proxy_port)), timeout=5)
s.sendall(b"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n")
status = s.recv(200).split(b"\\r\\n")[0].decode()
s.sendall(b"ping")
result = [status, s.recv(64).decode()]
"""
    try:
        with Sandbox(escapes.FACTORY, {"base_url": f"https://127.0.0.1:{port}"}) as box:
            result = box.run(f"final_result = run_python({code!r})")
    finally:
        echo.close()
    assert result.ok, result.error
    assert result.result == ["HTTP/1.1 200 Connection established", "PING"]


def test_the_forwarder_closes_each_answer_so_no_client_reuses_its_connection(fake_api: str) -> None:
    """The origin answers HTTP/1.1 without `Connection: close`; the forwarder closes the connection
    after one answer, so the head it passes on must say `close`, or a client that keeps it alive
    sends its next request into the closing socket and gets a reset."""
    listener = socket.create_server(("127.0.0.1", 0))
    forwarder = ApiForwarder(listener, api_origin({"base_url": fake_api}))
    body = b'{"name": "ada"}'
    try:
        with socket.create_connection(listener.getsockname(), timeout=10) as client:
            client.sendall(f"POST {fake_api}/api/searchPerson HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n"
                           f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            answer = b""
            while chunk := client.recv(4096):
                answer += chunk
    finally:
        forwarder.close()
    head, _, payload = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 200 OK" and json.loads(payload) == [{"id": "p1", "name": "ada"}]
    assert [h for h in lines if h.lower().startswith(b"connection:")] == [b"Connection: close"]
    assert _FakeApi.paths == ["/api/searchPerson"]


def test_api_origin_of_env_kwargs() -> None:
    assert api_origin({"db_path": "/x/corpus.sqlite"}) is None
    assert api_origin({"base_url": "https://API.example.com/v3"}) == Origin("https", "api.example.com", 443)
    assert api_origin({"base_url": "http://127.0.0.1:8300"}) == Origin("http", "127.0.0.1", 8300)
    with pytest.raises(ValueError, match="http"):
        api_origin({"base_url": "ftp://example.com"})


# --- without the wall -------------------------------------------------------------------------


@pytest.mark.parametrize("broken", ["missing", "failing"])
def test_auto_mode_without_working_bwrap_starts_loudly(
    broken: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bwrap that is not there, or one that fails as on a kernel without unprivileged user
    namespaces: the sandbox still works, and says loudly why it has no wall."""
    bwrap, why = MISSING_BWRAP, MISSING_BWRAP
    if broken == "failing":
        bwrap, why = str(tmp_path / "bwrap"), "setting up uid map: Permission denied"
        Path(bwrap).write_text(f"#!/bin/sh\necho 'bwrap: {why}' >&2\nexit 1\n")
        Path(bwrap).chmod(0o755)
    with caplog.at_level(logging.WARNING, logger="soay.sandbox.runner"):
        with Sandbox(FACTORY, limits=Limits(os_isolation="auto"), bwrap=bwrap) as box:
            assert box.isolation == "none"
            assert why in box.isolation_reason
            assert box.network == "the host's network (not isolated)"
            result = box.run(NORMAL)
            assert result.ok and result.result == NORMAL_RESULT
            assert box.seccomp == (seccomp.build_filter() is not None)  # the filter needs no namespaces
    assert any("OS isolation is OFF" in r.getMessage() and why in r.getMessage() for r in caplog.records)


def test_bwrap_mode_refuses_to_start_without_bwrap() -> None:
    with pytest.raises(RuntimeError, match="os_isolation is 'bwrap'"):
        Sandbox(FACTORY, limits=Limits(os_isolation="bwrap"), bwrap=MISSING_BWRAP)


def test_off_mode_is_off_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="soay.sandbox.runner"):
        with Sandbox(FACTORY, limits=Limits(os_isolation="off")) as box:
            assert (box.isolation, box.seccomp) == ("none", False)
            assert box.run(NORMAL).result == NORMAL_RESULT
    assert any("OS isolation is OFF (os_isolation is 'off')" in r.getMessage() for r in caplog.records)


def test_settings_reach_the_limits() -> None:
    """sandbox_for (training/generate.py) builds Limits from the sandbox settings field for field."""
    settings = SandboxSettings(os_isolation="off")
    limits = Limits(**settings.model_dump(exclude={"api_backend", "api_url", "pool_size"}))
    assert limits.os_isolation == "off"
    with pytest.raises(ValueError, match="os_isolation"):
        Limits(os_isolation="maybe")  # type: ignore[arg-type]


# --- the pieces -------------------------------------------------------------------------------


@needs_bwrap
def test_bwrap_command_hides_the_host(tmp_path: Path) -> None:
    """A script run directly under the command line the runner builds: clean environment, the
    caller's files invisible, the bound ones read-only."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    read_only, writable = isolation.sandbox_paths([str(ROOT)], {})
    env = isolation.sandbox_env([str(ROOT)])
    script = (
        "import os, json\n"
        f"visible = os.path.exists({str(secret)!r})\n"
        f"try:\n    open({str(ROOT / 'x.txt')!r}, 'w')\n    wrote = True\nexcept OSError:\n    wrote = False\n"
        "print(json.dumps({'visible': visible, 'wrote': wrote, 'env': sorted(os.environ)}))"
    )
    bwrap = isolation.find_bwrap() or "bwrap"
    command = isolation.bwrap_command(bwrap, [sys.executable, "-c", script], read_only=read_only, writable=writable, env=env)
    out = json.loads(subprocess.run(command, capture_output=True, check=True, timeout=60).stdout)
    assert out["visible"] is False and out["wrote"] is False
    assert set(out["env"]) <= set(env) | {"PWD"}
    assert not (ROOT / "x.txt").exists()


def test_sandbox_paths_bind_env_files_read_only_and_caches_writable(tmp_path: Path) -> None:
    corpus = tmp_path / "data" / "corpus.sqlite"
    corpus.parent.mkdir()
    corpus.write_bytes(b"")
    cache = tmp_path / "cache" / "api-cache.sqlite"
    read_only, writable = isolation.sandbox_paths([], {"db_path": str(corpus), "options": {"cache_path": str(cache)}})
    assert str(corpus.parent) in read_only
    assert writable == [str(cache.parent)] and cache.parent.is_dir()


def test_seccomp_filter_covers_known_machines_only() -> None:
    for machine in ("x86_64", "aarch64"):
        program = seccomp.build_filter(machine)
        assert program is not None and len(program) % 8 == 0
    assert seccomp.build_filter("mips") is None
