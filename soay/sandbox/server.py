"""The sandbox server: ``python -m soay.sandbox.server``, one long-lived process per Sandbox.

Why this shape: starting a Python interpreter and building an API environment per snippet costs
hundreds of milliseconds, far too slow for a pipeline that verifies tens of snippets per second.
So the server builds the environment once and ``fork()``s a child per snippet. The fork is
cheap (copy-on-write; the server freezes its objects out of the GC so children do not dirty
their pages), and every snippet starts from the same pristine state: whatever a snippet does to
the environment or the interpreter dies with its child.

The child lowers its own limits (address space, CPU, recursion), runs the policy check again,
executes the code against the safe builtins and traced API wrappers, and reports one frame on a
pipe. The server waits for that frame with a wall-clock deadline, SIGKILLs a child that
overstays, and turns a child that died without reporting into a classified error. The server
never executes generated code itself, so it survives whatever a snippet does.

The OS wall: the caller normally starts the server inside bubblewrap namespaces
(soay/sandbox/isolation.py), and each child installs a seccomp filter (soay/sandbox/seccomp.py)
before it runs anything, so that it can neither start processes nor exec. An environment that
needs its HTTP API gets it through a proxy listener on the sandbox's own loopback, handed to the
caller's forwarder (soay/sandbox/forwarder.py).

Protocol on stdin/stdout (frames from soay.sandbox.protocol): the caller sends an ``init``
message (env_factory, env_kwargs, limits, sys_path, and api_channel_fd: a socket pair end for
the proxy listener, or null) and gets ``{"ok": true, "api_names": [...], "seccomp": bool}``
or ``{"ok": false, "error": ...}``; then each ``{"op": "run", "code": ...}`` gets one outcome
dict (the ExecutionResult fields except duration_s). EOF or ``{"op": "close"}`` ends the server.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import inspect
import json
import math
import os
import resource
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

from soay.sandbox import seccomp
from soay.sandbox.builtins import with_print
from soay.sandbox.policy import RESULT_NAME, PolicyViolation, check_code
from soay.sandbox.protocol import (
    ErrorType,
    FrameTimeout,
    Limits,
    ProtocolError,
    recv_frame,
    send_frame,
)

SNIPPET_FILENAME = "<snippet>"
# Time a child gets beyond wall_seconds to notice its own timer and report before the SIGKILL.
KILL_GRACE_S = 0.5
# Frames generated code may stack on top of the child's own (the default 1000 is more than
# API-composition code needs, and a shallower limit fails runaway recursion sooner).
RECURSION_HEADROOM = 300
# How often the child's timers re-fire after expiry, so a bare ``except:`` cannot swallow them.
TIMER_REPEAT_S = 0.1
# Exit statuses of a child that could not report its outcome: out of memory even after freeing
# the snippet's data, interrupted by a timer while building the report, or anything else (e.g.
# the server went away).
CHILD_REPORT_FAILED = 70
CHILD_OUT_OF_MEMORY = 71
CHILD_TIMED_OUT = 72
# Bounds on texts echoed back (error messages, repr of odd API arguments).
MAX_MESSAGE_CHARS = 2_000
MAX_ARG_REPR_CHARS = 200
# The result trace (what each API call gave back, for explaining an answer): how many calls keep a
# preview of their results, how many results, and how much of each field. Later calls only count.
TRACE_DETAILED_CALLS = 30
TRACE_ITEMS = 10
TRACE_LIST_ITEMS = 5
TRACE_TEXT_CHARS = 120
_PR_SET_PDEATHSIG = 1


class _Interrupted(BaseException):
    """Raised inside the child by its CPU / wall-clock timers.

    A BaseException so that ``except Exception`` in generated code does not swallow it.
    """


class _ResultError(Exception):
    """``final_result`` is missing, not JSON-compatible, or too large."""

    def __init__(self, error_type: ErrorType, message: str) -> None:
        super().__init__(message)
        self.error_type: ErrorType = error_type


class _Api(NamedTuple):
    """An environment API and its signature (computed once in the server, not per snippet)."""

    func: Callable[..., Any]
    signature: inspect.Signature | None


def _outcome(
    error_type: ErrorType | None,
    error: str | None,
    *,
    result: Any = None,
    stdout: str = "",
    calls: list[dict[str, Any]] | None = None,
    trace: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One reply frame; ok exactly when there is no error."""
    return {
        "ok": error_type is None,
        "result": result if error_type is None else None,
        "error": error,
        "error_type": error_type,
        "stdout": stdout,
        "calls": calls or [],
        "trace": trace or [],
    }


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Bound a text echoed back to the caller (an exception message can hold any data)."""
    return text if len(text) <= limit else text[:limit] + "..."


# --- JSON conversion -------------------------------------------------------------------------


class _NotSerialisable(Exception):
    """A value with no JSON form (the message names its type)."""


def _jsonable(value: Any) -> Any:
    """A JSON-compatible copy of `value`: tuples/sets become lists (sets sorted when possible).

    Exact type checks on purpose: anything but plain data (functions, generators, ranges,
    exceptions...) is an error rather than something silently stringified.
    """
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind in (list, tuple):
        return [_jsonable(item) for item in value]
    if kind in (set, frozenset):
        items = [_jsonable(item) for item in value]
        try:
            items.sort()
        except TypeError:  # mixed types keep iteration order
            pass
        return items
    if kind is dict:
        converted = {}
        for key, item in value.items():
            if type(key) is str:
                name = key
            elif key is None or type(key) in (int, float, bool):
                name = json.dumps(key)  # the key json itself would write
            else:
                raise _NotSerialisable(f"dict key of type {type(key).__name__}")
            converted[name] = _jsonable(item)
        return converted
    raise _NotSerialisable(f"value of type {kind.__name__}")


def _json_safe(value: Any) -> Any:
    """For call traces: the JSON form when there is one, else a short repr."""
    try:
        return _jsonable(value)
    except (_NotSerialisable, RecursionError):
        return _clip(repr(value), MAX_ARG_REPR_CHARS)


def _serialise_result(value: Any, max_bytes: int) -> Any:
    """The JSON form of ``final_result``, checked against the output bound."""
    try:
        converted = _jsonable(value)
        size = len(json.dumps(converted, ensure_ascii=True))
    except _NotSerialisable as exc:
        raise _ResultError("runtime", f"result is not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise _ResultError(
            "runtime", "result is not JSON-serialisable: nested too deeply or cyclic"
        ) from None
    except ValueError as exc:  # e.g. an int with more digits than str() allows
        raise _ResultError("runtime", f"result is not JSON-serialisable: {exc}") from None
    if size > max_bytes:
        raise _ResultError(
            "output_too_large",
            f"{RESULT_NAME} is too large: {size} bytes serialised, limit {max_bytes}",
        )
    return converted


# --- the child's view of the world ----------------------------------------------------------


class _BoundedOutput:
    """The snippet's ``print``: captures text up to a byte budget, then drops the rest."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._left = limit
        self._parts: list[bytes] = []
        self._truncated = False

    def print(
        self, *values: Any, sep: str | None = " ", end: str | None = "\n", flush: bool = False
    ) -> None:
        """Like the builtin (``flush`` is accepted and meaningless); no ``file`` argument."""
        if self._truncated:
            return
        text = (" " if sep is None else sep).join(map(str, values)) + ("\n" if end is None else end)
        data = text.encode("utf-8", "replace")
        if len(data) > self._left:
            data = data[: self._left]
            self._truncated = True
        self._parts.append(data)
        self._left -= len(data)

    def text(self) -> str:
        captured = b"".join(self._parts).decode("utf-8", "ignore")
        if self._truncated:
            captured += f"\n[stdout truncated at {self._limit} bytes]"
        return captured


