"""The caller's side of the sandbox: a handle on one long-lived sandbox server process.

Generated code never runs in the caller's process, and neither does the environment it calls:
both live in the server (soay/sandbox/server.py), which forks a child per snippet. The caller
checks the policy first (cheap, and the messages are precise), ships the code over a pipe and
waits for the outcome with its own deadline, so even a wedged server cannot hang the caller.

The server runs behind an OS wall (soay/sandbox/isolation.py): bubblewrap namespaces where the
machine allows them, with an environment's HTTP API reached only through a forwarder in this
process (soay/sandbox/forwarder.py). Where they are not available the sandbox still starts,
says so in a warning and in ``Sandbox.isolation``, unless ``Limits.os_isolation`` is "bwrap".
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from soay.sandbox import isolation
from soay.sandbox.forwarder import ApiForwarder, api_origin
from soay.sandbox.policy import PolicyViolation, check_code
from soay.sandbox.protocol import (
    ErrorType,
    FrameTimeout,
    Limits,
    ProtocolError,
    recv_frame,
    send_frame,
)

# The directory holding the `soay` package, so the server can import it whatever the cwd.
_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
# Building an environment may load a whole corpus; past this the server is considered stuck.
START_TIMEOUT_S = 300.0
# On top of the server's own wall-clock handling of a snippet (limit + kill + reap), after which
# the caller gives up on the server and replaces it.
SERVER_GRACE_S = 5.0
STOP_TIMEOUT_S = 2.0

log = logging.getLogger(__name__)
# The thread of each process that starts its sandbox servers (see _launch), by process id.
_LAUNCHERS: dict[int, ThreadPoolExecutor] = {}


@dataclass
class ExecutionResult:
    """How one snippet ended.

    ok: the snippet ran and left a JSON-compatible ``final_result``.
    result: that value (lists for tuples and sets), None when not ok.
    error / error_type: a readable message and its category ("policy", "timeout", "memory",
        "recursion", "runtime", "output_too_large", "no_result", "crash"); None when ok.
    stdout: captured print output, bounded by Limits.max_output_bytes.
    calls: the API calls made, in order, as {"api": name, "args": {param: value}}; on failure,
        those made up to the failure (empty when the process was killed before reporting).
    trace: the same calls, each with a compact summary of its result: ``found`` (how many
        records or values it gave back), ``items`` (a preview of the first ones, for the first
        calls of a snippet) or ``error`` (what the call raised); see soay/outcomes.py.
    duration_s: wall-clock time of Sandbox.run for this snippet, overheads included.
    """

    ok: bool
    result: Any = None
    error: str | None = None
    error_type: ErrorType | None = None
    stdout: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict of all fields."""
        return asdict(self)


