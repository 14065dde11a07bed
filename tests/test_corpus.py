"""Corpus building through the job layer: built once, reused, rebuilt when settings change."""

import sqlite3
from contextlib import closing

from soay.environment.academic_corpus import SCHEMA_VERSION
from training.corpus import corpus_meta, ensure_corpus


def test_corpus_is_reused_only_when_it_matches_the_settings(tmp_path):
    path = tmp_path / "movies" / "corpus.sqlite"
    ensure_corpus("movies", path, 300, seed=1, show_progress=False)
    assert {k: corpus_meta(path)[k] for k in ("domain", "size", "seed")} == {"domain": "movies", "size": "300", "seed": "1"}
    built = path.stat().st_mtime_ns
    ensure_corpus("movies", path, 300, seed=1, show_progress=False)
    assert path.stat().st_mtime_ns == built  # same settings: reused
    ensure_corpus("movies", path, 300, seed=2, show_progress=False)
    assert corpus_meta(path)["seed"] == "2"  # other settings: rebuilt


def test_a_corpus_of_an_older_layout_is_rebuilt(tmp_path):
    path = tmp_path / "aminer" / "corpus.sqlite"
    ensure_corpus("aminer", path, 300, seed=1, show_progress=False)
    assert corpus_meta(path)["schema_version"] == str(SCHEMA_VERSION)
    with closing(sqlite3.connect(path)) as conn:  # as a builder of the previous layout left it
        conn.execute("DROP TABLE advising")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION - 1),))
        conn.commit()
    ensure_corpus("aminer", path, 300, seed=1, show_progress=False)
    assert corpus_meta(path)["schema_version"] == str(SCHEMA_VERSION)
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM advising").fetchone()[0] > 0


def test_aminer_corpus_records_what_it_was_built_as(aminer_db):
    meta = corpus_meta(aminer_db)
    assert (meta["domain"], meta["size"], meta["seed"]) == ("aminer", "2000", "7")


def test_unreadable_corpus_has_no_meta(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database")
    assert corpus_meta(junk) == {}
