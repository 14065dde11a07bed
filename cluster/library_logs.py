"""Where the libraries' own output goes: log files, not the console.

Ray, Ray Serve, vLLM, torch and transformers write hundreds of start-up lines (engine arguments,
kernel registrations, NUMA and LD_PRELOAD warnings, "Started a local Ray instance", Serve's
deployment options). A command of the stack says one line per component it starts and leaves
the rest in two places, each named once on the console:

- what Ray's processes write (generation and embedding actors, Serve's controller, proxy and
  replicas, the vLLM engines in them): Ray keeps it in its session folder, `<session>/logs`
  (`worker-*.out|err`, Serve's in `serve/`), when the driver does not ask for it
  (`ray.init(log_to_driver=False)`, `RAY_SERVE_LOG_TO_STDERR=0`: cluster/ray_runtime.py). The
  engines' own settings are left alone, so those files stay complete;
- what the libraries write in this process (Ray's and Serve's driver loggers, the root logger
  Ray Serve LLM configures, the offline vLLM engine of training and evaluation while it starts,
  C++ warnings included, transformers' progress bars): the library log,
  `<data.root>/logs/libraries.log`.

Ray errors that the driver is sent (an actor killed for memory, a restarted controller) stay on
the console: they say why something is slow or failed. `ray.serve_logs_to_console`
(SOAY_RAY__SERVE_LOGS_TO_CONSOLE=true) leaves everything on the console, as the libraries write
it. This process's output is routed only once a command calls `route_library_output` (tests and
library use keep the libraries' own defaults); Ray's processes stay in their files either way.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from soay.settings import Settings

LIBRARY_LOG = "libraries.log"
DRIVER_LOGGERS = ("ray", "ray.serve", "vllm", "")
"""The libraries' Python loggers in this process that print on the console by default; "" is the
root logger, which Ray Serve LLM's import sets to print every library's INFO lines (faiss's) as JSON."""
PROJECT = ("soay", "serving", "training", "retriever", "cluster", "cli", "loadtest")
"""The stack's own loggers: their warnings stay on the console when the root logger is moved."""

_log: Path | None = None
_said: set[str] = set()


def route_library_output(settings: Settings) -> Path | None:
    """From now on, send this process's library output to `<data.root>/logs/libraries.log`; the
    file, or None when `ray.serve_logs_to_console` keeps everything on the console."""
    global _log
    if settings.ray.serve_logs_to_console:
        _log = None
        return None
    _log = (settings.data.root / "logs" / LIBRARY_LOG).resolve()  # made when first written
    _no_progress_bars()
    _deepspeed_on_cpu()
    to_library_log(*DRIVER_LOGGERS)
    return _log


def _no_progress_bars() -> None:
    """transformers' and huggingface_hub's progress bars ("Loading weights" as the sentence encoder
    loads) off: by the variable both read at import, or by their switches once imported."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def _deepspeed_on_cpu() -> None:
    """DeepSpeed, which transformers imports as it loads a model, warns on the console that it
    set its accelerator to the CPU whenever it finds no GPU. On a machine without an NVIDIA
    device that is no news: name the CPU first (its variable, read at import), and it says nothing."""
    if not Path("/dev/nvidiactl").exists():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def library_log() -> Path | None:
    """Where this process's library output goes; None: the console."""
    return _log


def quiet() -> bool:
    return _log is not None


def say(line: str) -> None:
    """One line of the stack's own about a component it started (stderr: stdout may carry --json)."""
    print(line, file=sys.stderr, flush=True)


def say_where(what: str, path: Path | str) -> str:
    """`; <what>: <path>` the first time this process names `path`, else ''."""
    if str(path) in _said:
        return ""
    _said.add(str(path))
    return f"; {what}: {path}"


def to_library_log(*names: str) -> None:
    """Move library loggers' console handlers to the library log, their formatters kept. A logger
    the library has not configured yet is left alone: its configuration (Serve's and vLLM's, at
    import) would replace the handlers, so it is moved once the library is imported."""
    if _log is None:
        return
    for name in names:
        logger = logging.getLogger(name)
        console = [h for h in logger.handlers if type(h) is not _OwnWarnings and isinstance(h, logging.StreamHandler)
                   and not isinstance(h, logging.FileHandler)]
        if not console:
            continue
        for handler in console:
            logger.removeHandler(handler)
        _log.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(_log, encoding="utf-8", delay=True)
        handler.setFormatter(console[0].formatter)
        logger.addHandler(handler)
        if name:
            logger.propagate = False
        else:
            logger.addHandler(_OwnWarnings())


class _OwnWarnings(logging.StreamHandler):
    """The stack's own warnings on the console (stderr), once the root logger's lines go to the file."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)
        self.addFilter(lambda record: record.name.split(".")[0] in PROJECT)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))


@contextmanager
def starting(component: str | None = None) -> Iterator[None]:
    """While a library starts in this process, everything written to stdout and stderr, from
    Python or from C++ (torch's NUMA note), goes to the library log; then `component`, if given,
    gets its one line. Nothing changes when output is not routed."""
    started = time.perf_counter()
    with _redirected():
        yield
    if component and _log is not None:
        say(f"{component} ready in {time.perf_counter() - started:.0f} s{say_where('start-up output', _log)}")


@contextmanager
def stopping() -> Iterator[None]:
    """While libraries shut down (Serve, Ray: their farewells, such as a controller task that the
    shutdown cut short), what they write goes to the library log."""
    with _redirected():
        yield


@contextmanager
def _redirected() -> Iterator[None]:
    if _log is None:
        yield
        return
    _log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(_log, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])
    to_library_log(*DRIVER_LOGGERS)  # configured by imports inside the block: their later lines follow


@contextmanager
def announce_deployments(app_name: str = "soay", every_s: float = 1.0) -> Iterator[None]:
    """While a Serve application deploys (`serve.run` blocks for minutes, the engines' start-up
    lines in the replicas' log files), one line per deployment as it becomes healthy."""
    if _log is None:
        yield
        return
    import threading

    from ray import serve

    started, done, seen = time.perf_counter(), threading.Event(), set()

    def check() -> None:
        try:
            app = serve.status().applications.get(app_name)
        except Exception:  # noqa: BLE001 - the controller is starting or gone: ask again
            return
        for name, deployment in (app.deployments if app else {}).items():
            if name not in seen and deployment.status == "HEALTHY":
                seen.add(name)
                role, _, _ = name.partition(":")
                what = f"vllm: {role} engine (Ray Serve LLM)" if role in ("planner", "coder") else f"serve: {name}"
                say(f"{what} ready in {time.perf_counter() - started:.0f} s")

    def watch() -> None:
        while not done.wait(every_s):
            check()

    watcher = threading.Thread(target=watch, name="announce-deployments", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join(timeout=10)
    check()  # the last to become healthy, as the deployment returned