class Sandbox:
    """Runs untrusted generated code against an environment's APIs, one snippet at a time.

    env_factory: "package.module:callable"; called in the server as ``callable(**env_kwargs)``
        to build the environment whose ``api_functions()`` the snippets may call. env_kwargs
        must be JSON-compatible (they travel to the server in a frame).
    limits: per-snippet limits, see Limits; ``limits.os_isolation`` chooses the OS wall.
    bwrap: the bubblewrap binary; None: the bundled one, else ``bwrap`` on PATH.

    An environment given a ``base_url`` (the HTTP clone, a live API) reaches that origin, and
    only that one, through a forwarder in this process; any other has no network at all.

    Thread-safe (runs are serialised). Not fork-safe: the server's pipes belong to the process
    that created the Sandbox, so each worker process needs its own. Use as a context manager or
    call close(); a server whose caller vanished exits on its own when its stdin closes.
    """

    def __init__(
        self,
        env_factory: str,
        env_kwargs: dict[str, Any] | None = None,
        limits: Limits = Limits(),
        bwrap: str | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._forwarder: ApiForwarder | None = None
        self._pid: int | None = None
        self._closed = False
        self._owner_pid = os.getpid()
        self.env_factory = env_factory
        self.env_kwargs = dict(env_kwargs or {})
        self.limits = limits
        self.api_names: frozenset[str] = frozenset()
        self.seccomp = False
        self._origin = api_origin(self.env_kwargs)
        self._isolation = isolation.decide(limits.os_isolation, bwrap if bwrap is not None else isolation.find_bwrap())
        self._start()
        self._log_isolation()

    @property
    def pid(self) -> int:
        """Process id of the current (or, after close, the last) server: under bubblewrap, the
        bwrap process whose death takes the whole sandbox with it."""
        assert self._pid is not None  # set by the constructor's successful start
        return self._pid

    @property
    def isolation(self) -> str:
        """The OS wall around the server: "bwrap" (namespaces) or "none" (see isolation_reason)."""
        return self._isolation.mode

    @property
    def isolation_reason(self) -> str:
        """Why the wall is what it is: the bwrap binary, or why there is none."""
        return self._isolation.reason

    @property
    def network(self) -> str:
        """What the server's network reaches, in words."""
        if self._isolation.mode == "none":
            return "the host's network (not isolated)"
        if self._origin is None:
            return "none (a loopback of its own)"
        return f"only {self._origin}, through the sandbox forwarder"

    def _log_isolation(self) -> None:
        if self._isolation.mode == "bwrap":
            log.info(
                "sandbox server %d: bubblewrap namespaces; network: %s; seccomp: %s", self.pid, self.network, self.seccomp
            )
        else:
            log.warning(
                "sandbox OS isolation is OFF (%s): generated code is held only by the AST policy, rlimits%s, "
                "and could reach the host's network, files and processes", self._isolation.reason,
                " and the seccomp filter" if self.seccomp else "",
            )
        if self._isolation.seccomp and not self.seccomp:
            log.warning(
                "sandbox seccomp filter is OFF: none for this machine (%s), or its kernel refused it", os.uname().machine
            )

    def run(self, code: str) -> ExecutionResult:
        """Run one snippet and report how it ended; never raises for anything the code does.

        Raises RuntimeError only when the sandbox is closed, is used from a process other than
        the one that created it, or when its server is gone and cannot be started again.
        """
        return self.run_batch([code])[0]

    def run_batch(self, codes: list[str]) -> list[ExecutionResult]:
        """Run snippets in order, each isolated and limited as by run(), in one round trip.

        The server runs a batch in one forked child (a fresh namespace and fresh timers per
        snippet), which is what makes bulk verification fast; a snippet that kills its child
        fails alone and the rest of the batch goes on in a new one.
        """
        for code in codes:
            if not isinstance(code, str):
                raise TypeError(f"code must be a str, not {type(code).__name__}")
        if self._closed:
            raise RuntimeError("sandbox is closed")
        if os.getpid() != self._owner_pid:
            raise RuntimeError(
                f"this Sandbox belongs to process {self._owner_pid}; create one per process"
            )
        started = time.perf_counter()
        results: list[ExecutionResult | None] = [None] * len(codes)
        runnable: list[int] = []
        for i, code in enumerate(codes):
            try:
                check_code(code, self.api_names)
                runnable.append(i)
            except PolicyViolation as exc:
                results[i] = ExecutionResult(ok=False, error=exc.message, error_type=exc.error_type)
        if runnable:
            with self._lock:
                if self._closed:
                    raise RuntimeError("sandbox is closed")
                outcomes = self._exchange([codes[i] for i in runnable])
            for i, outcome in zip(runnable, outcomes):
                results[i] = ExecutionResult(**outcome)
        elapsed = time.perf_counter() - started
        for r in results:
            assert r is not None
            r.duration_s = elapsed / len(codes)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the server; idempotent. Further run() calls raise RuntimeError."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # the constructor failed before anything was started
            return
        with lock:
            self._closed = True
            proc, self._proc = self._proc, None
            forwarder, self._forwarder = self._forwarder, None
        # In a forked copy of the owner the server is not ours to stop; dropping the copy is all.
        if os.getpid() == self._owner_pid:
            _stop(proc, forwarder)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter shutdown modules may be half gone
            pass

    # --- server lifecycle ----------------------------------------------------------------

    def _start(self) -> None:
        """Start a server and build the environment in it; RuntimeError if that fails."""
        pythonpath = [p for p in (_PROJECT_ROOT, *os.environ.get("PYTHONPATH", "").split(os.pathsep)) if p]
        env = isolation.sandbox_env(pythonpath)
        # Lets the server import the factory exactly as the caller could (from any directory).
        sys_path = [os.path.abspath(entry) if os.path.exists(entry) else entry for entry in sys.path if entry]
        argv = [sys.executable, "-m", "soay.sandbox.server"]
        channel: socket.socket | None = None  # this end receives the server's proxy listener
        inside: socket.socket | None = None
        channel_fd: int | None = None  # the inside end's number, in the server too (pass_fds keeps it)
        if self._isolation.mode == "bwrap":
            assert self._isolation.bwrap is not None
            read_only, writable = isolation.sandbox_paths([*sys_path, *pythonpath], self.env_kwargs)
            argv = isolation.bwrap_command(self._isolation.bwrap, argv, read_only=read_only, writable=writable, env=env)
            if self._origin is not None:
                channel, inside = socket.socketpair()
                channel_fd = inside.fileno()
        try:
            proc = _launch(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                bufsize=0,
                # Its own session: a Ctrl-C meant for the caller must not kill the server mid-run.
                start_new_session=True,
                pass_fds=() if channel_fd is None else (channel_fd,),
            )
        except BaseException:
            if channel is not None:
                channel.close()
            raise
        finally:
            if inside is not None:
                inside.close()
        assert proc.stdin is not None and proc.stdout is not None
        init = {
            "op": "init",
            "env_factory": self.env_factory,
            "env_kwargs": self.env_kwargs,
            "limits": self.limits.to_dict(),
            "sys_path": sys_path,
            "api_channel_fd": channel_fd,
        }
        forwarder = None
        try:
            send_frame(proc.stdin.fileno(), init)
            if channel is not None:
                forwarder = self._receive_forwarder(channel)
            reply = recv_frame(proc.stdout.fileno(), time.monotonic() + START_TIMEOUT_S)
        except (OSError, ProtocolError, FrameTimeout) as exc:
            _stop(proc, forwarder)
            raise RuntimeError(f"sandbox server failed to start: {exc!r}") from exc
        if reply is None or not reply.get("ok") or (channel is not None and forwarder is None):
            _stop(proc, forwarder)
            detail = "it exited" if reply is None else reply.get("error") or "it sent no proxy listener"
            raise RuntimeError(f"sandbox server failed to start: {detail}")
        self._proc, self._pid, self._forwarder = proc, proc.pid, forwarder
        self.api_names = frozenset(reply["api_names"])
        self.seccomp = bool(reply.get("seccomp"))

    def _receive_forwarder(self, channel: socket.socket) -> ApiForwarder | None:
        """The forwarder on the proxy listener the server opens on its loopback and sends before
        building the environment; None if the server closed the channel first (its init reply
        then says why)."""
        assert self._origin is not None
        with channel:
            channel.settimeout(START_TIMEOUT_S)
            _, fds, _, _ = socket.recv_fds(channel, 64, 1)
        return ApiForwarder(socket.socket(fileno=fds[0]), self._origin) if fds else None

    def _exchange(self, codes: list[str]) -> list[dict[str, Any]]:
        """Send snippets to the server and return one outcome each; caller holds the lock.

        A server found dead before sending is replaced first (the snippets are not to blame).
        A server that dies or hangs while running a snippet is replaced; that snippet is
        reported as a crash and the rest of the batch runs on the new server, so one bad
        snippet never costs the others their results.
        """
        if self._proc is None or self._proc.poll() is not None:
            self._replace_server()
        outcomes: list[dict[str, Any]] = []
        while len(outcomes) < len(codes):
            proc = self._proc
            assert proc is not None and proc.stdin is not None and proc.stdout is not None
            pending = codes[len(outcomes) :]
            try:
                send_frame(proc.stdin.fileno(), {"op": "run_batch", "codes": pending})
                for _ in pending:
                    outcome = recv_frame(proc.stdout.fileno(), time.monotonic() + self.limits.wall_seconds + SERVER_GRACE_S)
                    if outcome is None:
                        raise ProtocolError("the server closed its output")
                    outcomes.append(outcome)
            except (OSError, ProtocolError, FrameTimeout) as exc:
                reason = "did not answer in time" if isinstance(exc, FrameTimeout) else "died"
                message = f"the sandbox server {reason} while running this snippet"
                try:
                    self._replace_server()
                except RuntimeError as restart_error:
                    crash = {"ok": False, "error": f"{message}; restarting it failed: {restart_error}", "error_type": "crash"}
                    outcomes.extend(dict(crash) for _ in range(len(codes) - len(outcomes)))
                else:
                    outcomes.append({"ok": False, "error": f"{message}; it was restarted", "error_type": "crash"})
        return outcomes

    def _replace_server(self) -> None:
        proc, self._proc = self._proc, None
        forwarder, self._forwarder = self._forwarder, None
        _stop(proc, forwarder)
        self._start()


def _launch(argv: list[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a server process from this process's launcher thread.

    bwrap's --die-with-parent is the kernel's parent-death signal, which follows the thread that
    started bwrap, not its process: a server started from a short-lived thread (a worker that
    replaced a dead server, say) would be killed when that thread ends. One long-lived thread
    per process starts them all, so a sandbox dies with its caller's process and only with it.
    """
    pid = os.getpid()  # a forked copy of this process has the dict but not the thread
    launcher = _LAUNCHERS.get(pid) or _LAUNCHERS.setdefault(pid, ThreadPoolExecutor(1, "sandbox-launcher"))
    return launcher.submit(subprocess.Popen, argv, **popen_kwargs).result()


def _stop(proc: subprocess.Popen[bytes] | None, forwarder: ApiForwarder | None = None) -> None:
    """End a server: EOF on its stdin asks it to exit; SIGKILL if it does not, then reap it.
    Its forwarder, if any, goes with it."""
    if forwarder is not None:
        forwarder.close()
    if proc is None:
        return
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
