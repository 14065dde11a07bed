"""Corpus building through the job layer: built once, reused, rebuilt when settings change."""

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


def test_aminer_corpus_records_what_it_was_built_as(aminer_db):
    meta = corpus_meta(aminer_db)
    assert (meta["domain"], meta["size"], meta["seed"]) == ("aminer", "2000", "7")


def test_unreadable_corpus_has_no_meta(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database")
    assert corpus_meta(junk) == {}
