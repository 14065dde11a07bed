"""soay/files.py: a reader sees the old file or the new one, never half of it, and no temporary
file is left behind either way."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing

import pytest

from soay.files import atomic_path, atomic_write_bytes, atomic_write_text


def test_writes_and_replaces_leaving_nothing_beside(tmp_path) -> None:
    target = tmp_path / "deep" / "pointer.json"  # the folder is made
    atomic_write_text(target, "first")
    atomic_write_text(target, "второй")
    assert target.read_text(encoding="utf-8") == "второй"
    atomic_write_bytes(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert [p.name for p in target.parent.iterdir()] == ["pointer.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path) -> None:
    target = tmp_path / "manifest.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed half-way")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_any_writer_can_fill_the_path_and_gets_the_usual_permissions(tmp_path) -> None:
    target = tmp_path / "corpus.sqlite"
    with atomic_path(target) as tmp, closing(sqlite3.connect(tmp)) as conn:
        conn.execute("CREATE TABLE t(x)")
        conn.commit()
        assert not target.exists()  # nothing is visible until the block ends
    with closing(sqlite3.connect(target)) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # other processes read the corpus
