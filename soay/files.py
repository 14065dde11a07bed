"""Writing a file so that a reader sees the old content or the new one, never half of it.

The new content goes to a temporary file beside the target (same directory, so the same file
system), is flushed to disk, and is renamed over the target in one step (`os.replace`). A
writer that fails or is killed leaves the target as it was; its temporary file is removed
when it fails in Python. Used for every file another process may read while it is rewritten:
dataset manifests and shards, tool weights, the promoted-model pointer, the corpora.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside `path` to write the new file at (by any writer: SQLite, parquet,
    plain `open`); on leaving the block it is flushed to disk and renamed over `path`, or removed
    if the block raised. The file is created by the writer, so it has the usual permissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace the file at `path` with `data`, atomically (see the module docstring)."""
    with atomic_path(path) as tmp, open(tmp, "xb") as f:
        f.write(data)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Replace the file at `path` with `text`, atomically (see the module docstring)."""
    atomic_write_bytes(path, text.encode(encoding))


def _fsync(path: Path) -> None:
    """Flush the file's content to disk, so the rename cannot outlive it in a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
