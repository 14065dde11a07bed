"""The data root's mirror in an object store (`data.mirror`), for Ray nodes that share no disk.

Every job reads and writes files under the local data root, as on one machine: sqlite, shards,
safetensors and FAISS want local files, and a node-local copy is what a cluster would cache anyway.
With a mirror, what a job writes is pushed (`push`) and a node that lacks a file it reads pulls it
(`pull`), by its path relative to the root: `<root>/aminer/dataset/v0001/train-00000.jsonl` is
`<mirror>/aminer/dataset/v0001/train-00000.jsonl`. A file is copied only when the other side lacks
it or holds another size, so a second push of a grown dataset sends its new version alone.
fsspec does the transfers (s3fs for s3://), so any store it knows works.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from fsspec import AbstractFileSystem
from fsspec.core import url_to_fs

from soay.settings import DataSettings


class MirrorError(ValueError):
    """A path the mirror cannot hold: it is not under the data root."""


def _remote(data: DataSettings, local: Path) -> tuple[AbstractFileSystem, str]:
    assert data.mirror is not None
    try:
        relative = Path(local).resolve().relative_to(Path(data.root).resolve())
    except ValueError:
        raise MirrorError(f"{local} is not under the data root {data.root}: the mirror {data.mirror} holds only what is") from None
    fs, base = url_to_fs(data.mirror, **data.mirror_options)
    return fs, str(PurePosixPath(base) / relative.as_posix()) if relative.parts else base


def mirror_url(data: DataSettings, local: Path) -> str:
    """Where the mirror holds `local`; MirrorError when it cannot (not under the data root)."""
    fs, remote = _remote(data, local)
    return fs.unstrip_protocol(remote)


def push(data: DataSettings, local: Path) -> int:
    """Copy the file or directory `local` (under the data root) to the mirror; returns the files
    sent (0 without a mirror, or when the mirror already holds each at its size)."""
    if not data.mirror:
        return 0
    local = Path(local)
    fs, remote = _remote(data, local)
    files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
    held = {PurePosixPath(info["name"]).as_posix(): info["size"] for info in _listing(fs, remote)}
    sent = 0
    for path in files:
        target = remote if path == local else str(PurePosixPath(remote) / path.relative_to(local).as_posix())
        if held.get(fs._strip_protocol(target)) != path.stat().st_size:
            fs.put_file(str(path), target)
            sent += 1
    return sent


def pull(data: DataSettings, local: Path) -> int:
    """Copy what the mirror holds at `local`'s place (a file, or a directory's files) that `local`
    lacks or holds at another size; returns the files fetched (0 without a mirror)."""
    if not data.mirror:
        return 0
    local = Path(local)
    fs, remote = _remote(data, local)
    fetched = 0
    root = fs._strip_protocol(remote)
    for info in _listing(fs, remote):
        name = PurePosixPath(info["name"]).as_posix()
        target = local if name == root else local / PurePosixPath(name).relative_to(root)
        if not target.is_file() or target.stat().st_size != info["size"]:
            target.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(name, str(target))
            fetched += 1
    return fetched


def _listing(fs: AbstractFileSystem, remote: str) -> list[dict]:
    """The files at `remote`: itself when it is a file, else every file below it (none when absent)."""
    fs.invalidate_cache()  # another node may have written since this process last looked
    if not fs.exists(remote):
        return []
    if fs.isfile(remote):
        return [fs.info(remote)]
    return [info for info in fs.find(remote, detail=True).values() if info.get("type") == "file"]
