"""Escape attempts against the sandbox's OS wall: what generated code could do past the AST policy.

    .venv/bin/python benchmarks/sandbox_escapes.py [--os-isolation auto|bwrap|off]

Why this way: the policy (soay/sandbox/policy.py) refuses imports, dunders and unknown calls, so
generated code cannot even try these; the OS wall (soay/sandbox/isolation.py, seccomp.py,
forwarder.py) is what holds if it ever did. To test the wall and not the policy, each attempt is
Python source run by the one API of `HostileEnvironment`, which is exactly the power code that got
past the policy would have: any Python in the sandbox's child process, under its namespaces,
rlimits and seccomp filter. The sandbox is started as the application starts one (Sandbox with
the limits' os_isolation), with a `base_url` so that the API channel (the forwarder) is there too.

What "contained" means, per attempt (the host side is this process):
- tcp_host_listener: connect to a TCP listener this process opens on 127.0.0.1 -> the connection
  fails and the listener accepts nothing.
- udp_host_listener: send a datagram to a UDP socket this process binds on 127.0.0.1 -> nothing
  arrives.
- dns_lookup: resolve a public name -> resolution fails.
- write_repo: create a file in the repository -> the write fails, no file appears.
- write_host_tmp: create a file in a directory this process made under the host's /tmp -> no file.
- read_host_secret: read a file this process wrote there -> its content is not read.
- read_caller_env: find a secret this process put in its environment (and in that of the `sleep`
  below, which has it from its start, where /proc/<pid>/environ shows it), in the sandbox's
  environment or any /proc/<pid>/environ it can read -> not found.
- list_host_pids: list /proc -> neither this process's pid nor that of a `sleep` it owns shows.
- kill_host_pid: SIGKILL that `sleep` by its pid -> it is still alive.
- fork_bomb: fork FORK_BOMB_SIZE processes (each exits at once) -> the kernel refuses before that.
- exec_binary: exec /bin/true (the file is there, bound read-only) -> exec is refused (else the
  child is replaced and never reports).
- new_user_namespace: unshare(CLONE_NEWUSER), the usual first step of a kernel exploit -> refused.
- api_host_direct: connect to the API's port directly, around the forwarder -> it fails.
- api_channel_other_port: ask the API channel (the HTTP proxy the sandbox is given; a direct
  connection where there is none) for another port of the API's host -> refused, nothing arrives.

`api_channel_works` (not an escape) checks that the allowed channel does reach the API.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from soay.sandbox import Limits, Sandbox  # noqa: E402

FACTORY = f"{Path(__file__).stem}:HostileEnvironment"
FORK_BOMB_SIZE = 64
LISTEN_CHECK_S = 0.5
ENV_SECRET_NAME = "SOAY_ESCAPE_SECRET"


class HostileEnvironment:
    """An environment whose one API runs any Python source: stands in for generated code that got
    past the AST policy. Only ever built by this benchmark and its tests, in a sandbox server.

    `base_url` is not used by the environment itself: it is what gives the sandbox its API
    channel (soay/sandbox/forwarder.py), as it does for the HTTP environments.
    """

    def __init__(self, base_url: str | None = None) -> None:
        self.base_url = base_url

    def run_python(self, source: str) -> Any:
        """Execute `source` with real builtins; its `result` variable is the answer."""
        namespace: dict[str, Any] = {}
        exec(source, namespace)  # noqa: S102 - the point of this environment
        return namespace.get("result")

    def api_functions(self) -> dict[str, Callable[..., Any]]:
        return {"run_python": self.run_python}


class _PingHandler(BaseHTTPRequestHandler):
    """The stand-in API: answers every GET with {"pong": true}."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b'{"pong": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Host:
    """What this process owns on the host for the attempts to aim at."""

    box: Sandbox
    tmp: Path
    token: str
    sleeper: subprocess.Popen[bytes]
    tcp: socket.socket
    udp: socket.socket
    api_port: int

    def run(self, source: str) -> tuple[bool, Any]:
        """(whether the child reported, its `result` or the sandbox's error) for one attempt."""
        outcome = self.box.run(f"final_result = run_python({textwrap.dedent(source)!r})")
        return outcome.ok, outcome.result if outcome.ok else f"{outcome.error_type}: {outcome.error}"

    def tcp_accepted(self) -> bool:
        """Whether anything connected to the TCP listener (the connection is dropped)."""
        self.tcp.settimeout(LISTEN_CHECK_S)
        try:
            conn, _ = self.tcp.accept()
        except OSError:
            return False
        conn.close()
        return True

    def udp_received(self) -> bool:
        self.udp.settimeout(LISTEN_CHECK_S)
        try:
            self.udp.recv(64)
        except OSError:
            return False
        return True