def _call_args(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The arguments of one API call by parameter name, JSON-safe, for the call trace."""
    named: dict[str, Any] = kwargs
    if args:
        try:
            if signature is None:
                raise TypeError
            named = dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:  # let the call itself raise the real error; trace what was passed
            named = {**{f"#{i}": arg for i, arg in enumerate(args)}, **kwargs}
    return {name: _json_safe(value) for name, value in named.items()}


def _preview_value(value: Any, depth: int = 0) -> Any:
    """A small JSON-safe view of one field of an API result: texts clipped, lists shortened."""
    if isinstance(value, str):
        return value if len(value) <= TRACE_TEXT_CHARS else value[:TRACE_TEXT_CHARS] + "..."
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, (list, tuple)) and depth < 2:
        return [_preview_value(v, depth + 1) for v in value[:TRACE_LIST_ITEMS]]
    if isinstance(value, dict):  # a record, or a record nested in one (its plain fields only)
        return {
            str(k): _preview_value(v, depth + 1)
            for k, v in value.items()
            if depth < 2 or not isinstance(v, (list, tuple, dict))
        }
    return _clip(repr(value), TRACE_TEXT_CHARS)


def _result_summary(value: Any, detailed: bool) -> dict[str, Any]:
    """How many things an API call found and, for the first calls of a snippet, what they were."""
    if isinstance(value, (list, tuple)):
        found, items = len(value), list(value[:TRACE_ITEMS])
    elif isinstance(value, dict):
        found, items = (1 if value else 0), ([value] if value else [])
    else:
        found, items = (0 if value is None else 1), ([] if value is None else [value])
    summary: dict[str, Any] = {"found": found}
    if detailed:
        summary["items"] = [_preview_value(item) for item in items]
    return summary


def _traced(
    name: str, api: _Api, calls: list[dict[str, Any]], max_calls: int, trace: list[dict[str, Any]] | None = None
) -> Callable[..., Any]:
    """Wrap an API so each call is appended to `calls` before it runs (so failures are traced).

    `trace` gets the same call with a compact summary of its result (``found``, and ``items`` for
    the first TRACE_DETAILED_CALLS calls) or the ``error`` it raised: what an answer's
    explanation, and a "no such scholar" or "several scholars" answer, are built from.
    Exceptions from the API propagate unchanged: generated code may catch them, and uncaught
    ones become "runtime" errors naming the exception and line.
    """

    def call_api(*args: Any, **kwargs: Any) -> Any:
        if len(calls) >= max_calls:
            raise RuntimeError(f"too many API calls (limit {max_calls} per snippet)")
        named = _call_args(api.signature, args, kwargs)
        calls.append({"api": name, "args": named})
        if trace is None:
            return api.func(*args, **kwargs)
        entry: dict[str, Any] = {"api": name, "args": dict(named)}
        trace.append(entry)
        try:
            value = api.func(*args, **kwargs)
        except Exception as exc:
            entry["error"] = _clip(f"{type(exc).__name__}: {exc}", MAX_ARG_REPR_CHARS)
            raise
        entry.update(_result_summary(value, detailed=len(trace) <= TRACE_DETAILED_CALLS))
        return value

    call_api.__name__ = call_api.__qualname__ = name
    return call_api


class _Timers:
    """CPU (ITIMER_PROF) and wall-clock (ITIMER_REAL) timers that interrupt the snippet.

    They give a graceful timeout, with stdout and the call trace so far; RLIMIT_CPU and the
    server's SIGKILL remain as backstops for code stuck in C or swallowing the interruption.
    """

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._armed = False

    def _fire(self, signum: int, _frame: Any) -> None:
        if not self._armed:
            return
        if signum == signal.SIGPROF:
            raise _Interrupted(f"exceeded the CPU limit of {self._limits.cpu_seconds:g} s")
        raise _Interrupted(f"exceeded the wall-clock limit of {self._limits.wall_seconds:g} s")

    def arm(self) -> None:
        self._armed = True
        signal.signal(signal.SIGPROF, self._fire)
        signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_PROF, self._limits.cpu_seconds, TIMER_REPEAT_S)
        signal.setitimer(signal.ITIMER_REAL, self._limits.wall_seconds, TIMER_REPEAT_S)

    def disarm(self) -> None:
        self._armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)


def _lower_rlimit(which: int, soft: int, hard: int) -> None:
    """Set a resource limit, never above a hard limit the server already runs under."""
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
    resource.setrlimit(which, (min(soft, hard), hard))


def _apply_rlimits(limits: Limits, snippets: int = 1) -> None:
    """Kernel-enforced limits for this child: memory on top of what it maps now, CPU, no cores.

    The CPU backstop covers the whole batch the child runs; each snippet's own CPU budget is
    enforced by its ITIMER_PROF timer.
    """
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    address_space = mapped + limits.memory_mb * 1024 * 1024
    _lower_rlimit(resource.RLIMIT_AS, address_space, address_space)
    # Backstop behind the ITIMER_PROF interruption: SIGXCPU one second later, SIGKILL after that.
    cpu = math.ceil(limits.cpu_seconds * snippets) + 1
    _lower_rlimit(resource.RLIMIT_CPU, cpu, cpu + 1)
    _lower_rlimit(resource.RLIMIT_CORE, 0, 0)  # SIGXCPU would otherwise dump a core


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, resolved once in the server (every page a child touches costs a copy)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not Linux: the timers and rlimits still bound a child
        return None


_PRCTL = _load_prctl()


def _die_with_parent() -> None:
    """Have the kernel SIGKILL this child if the server dies, so no snippet outlives it."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _stack_depth() -> int:
    """Frames on the stack now, so the recursion limit can be set relative to it."""
    frame = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


def _snippet_line(exc: BaseException) -> int | None:
    """The innermost line of generated code in the exception's traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


# --- the server ------------------------------------------------------------------------------


class _Child(NamedTuple):
    """A forked child waiting for its snippets: where to send them, where it reports."""

    pid: int
    codes_fd: int
    report_fd: int


class _Server:
    """Runs snippets in forked children against one environment's APIs.

    Between batches (``prepare``, once the caller has its outcomes) the next child is forked and
    the last one reaped, so the fork, the child's setup (its seccomp filter alone costs the kernel
    a quarter of a millisecond) and its exit happen while nothing waits for them; a child gets its
    snippets over a pipe.
    """

    def __init__(
        self,
        apis: dict[str, _Api],
        limits: Limits,
        inherited_fds: tuple[int, ...],
        on_snippet: Callable[[], Any] | None = None,
        seccomp_filter: bytes | None = None,
    ):
        self._apis = apis
        self._limits = limits
        self._inherited_fds = inherited_fds
        self._seccomp_filter = seccomp_filter
        # An environment's `begin_snippet` (e.g. a live API's per-snippet request budget), called
        # in the child before each snippet, since one child runs a whole batch.
        self._on_snippet = on_snippet
        self._spare: _Child | None = None
        self._finished: list[int] = []

    def prepare(self) -> None:
        """Between batches: fork the child of the next one if none is waiting (a failure is left to
        that batch, which then forks its own), and reap the children that reported everything."""
        if self._spare is None:
            try:
                self._spare = self._fork()
            except OSError:
                pass
        while self._finished:
            pid = self._finished.pop()
            os.kill(pid, signal.SIGKILL)  # it is exiting or gone: this only bounds the wait
            os.waitpid(pid, 0)

    def run_batch(self, codes: list[str]) -> list[dict[str, Any]]:
        """Execute snippets one after another in a child, each under its own limits.

        One fork serves the whole batch, which is what makes bulk verification cheap; every
        snippet still gets a fresh namespace, its own timers and its own outcome. When a snippet
        kills its child (memory, a swallowed timeout, a crash) only that snippet fails: the
        rest of the batch continues in a new child.
        """
        outcomes: list[dict[str, Any]] = []
        while len(outcomes) < len(codes):
            outcomes.extend(self._run_in_child(codes[len(outcomes):]))
        return outcomes

    def _fork(self) -> _Child:
        """A child waiting for its snippets (OSError if no pipe or process can be made)."""
        fds: list[int] = []
        try:
            fds.extend(os.pipe())
            fds.extend(os.pipe())
            codes_read, codes_write, report_read, report_write = fds
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        if pid == 0:
            os.close(codes_write)
            os.close(report_read)
            self._child_main(codes_read, report_write)
        os.close(codes_read)
        os.close(report_write)
        return _Child(pid, codes_write, report_read)

    def _run_in_child(self, codes: list[str]) -> list[dict[str, Any]]:
        """Outcomes for a prefix of `codes` (at least one) from one child."""
        child, self._spare = self._spare, None
        if child is not None and not self._hand_over(child, codes):
            child = None  # the waiting child died: not this batch's fault, a fresh one takes it
        if child is None:
            try:
                child = self._fork()
            except OSError as exc:
                return [_outcome("crash", f"could not fork a child for the snippet: {exc}")]
            if not self._hand_over(child, codes):
                return [_outcome("crash", "the snippet's process died before it got the snippet")]
        try:
            return self._collect(child.pid, child.report_fd, len(codes))
        finally:
            os.close(child.codes_fd)
            os.close(child.report_fd)

    @staticmethod
    def _hand_over(child: _Child, codes: list[str]) -> bool:
        """Send a waiting child its snippets; False, with the child ended and reaped, if it is gone."""
        try:
            send_frame(child.codes_fd, codes)
            return True
        except OSError:
            os.close(child.codes_fd)
            os.close(child.report_fd)
            os.kill(child.pid, signal.SIGKILL)  # unreaped, so it still exists: this only bounds the wait
            os.waitpid(child.pid, 0)
            return False

    def _collect(self, pid: int, read_fd: int, expected: int) -> list[dict[str, Any]]:
        """Read the child's reports, each within the wall-clock limit; classify a silent death."""
        outcomes: list[dict[str, Any]] = []
        killed = False
        while len(outcomes) < expected:
            deadline = time.monotonic() + self._limits.wall_seconds + KILL_GRACE_S
            try:
                outcome = recv_frame(read_fd, deadline)
            except FrameTimeout:
                os.kill(pid, signal.SIGKILL)
                killed = True
                outcome = None
            except ProtocolError:  # died mid-report
                outcome = None
            if outcome is None:
                break
            outcomes.append(outcome)
        if len(outcomes) == expected:  # its exit status says nothing more: reaped in prepare()
            self._finished.append(pid)
            return outcomes
        _, status, usage = os.wait4(pid, 0)
        outcomes.append(self._classify_death(status, usage, killed))
        return outcomes

    def _classify_death(self, status: int, usage: Any, killed: bool) -> dict[str, Any]:
        """The outcome of a child that ended without a report, from its exit status and usage."""
        limits = self._limits
        cpu_used = usage.ru_utime + usage.ru_stime
        cpu_exceeded = _outcome(
            "timeout", f"exceeded the CPU limit of {limits.cpu_seconds:g} s (killed)"
        )
        if killed:
            if cpu_used >= limits.cpu_seconds:
                return cpu_exceeded
            return _outcome(
                "timeout", f"exceeded the wall-clock limit of {limits.wall_seconds:g} s (killed)"
            )
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            if signum in (signal.SIGXCPU, signal.SIGKILL) and cpu_used >= limits.cpu_seconds:
                return cpu_exceeded
            if signum == signal.SIGKILL:
                return _outcome(
                    "memory", "killed by the system, most likely for using too much memory"
                )
            name = signal.Signals(signum).name
            return _outcome("crash", f"the snippet's process crashed ({name})")
        code = os.WEXITSTATUS(status)
        if code == CHILD_OUT_OF_MEMORY:
            return _outcome("memory", f"exceeded the memory limit of {limits.memory_mb} MB")
        if code == CHILD_TIMED_OUT:
            return _outcome("timeout", "exceeded the CPU or wall-clock limit")
        if code == CHILD_REPORT_FAILED:
            return _outcome("crash", "the snippet's process failed while reporting its outcome")
        return _outcome("crash", f"the snippet's process exited ({code}) without a report")

    def _child_main(self, codes_fd: int, write_fd: int) -> NoReturn:
        """Body of the forked child: set itself up, wait for its snippets, run them (one frame
        each), exit without cleanup. EOF instead of snippets (the server is done) ends it."""
        status = CHILD_REPORT_FAILED
        try:
            for fd in self._inherited_fds:  # the caller's pipes are the server's business only
                os.close(fd)
            _die_with_parent()
            if self._seccomp_filter is not None:
                seccomp.install(self._seccomp_filter)
            codes = recv_frame(codes_fd)
            if codes:  # None: EOF, the server is done and this child has nothing to run
                _apply_rlimits(self._limits, snippets=len(codes))
                for code in codes:
                    send_frame(write_fd, self._execute(code))
            status = 0
        except MemoryError:
            status = CHILD_OUT_OF_MEMORY
        except _Interrupted:
            status = CHILD_TIMED_OUT
        finally:
            os._exit(status)

    def _execute(self, code: str) -> dict[str, Any]:
        """In the child: check and run the code under its timers, return the outcome to report."""
        limits = self._limits
        if self._on_snippet is not None:
            self._on_snippet()
        calls: list[dict[str, Any]] = []
        trace: list[dict[str, Any]] = []
        output = _BoundedOutput(limits.max_output_bytes)
        namespace: dict[str, Any] = {"__builtins__": with_print(output.print)}
        for name, api in self._apis.items():
            namespace[name] = _traced(name, api, calls, limits.max_api_calls, trace)
        sys.setrecursionlimit(_stack_depth() + RECURSION_HEADROOM)
        timers = _Timers(limits)
        timers.arm()
        try:
            tree = check_code(code, self._apis)
            exec(compile(tree, SNIPPET_FILENAME, "exec", dont_inherit=True), namespace)
            if RESULT_NAME not in namespace:
                raise _ResultError("no_result", f"the code ran but never set {RESULT_NAME}")
            result = _serialise_result(namespace[RESULT_NAME], limits.max_output_bytes)
        except BaseException as exc:  # noqa: BLE001 - every way a snippet can fail is reported
            timers.disarm()
            line = _snippet_line(exc)
            # Free the snippet's data (globals and the locals its traceback keeps alive) before
            # building the report: after a MemoryError there may be no headroom left.
            traceback.clear_frames(exc.__traceback__)
            namespace.clear()
            error_type, message = self._classify_exception(exc, line)
            return _outcome(error_type, message, stdout=output.text(), calls=calls, trace=trace)
        timers.disarm()
        return _outcome(None, None, result=result, stdout=output.text(), calls=calls, trace=trace)

    def _classify_exception(self, exc: BaseException, line: int | None) -> tuple[ErrorType, str]:
        """The error category and message for an exception that ended the snippet."""
        if isinstance(exc, _Interrupted):
            return "timeout", str(exc)
        if isinstance(exc, PolicyViolation):
            return exc.error_type, exc.message
        if isinstance(exc, _ResultError):
            return exc.error_type, str(exc)
        where = f" (line {line})" if line is not None else ""
        if isinstance(exc, MemoryError):
            return "memory", f"exceeded the memory limit of {self._limits.memory_mb} MB{where}"
        text = str(exc)
        described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        error_type: ErrorType = "recursion" if isinstance(exc, RecursionError) else "runtime"
        return error_type, _clip(described + where)


