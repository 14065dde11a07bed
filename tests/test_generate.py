"""Triplet generation: the factory, Ray sharding (local, RAY_ADDRESS cluster, Ray Jobs), splits."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from conftest import TEST_CORPUS_SIZE
from soay.answers import answers_match
from soay.clarifications import clarification_matches, is_clarification
from soay.dataset import VersionWriter, iter_triplets, load_manifest
from soay.domains import get_domain
from soay.outcomes import analyse, fuzzy_apis
from soay.settings import Settings
from soay.splits import held_out, held_out_for, phrasings_for
from soay.triplets import TripletFactory, WorkUnit
from training.generate import generate, keep_triplet, sandbox_for

TRAIN, TEST = 6, 3


def small_settings(root: Path, **data) -> Settings:
    return Settings(
        data={"root": root, "corpus_size": TEST_CORPUS_SIZE, "seed": 7, "train_per_combination": TRAIN, "test_per_combination": TEST, "unit_size": 4, **data},
        ray={"workers": 2},
    )


@pytest.fixture(scope="module")
def generated(data_root, aminer_db, local_ray):
    return generate(small_settings(data_root), show_progress=False)


def test_factory_keeps_only_code_that_reproduces_the_answer(aminer_env, aminer_db):
    domain = get_domain("aminer")
    with sandbox_for("aminer", aminer_db, Settings().sandbox) as sandbox:
        # plain answers only here (the clarification questions of a share > 0: test_clarifications.py)
        factory = TripletFactory(aminer_env, domain.combinations, sandbox.run_batch, clarification_share=0.0)
        result = factory.make(WorkUnit("most_cited_coauthor", "train", 5, seed=1))
        assert len(result.triplets) == 5
        assert result.stats["template_verified"] == 5
        for t in result.triplets:
            assert sandbox.run(t.code).result is not None
        # code that computes something else is rejected, never kept
        wrong = TripletFactory(aminer_env, domain.combinations, lambda codes: sandbox.run_batch([c.replace("['name']", "['person_id']") for c in codes]),
                               clarification_share=0.0)
        bad = wrong.make(WorkUnit("most_cited_coauthor", "train", 3, seed=1))
        assert bad.triplets == [] and bad.stats["template_mismatch"] > 0


def test_generate_writes_a_complete_verified_dataset(generated):
    counts = generated.manifest.counts()
    n_comb = len(get_domain("aminer").combinations)
    assert counts["train"] >= 0.85 * TRAIN * n_comb
    assert counts["test"] >= 0.85 * TEST * n_comb
    assert generated.kept == counts["train"] + counts["validation"] + counts["test"]
    assert generated.stats["template_verified"] == generated.kept + generated.stats.get("duplicate_across_units", 0)
    manifest = load_manifest(generated.dataset_path)
    assert manifest.version == 1 and manifest.sources["1"]["workers"] == 2
    assert sum(1 for _ in iter_triplets(generated.dataset_path, verify=True)) == generated.kept


def test_every_kept_triplet_reverifies_in_a_fresh_sandbox(generated, aminer_db):
    searches = set(fuzzy_apis(get_domain("aminer").spec))
    with sandbox_for("aminer", aminer_db, Settings().sandbox) as sandbox:
        triplets = list(iter_triplets(generated.dataset_path))
        clarifications = [t for t in triplets if is_clarification(t.answer)]
        assert 0 < len(clarifications) < 0.2 * len(triplets)  # the default share, about 1 in 20
        for t, result in zip(triplets, sandbox.run_batch([t.code for t in triplets])):
            if is_clarification(t.answer):  # a name nobody or several carry: the run's outcome says so
                assert clarification_matches(t.answer, analyse(result.trace, result.ok, result.result, searches)), t.query
                assert result.calls[0]["api"] == t.solution.split(" -> ")[0]
                continue
            assert result.ok, (t.query, result.error)
            assert answers_match(t.answer, result.result), t.query
            called = [c["api"] for c in result.calls]
            if t.combination.kind == "loop":
                assert set(called) == set(t.solution.split(" -> "))
            else:
                assert " -> ".join(called) == t.solution


def test_a_question_two_units_made_keeps_one_phrasing_whichever_unit_finishes_first(generated):
    """Units finish in any order; the dataset must not depend on it (two runs, one dataset)."""
    t = next(iter_triplets(generated.dataset_path, split="train"))
    other = t.model_copy(update={"id": "0" * 16, "query": t.query.rstrip("?？") + ", please?"})
    for order in ([t, other], [other, t]):
        kept: dict = {}
        assert [keep_triplet(kept, x) for x in order] == [True, False]
        assert list(kept.values()) == [other]  # the smaller id, either way


def test_splits_do_not_overlap_and_hold_out_phrasings(generated):
    domain = get_domain("aminer")
    train = list(iter_triplets(generated.dataset_path, split="train"))
    validation = list(iter_triplets(generated.dataset_path, split="validation"))
    test = list(iter_triplets(generated.dataset_path, split="test"))
    assert validation, "no validation split"
    for a, b in ((train, test), (train, validation), (validation, test)):
        assert not {t.entity_id for t in a} & {t.entity_id for t in b}
        assert not {t.query for t in a} & {t.query for t in b}
    # each evaluation split has its own held-out phrasings, never the other's
    validation_templates, test_all = {t.template_id for t in validation}, {t.template_id for t in test}
    for c in domain.combinations:
        for lang, ts in c.phrasings.items():
            for i in range(len(ts)):
                kept_for = held_out_for(c, lang, i)
                if kept_for == "test":
                    assert c.template_id(lang, i) not in validation_templates
                elif kept_for == "validation":
                    assert c.template_id(lang, i) not in test_all
    assert {t.combination.id for t in test} == {c.id for c in domain.combinations}
    train_templates = {t.template_id for t in train}
    test_templates = defaultdict(set)
    for t in test:
        test_templates[t.combination.id].add(t.template_id)
    for c in domain.combinations:
        held = {c.template_id(lang, i) for lang, ts in c.phrasings.items() for i in range(len(ts)) if held_out(c, lang, i)}
        assert not held & train_templates, c.id
        assert held & test_templates[c.id], f"{c.id}: no held-out phrasing in test"
    # the informal phrasings (aminer.informal.yaml) are learnt and never evaluated on
    # (a run this small only reaches the first phrasings of each combination: training's are listed)
    informal = {c.template_id(lang, len(c.phrasings[lang]) + j) for c in domain.combinations for lang, ts in c.informal.items() for j in range(len(ts))}
    assert informal and not informal & (validation_templates | test_all)
    for c in domain.combinations:
        own = {c.template_id(lang, len(c.phrasings[lang]) + j) for lang, ts in c.informal.items() for j in range(len(ts))}
        assert own <= {c.template_id(lang, i) for lang, i, _ in phrasings_for(c, "train")}, c.id
        for split in ("validation", "test"):
            assert not own & {c.template_id(lang, i) for lang, i, _ in phrasings_for(c, split)}, (c.id, split)
    assert {t.language for t in test} == {"en", "zh"}
    assert {t.hops for t in test} == {1, 2, 3}


def test_triplet_records_follow_the_contract(generated):
    t = next(iter_triplets(generated.dataset_path, split="test"))
    record = t.model_dump(mode="json")
    for key in ("id", "query", "language", "solution", "combination", "code", "inputs", "answer", "template_id", "hops", "split"):
        assert key in record
    assert "final_result" in t.code and set(record["combination"]) >= {"inputs", "output"}


def test_existing_dataset_is_not_overwritten_silently(generated, data_root):
    with pytest.raises(FileExistsError):
        generate(small_settings(data_root), show_progress=False)


def test_parquet_shards_round_trip(data_root, aminer_db, local_ray, tmp_path):
    report = generate(
        small_settings(data_root, train_per_combination=1, test_per_combination=1, shard_format="parquet"),
        out=tmp_path / "pq",
        show_progress=False,
    )
    rows = list(iter_triplets(tmp_path / "pq", verify=True))
    assert len(rows) == report.kept > 0
    assert all(s.path.endswith(".parquet") for s in report.manifest.shards)


def test_a_version_is_written_as_its_triplets_arrive_and_named_only_at_commit(generated, tmp_path):
    """VersionWriter (what `soay generate` streams a million triplets through): a full shard is on
    disk before the job ends, readers see the version only once committed, and a dead job's
    shards are cleared by the next writer of that version."""
    train = list(iter_triplets(generated.dataset_path, split="train"))[:7]
    (tmp_path / "v0001").mkdir()
    (tmp_path / "v0001" / "train-00009.jsonl").write_text("left by a job that died\n")
    writer = VersionWriter(tmp_path, "aminer", shard_size=3)
    assert not (tmp_path / "v0001").exists()
    for t in train[:4]:
        writer.add(t)
    assert (tmp_path / "v0001" / "train-00000.jsonl").is_file() and not (tmp_path / "v0001" / "train-00001.jsonl").exists()
    with pytest.raises(FileNotFoundError):
        load_manifest(tmp_path)  # not a dataset until committed
    for t in train[4:]:
        writer.add(t)
    manifest = writer.commit({"job": "test"})
    assert [s.path for s in manifest.shards] == ["v0001/train-00000.jsonl", "v0001/train-00001.jsonl", "v0001/train-00002.jsonl"]
    assert [s.count for s in manifest.shards] == [3, 3, 1]
    assert [t.id for t in iter_triplets(tmp_path, verify=True)] == [t.id for t in train]


def test_each_split_lists_its_triplets_by_combination_then_id(generated):
    """The order `soay generate` writes in, combination by combination as each one's units finish:
    the same dataset whatever order the units finished in."""
    for split in ("train", "test"):
        keys = [(t.combination.id, t.id) for t in iter_triplets(generated.dataset_path, split=split)]
        assert keys == sorted(keys) and len(keys) > 10