def _connect_source(port: int) -> str:
    return f"""
    import socket
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        result = "connected"
    except OSError as exc:
        result = f"{{type(exc).__name__}}: {{exc}}"
    """


def tcp_host_listener(host: Host) -> tuple[bool, str]:
    _, said = host.run(_connect_source(host.tcp.getsockname()[1]))
    accepted = host.tcp_accepted()
    return said != "connected" and not accepted, f"inside: {said}; host listener accepted: {accepted}"


def udp_host_listener(host: Host) -> tuple[bool, str]:
    _, said = host.run(f"""
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"escaped", ("127.0.0.1", {host.udp.getsockname()[1]}))
        result = "sent"
    except OSError as exc:
        result = f"{{type(exc).__name__}}: {{exc}}"
    """)
    received = host.udp_received()
    return not received, f"inside: {said}; host socket received: {received}"


def dns_lookup(host: Host) -> tuple[bool, str]:
    _, said = host.run("""
    import socket
    try:
        result = "resolved " + socket.getaddrinfo("example.com", 443)[0][4][0]
    except OSError as exc:
        result = f"{type(exc).__name__}: {exc}"
    """)
    return not str(said).startswith("resolved"), f"inside: {said}"


def _write_attempt(host: Host, path: Path) -> tuple[bool, str]:
    _, said = host.run(f"""
    try:
        with open({str(path)!r}, "w") as f:
            f.write("escaped")
        result = "written"
    except OSError as exc:
        result = f"{{type(exc).__name__}}: {{exc}}"
    """)
    appeared = path.exists()
    path.unlink(missing_ok=True)
    return not appeared, f"inside: {said}; file on the host: {appeared}"


def write_repo(host: Host) -> tuple[bool, str]:
    return _write_attempt(host, ROOT / f".sandbox-escape-{host.token}")


def write_host_tmp(host: Host) -> tuple[bool, str]:
    return _write_attempt(host, host.tmp / "escaped.txt")


def read_host_secret(host: Host) -> tuple[bool, str]:
    secret = host.tmp / "secret.txt"
    _, said = host.run(f"""
    try:
        result = open({str(secret)!r}).read()
    except OSError as exc:
        result = f"{{type(exc).__name__}}: {{exc}}"
    """)
    leaked = host.token in str(said)
    return not leaked, "the secret was read" if leaked else f"inside: {said}"


def read_caller_env(host: Host) -> tuple[bool, str]:
    _, said = host.run(f"""
    import os
    token = {host.token!r}
    found = ["os.environ"] if any(token in v for v in os.environ.values()) else []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{{pid}}/environ", "rb") as f:
                    if token.encode() in f.read():
                        found.append(f"/proc/{{pid}}/environ")
            except OSError:
                pass
    result = found
    """)
    return said == [], f"found in: {said}" if said else "not found"


def list_host_pids(host: Host) -> tuple[bool, str]:
    ok, said = host.run("""
    import os
    result = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    """)
    if not ok:
        return False, f"the attempt failed: {said}"
    seen = [pid for pid in (os.getpid(), host.sleeper.pid) if pid in said]
    return not seen, f"{len(said)} pids visible: {said[:10]}; host pids among them: {seen}"


def kill_host_pid(host: Host) -> tuple[bool, str]:
    _, said = host.run(f"""
    import os
    try:
        os.kill({host.sleeper.pid}, 9)
        result = "signal sent"
    except OSError as exc:
        result = f"{{type(exc).__name__}}: {{exc}}"
    """)
    time.sleep(0.2)
    alive = host.sleeper.poll() is None
    return alive, f"inside: {said}; the host's sleep is alive: {alive}"


def fork_bomb(host: Host) -> tuple[bool, str]:
    ok, said = host.run(f"""
    import os
    made, error = 0, None
    for _ in range({FORK_BOMB_SIZE}):
        try:
            pid = os.fork()
        except OSError as exc:
            error = f"{{type(exc).__name__}}: {{exc}}"
            break
        if pid == 0:
            os._exit(0)
        made += 1
    for _ in range(made):
        os.wait()
    result = {{"forked": made, "error": error}}
    """)
    if not ok:
        return False, f"the attempt failed: {said}"
    detail = f"forked {said['forked']} of {FORK_BOMB_SIZE}; refused with: {said['error']}"
    return said["forked"] < FORK_BOMB_SIZE, detail


def exec_binary(host: Host) -> tuple[bool, str]:
    ok, said = host.run("""
    import os
    try:
        os.execv("/bin/true", ["true"])
    except OSError as exc:
        result = f"refused: {type(exc).__name__}: {exc}"
    """)
    return ok and str(said).startswith("refused"), str(said)