# --- startup ---------------------------------------------------------------------------------


def _claim_protocol_fds() -> tuple[int, int]:
    """Move the protocol pipes off fds 0/1 so nothing else can read or write them.

    An environment that prints, or a C library that writes to fd 1, would otherwise corrupt
    the frame stream; such output goes to stderr instead.
    """
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = sys.stderr
    return proto_in, proto_out


def _load_factory(spec: str) -> Callable[..., Any]:
    """Resolve "package.module:callable" (the callable may be a dotted attribute path)."""
    module_name, sep, attr_path = spec.partition(":")
    if not (module_name and sep and attr_path):
        raise ValueError(f"env_factory must look like 'package.module:callable', got {spec!r}")
    factory: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        factory = getattr(factory, part)
    if not callable(factory):
        raise TypeError(f"env_factory {spec!r} is not callable")
    return factory


def _collect_apis(env: Any) -> dict[str, _Api]:
    """The environment's APIs, checked to be callables under names generated code can use."""
    functions = env.api_functions()
    apis: dict[str, _Api] = {}
    for name, func in functions.items():
        if not (isinstance(name, str) and name.isidentifier() and not name.startswith("_")):
            raise ValueError(f"API name {name!r} cannot be exposed to generated code")
        if not callable(func):
            raise TypeError(f"API {name!r} is not callable")
        try:
            signature: inspect.Signature | None = inspect.signature(func)
        except (TypeError, ValueError):
            signature = None
        apis[name] = _Api(func, signature)
    return apis


