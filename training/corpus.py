"""Building a domain's corpus once, with a progress bar, and reusing it afterwards."""

from __future__ import annotations

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


def ensure_corpus(domain_name: str, db_path: Path, size: int, seed: int, show_progress: bool = True) -> Path:
    """The corpus path, building the corpus first if it does not exist yet."""
    if not db_path.is_file():
        build_corpus(domain_name, db_path, size, seed, show_progress)
    return db_path
