"""A seccomp filter for each snippet's process: no new processes, no exec, no kernel escape hatches.

Why: the namespaces around the sandbox server (soay/sandbox/isolation.py) hide the host, but code
that got past the AST policy could still fork without bound (RLIMIT_NPROC does not bind a process
whose real user is root, even inside a user namespace), exec whatever binaries the read-only file
system holds, or reach the kernel interfaces most exploits go through (user namespaces, BPF,
io_uring, ptrace...). A snippet needs none of that: the child refuses those system calls once,
before it runs any code, and the filter holds for the child's whole life.

Why by hand rather than libseccomp: no Python binding of it is installed, and the program is
small: check the architecture, then compare the system call number against a deny list. Threads
stay possible (``clone`` with CLONE_THREAD; ``clone3`` answers ENOSYS so that glibc falls back
to ``clone``), everything else not listed is allowed. Architectures without a table here get no
filter, and the server says so when it starts.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from collections.abc import Callable

# The deny list by name, shared by every architecture; process creation (fork, vfork, clone
# without CLONE_THREAD, clone3) is handled separately below.
DENIED_SYSCALLS: tuple[str, ...] = (
    "execve", "execveat",  # no other program
    "ptrace", "process_vm_readv", "process_vm_writev",  # no other process's memory
    "unshare", "setns",  # no new namespaces (e.g. a user namespace with fresh capabilities)
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",  # no changes to the file system view
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key",  # kernel attack surface
    "open_by_handle_at", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "syslog",  # the machine itself
)  # fmt: skip

_X86_64 = {
    "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "execve": 59, "execveat": 322,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272,
    "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250,
    "add_key": 248, "request_key": 249, "open_by_handle_at": 304, "kexec_load": 246,
    "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "syslog": 103,
}  # fmt: skip
# The generic table (asm-generic/unistd.h): no fork or vfork, both are clone.
_AARCH64 = {
    "clone": 220, "clone3": 435, "execve": 221, "execveat": 281, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "unshare": 97, "setns": 268, "mount": 40,
    "umount2": 39, "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 219, "add_key": 217,
    "request_key": 218, "open_by_handle_at": 265, "kexec_load": 104, "kexec_file_load": 294,
    "init_module": 105, "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224,
    "swapoff": 225, "acct": 89, "syslog": 116,
}  # fmt: skip
# machine -> (AUDIT_ARCH_* value, system call numbers, first number of a foreign ABI or None).
# On x86_64 the x32 ABI reuses the numbers with bit 30 set; it is refused outright, as is any
# call made through another architecture's entry point (e.g. int 0x80), whose numbers differ.
_ARCHES: dict[str, tuple[int, dict[str, int], int | None]] = {
    "x86_64": (0xC000003E, _X86_64, 0x40000000),
    "aarch64": (0xC00000B7, _AARCH64, None),
}

_CLONE_THREAD = 0x00010000
# classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h)
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_NR_OFFSET, _ARCH_OFFSET, _ARG0_LOW_OFFSET = 0, 4, 16  # struct seccomp_data, little-endian
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def build_filter(machine: str | None = None) -> bytes | None:
    """The filter program (an array of struct sock_filter) for this machine, or None if unknown."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, numbers, foreign_from = arch
    # (opcode, label to jump to when true, when false, k); None is the next instruction. Classic
    # BPF only jumps forward, so the returns come last.
    code: list[tuple[int, str | None, str | None, int]] = [
        (_LD_W_ABS, None, None, _ARCH_OFFSET),
        (_JEQ_K, None, "deny", audit_arch),
        (_LD_W_ABS, None, None, _NR_OFFSET),
    ]
    if foreign_from is not None:
        code.append((_JGE_K, "deny", None, foreign_from))
    code.append((_JEQ_K, "clone", None, numbers["clone"]))
    code.append((_JEQ_K, "nosys", None, numbers["clone3"]))
    for name in ("fork", "vfork", *DENIED_SYSCALLS):
        if name in numbers:
            code.append((_JEQ_K, "deny", None, numbers[name]))
    code.append((_RET_K, None, None, _RET_ALLOW))
    labels = {"clone": len(code)}
    code.append((_LD_W_ABS, None, None, _ARG0_LOW_OFFSET))  # clone's flags: a thread is allowed
    code.append((_JSET_K, None, "deny", _CLONE_THREAD))
    code.append((_RET_K, None, None, _RET_ALLOW))
    labels["deny"] = len(code)
    code.append((_RET_K, None, None, _RET_ERRNO | errno.EPERM))
    labels["nosys"] = len(code)
    code.append((_RET_K, None, None, _RET_ERRNO | errno.ENOSYS))

    def offset(at: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - at - 1

    return b"".join(
        struct.pack("=HBBI", op, offset(i, true), offset(i, false), k)
        for i, (op, true, false, k) in enumerate(code)
    )


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl with its real argument types (a pointer must not be cut to an int)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _load_prctl()


def install(program: bytes) -> None:
    """Confine the calling process (and any thread or child it makes) with `program`; OSError if
    the kernel refuses it. Sets no_new_privs first, which an unprivileged filter requires."""
    if _PRCTL is None:
        raise OSError(errno.ENOSYS, "prctl is not available")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    for args in ((_PR_SET_NO_NEW_PRIVS, 1, 0), (_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog))):
        if _PRCTL(args[0], args[1], args[2], 0, 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"prctl({args[0]}) failed: {errno.errorcode.get(code, code)}")