def new_user_namespace(host: Host) -> tuple[bool, str]:
    _, said = host.run("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
        result = "unshared"
    else:
        result = "refused: " + os.strerror(ctypes.get_errno())
    """)
    return str(said).startswith("refused"), str(said)


def api_host_direct(host: Host) -> tuple[bool, str]:
    _, said = host.run(_connect_source(host.api_port))
    return said != "connected", f"inside: {said}"


def api_channel_other_port(host: Host) -> tuple[bool, str]:
    other = host.tcp.getsockname()[1]
    _, said = host.run(f"""
    import os, socket
    proxy = os.environ.get("HTTP_PROXY")
    try:
        if proxy:
            address, port = proxy.rsplit("/", 1)[-1].rsplit(":", 1)
            s = socket.create_connection((address, int(port)), timeout=2)
            s.sendall(b"CONNECT 127.0.0.1:{other} HTTP/1.1\\r\\nHost: 127.0.0.1:{other}\\r\\n\\r\\n")
            result = s.recv(200).decode(errors="replace").split("\\r\\n")[0]
        else:
            socket.create_connection(("127.0.0.1", {other}), timeout=2).close()
            result = "connected"
    except OSError as exc:
        result = f"{{type(exc).__name__}}: {{exc}}"
    """)
    accepted = host.tcp_accepted()
    through = said == "connected" or str(said).startswith("HTTP/1.1 200")
    return not through and not accepted, f"inside: {said}; host listener accepted: {accepted}"


ATTEMPTS: list[Callable[[Host], tuple[bool, str]]] = [
    tcp_host_listener, udp_host_listener, dns_lookup, write_repo, write_host_tmp, read_host_secret,
    read_caller_env, list_host_pids, kill_host_pid, fork_bomb, exec_binary, new_user_namespace,
    api_host_direct, api_channel_other_port,
]  # fmt: skip


def api_channel_works(host: Host) -> bool:
    """Whether the sandbox reaches its API through the allowed channel (httpx reads the proxy)."""
    ok, said = host.run(f"""
    import httpx
    result = httpx.get("http://127.0.0.1:{host.api_port}/ping", timeout=5).json()
    """)
    return ok and said == {"pong": True}


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def hostile_host(os_isolation: str, bwrap: str | None) -> Iterator[Host]:
    """The listeners, files, process and sandbox the attempts aim at; all gone afterwards."""
    token = secrets.token_hex(16)
    if str(BENCH_DIR) not in sys.path:  # the server imports the factory through our sys.path
        sys.path.insert(0, str(BENCH_DIR))
    previous = os.environ.get(ENV_SECRET_NAME)
    os.environ[ENV_SECRET_NAME] = token  # in this process's environment before the sandbox starts
    with ExitStack() as stack:
        stack.callback(_restore_env, ENV_SECRET_NAME, previous)
        api = ThreadingHTTPServer(("127.0.0.1", 0), _PingHandler)
        stack.callback(api.server_close)
        threading.Thread(target=api.serve_forever, daemon=True).start()
        stack.callback(api.shutdown)
        tcp = stack.enter_context(socket.create_server(("127.0.0.1", 0)))
        udp = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        udp.bind(("127.0.0.1", 0))
        sleeper = stack.enter_context(subprocess.Popen(["sleep", "600"]))
        stack.callback(sleeper.kill)
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soay-escapes-")))
        (tmp / "secret.txt").write_text(token)
        limits = Limits(cpu_seconds=5.0, wall_seconds=10.0, os_isolation=os_isolation)  # type: ignore[arg-type]
        base_url = f"http://127.0.0.1:{api.server_address[1]}"
        box = stack.enter_context(Sandbox(FACTORY, {"base_url": base_url}, limits=limits, bwrap=bwrap))
        yield Host(box, tmp, token, sleeper, tcp, udp, api.server_address[1])


def run_escapes(os_isolation: str = "auto", bwrap: str | None = None) -> dict[str, Any]:
    """Try every attempt against a fresh sandbox; how many were contained, and each one's detail."""
    with hostile_host(os_isolation, bwrap) as host:
        attempts = []
        for attempt in ATTEMPTS:
            contained, detail = attempt(host)
            attempts.append({"name": attempt.__name__, "contained": contained, "detail": detail})
        return {
            "isolation": host.box.isolation,
            "isolation_reason": host.box.isolation_reason,
            "network": host.box.network,
            "seccomp": host.box.seccomp,
            "api_channel_works": api_channel_works(host),
            "escapes_tried": len(attempts),
            "contained": sum(a["contained"] for a in attempts),
            "attempts": attempts,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--os-isolation", choices=("auto", "bwrap", "off"), default="auto")
    args = parser.parse_args()
    print(json.dumps(run_escapes(args.os_isolation), indent=2))


if __name__ == "__main__":
    main()