def _open_api_proxy(channel_fd: int) -> None:
    """Listen on this namespace's loopback for the environment's HTTP, hand the listener to the
    caller's forwarder over `channel_fd`, and point every HTTP client here at it (httpx reads
    HTTP(S)_PROXY when a client is built, so the environment's code needs no change)."""
    with socket.socket(fileno=channel_fd) as channel, socket.create_server(("127.0.0.1", 0)) as listener:
        socket.send_fds(channel, [b"listener"], [listener.fileno()])
        proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ[name] = proxy
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        os.environ.pop(name, None)


def _working_seccomp_filter() -> bytes | None:
    """The children's seccomp filter if this machine has one and a forked child can install it.

    Tried once here, so that a kernel without seccomp shows in the init reply instead of
    failing every snippet.
    """
    program = seccomp.build_filter()
    if program is None:
        return None
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            seccomp.install(program)
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return program if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else None


def main() -> None:
    """Serve the caller on stdin/stdout until it closes the pipe or says close."""
    proto_in, proto_out = _claim_protocol_fds()
    init = recv_frame(proto_in)
    if init is None:
        return
    try:
        limits = Limits(**init["limits"])
        # appended, not prepended: the server's own packages win over whatever a caller put on
        # its path (vLLM, for one, adds a directory of vendored, older modules)
        sys.path.extend(entry for entry in init["sys_path"] if entry not in sys.path)
        if init.get("api_channel_fd") is not None:
            _open_api_proxy(init["api_channel_fd"])
        seccomp_filter = _working_seccomp_filter() if limits.os_isolation != "off" else None
        env = _load_factory(init["env_factory"])(**init["env_kwargs"])
        apis = _collect_apis(env)
    except Exception:  # noqa: BLE001 - reported to the caller, which raises
        send_frame(proto_out, {"ok": False, "error": _clip(traceback.format_exc(), 8_000)})
        return
    send_frame(proto_out, {"ok": True, "api_names": sorted(apis), "seccomp": seccomp_filter is not None})
    # Everything built so far is long-lived; keeping the GC off it means forked children do
    # not touch (and so copy) its pages.
    gc.freeze()
    server = _Server(
        apis, limits, inherited_fds=(proto_in, proto_out), on_snippet=getattr(env, "begin_snippet", None),
        seccomp_filter=seccomp_filter,
    )
    server.prepare()
    while True:
        message = recv_frame(proto_in)
        if message is None or message.get("op") not in ("run", "run_batch"):
            return
        codes = message["codes"] if message["op"] == "run_batch" else [message["code"]]
        try:
            outcomes = server.run_batch(codes)
        except Exception as exc:  # noqa: BLE001 - the server outlives any single snippet
            error = _outcome("crash", f"sandbox server error: {type(exc).__name__}: {exc}")
            outcomes = [error] * len(codes)
        for outcome in outcomes:
            send_frame(proto_out, outcome)
        server.prepare()


if __name__ == "__main__":
    main()
