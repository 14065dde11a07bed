"""Building a domain's corpus once, with a progress bar, and reusing it afterwards."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from tqdm import tqdm

from soay.domains import get_domain


def build_corpus(domain_name: str, db_path: Path, size: int, seed: int, show_progress: bool = True) -> dict:
    """(Re)build the corpus at `db_path`, showing one bar per generation stage."""
    bars: dict[str, tqdm] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if not show_progress:
            return
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=f"corpus {stage}", unit="row", leave=False)
        bar.update(done - bar.n)

    db_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return get_domain(domain_name).build_corpus(db_path, size, seed, progress=progress)
    finally:
        for bar in bars.values():
            bar.close()


def corpus_meta(db_path: Path) -> dict[str, str]:
    """What a corpus was built as (domain, size, seed), from its `meta` table; {} if unreadable."""
    try:
        with closing(sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error:
        return {}


def ensure_corpus(domain_name: str, db_path: Path, size: int, seed: int, show_progress: bool = True) -> Path:
    """The corpus path, (re)building it unless one of this domain, size, seed and layout is there.

    A corpus built with other settings or by an older builder is replaced rather than silently
    reused: the triplets' entities and answers depend on it.
    """
    wanted = {"domain": domain_name, "size": str(size), "seed": str(seed),
              "schema_version": get_domain(domain_name).corpus_schema_version()}
    meta = corpus_meta(db_path) if db_path.is_file() else {}
    if {k: meta.get(k) for k in wanted} != wanted:
        build_corpus(domain_name, db_path, size, seed, show_progress)
    return db_path
