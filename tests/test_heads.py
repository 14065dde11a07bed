"""The heads recipe for real: features of the Gemma base from vLLM's pooling runner, the planner
head over combinations and out of scope, the coder's nearest verified program; fitted by `soay
train`'s code path (the session's served model, conftest `served_data`) and scored by SoAyEval's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import ROOT
from soay.dataset import iter_triplets
from soay.domains import get_domain
from soay.heads import OUT_OF_SCOPE, Heads
from soay.settings import Settings


def _heads(threshold: float) -> Heads:
    """Two combinations and out of scope over 2-d features; exemplars on the axes."""
    return Heads(
        mean=np.zeros(2), scale=np.ones(2), weight=np.array([[4.0, 0.0], [0.0, 4.0], [-4.0, -4.0]]), bias=np.zeros(3),
        labels=["a", "b", OUT_OF_SCOPE], exemplars=np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]),
        exemplar_labels=["a", "a", "b"], exemplar_programs=["x = 1", "x = 2", "y = 1"], out_of_scope_threshold=threshold,
    )


def test_a_program_that_kept_its_own_entities_is_never_copied_to_another_question():
    from types import SimpleNamespace

    from training.fit_heads import reusable_programs

    def triplet(combination: str, **inputs: str) -> SimpleNamespace:
        return SimpleNamespace(combination=SimpleNamespace(id=combination), inputs=inputs)

    kept = [triplet("a", name="Ada Li", organization="MIT"), triplet("a", name="Bo Wu", organization="ETH Zurich"),
            triplet("b", publication_info="Deep Nets")]
    programs = ["p = searchPerson(name='<|e1|>', organization='<|o1|>')",
                "p = searchPerson(name='Bo Wu', organization='ETH Zurich')",  # "Bo Wu ETH Zurich" was one mention: unmasked
                "p = searchPublication(publication_info='Deep Nets')"]  # the only program of b: kept
    assert reusable_programs(kept, programs).tolist() == [True, False, True]


def test_the_threshold_refuses_the_fewest_in_scope_questions_that_the_targets_allow():
    from training.fit_heads import out_of_scope_threshold

    in_scope = np.array([0.0, 0.1, 0.2, 0.3, 0.5])  # 0.5: the one in-scope question a budget of 20 % may refuse
    out_of_scope = np.array([0.2, 0.7, 0.9, 0.95])
    # refusing 3 of 4 out-of-scope questions needs a threshold above 0.2 and at most 0.7; refusing no
    # in-scope one then needs one above 0.5: the middle of (0.5, 0.7], on a grid of hundredths
    assert out_of_scope_threshold(in_scope, out_of_scope, 0.2, 0.75) == pytest.approx(0.6, abs=0.011)
    # half of them is enough: no in-scope one refused anywhere in (0.5, 0.9], and its middle is taken,
    # further from the in-scope question than the threshold that refuses the most would be
    assert out_of_scope_threshold(in_scope, out_of_scope, 0.2, 0.5) == pytest.approx(0.7, abs=0.011)
    # no threshold refuses them all within a budget of 0: the most that can be refused, (0.5, 0.7] again
    assert out_of_scope_threshold(in_scope, out_of_scope, 0.0, 1.0) == pytest.approx(0.6, abs=0.011)
    # no out-of-scope validation question: the lowest threshold within the budget
    assert out_of_scope_threshold(in_scope, np.array([]), 0.2, 0.96) == 0.31
    # refusing 0.2's question too would cost two in-scope ones (40 %): never taken
    assert out_of_scope_threshold(np.array([0.0, 0.1, 0.2, 0.25, 0.5]), np.array([0.22, 0.7]), 0.2, 1.0) > 0.25
    # no threshold keeps the in-scope questions: the head never refuses
    assert out_of_scope_threshold(np.array([1.0, 1.0]), out_of_scope, 0.0, 0.96) == 1.0


def test_the_planner_refuses_only_above_its_threshold_and_the_coder_takes_the_nearest_program(tmp_path):
    far = np.array([[-0.3, -0.3]])  # out of scope with probability 0.95
    assert _heads(0.5).plan(far)[0][0] == OUT_OF_SCOPE
    strict = _heads(0.99)
    assert strict.plan(far)[0][0] in {"a", "b"}  # below the threshold: the best combination instead
    assert strict.plan(np.array([[1.0, 0.0]]))[0][0] == "a"
    assert strict.programs(np.array([[0.5, 0.6], [0.9, 0.1], [0.0, 2.0]]), ["a", "a", "b"]) == [["x = 2"], ["x = 1"], ["y = 1"]]
    assert strict.programs(np.array([[1.0, 0.0]]), ["nowhere"]) == [[]]  # no exemplar: the coder must write
    strict.save(tmp_path)
    loaded = Heads.load(tmp_path)
    assert loaded.labels == strict.labels and loaded.out_of_scope_threshold == 0.99
    assert np.allclose(loaded.probabilities(far), strict.probabilities(far))
    with pytest.raises(FileNotFoundError, match="soay train"):
        Heads.load(tmp_path / "missing")


def test_fit_and_evaluate_heads_on_the_base(served_data, gemma_base, aminer_db, tmp_path):
    """The session's served model (conftest `served_data`): the default recipe fitted by `soay
    train`'s code path (training/fit_heads.py) on the base, here checked as a fit and scored by
    SoAyEval, rather than a second model fitted for this test alone."""
    from training.evaluate import run_eval
    from training.fit_heads import load_heads_config

    from conftest import RECIPE

    settings, dataset = served_data
    config = load_heads_config(RECIPE)
    model = settings.serve.model_dir
    record = json.loads((model / "run.json").read_text())  # what fit_heads returned
    assert (model / "base").resolve() == gemma_base and record["recipe"] == "heads"
    assert record["dataset"]["root"] == str(dataset) and record["config"] == config.model_dump(mode="json")
    assert 0.5 < record["metrics"]["train_accuracy"] <= 1  # what `soay demo` prints after fitting
    chosen = record["validation"]["chosen"]
    assert chosen["false_refusals"] <= config.max_false_refusals and 0 < chosen["threshold"] <= 1
    heads = Heads.load(model)
    domain = get_domain("aminer")
    assert set(heads.labels) == {c.id for c in domain.combinations} | {OUT_OF_SCOPE}
    assert heads.vocabulary  # research fields, written in lower case
    # the base's features and the retriever model's sentence vector, side by side
    hidden = json.loads((gemma_base / "config.json").read_text())["hidden_size"]
    assert heads.sentence_encoder == config.sentence_encoder == Settings().retriever.model
    assert heads.mean.shape == (hidden + 384,)  # all-MiniLM-L6-v2's 384 dimensions
    test = list(iter_triplets(dataset, split="test"))
    report = run_eval(model, dataset, aminer_db, "aminer", tmp_path / "eval", out_of_scope=ROOT / "benchmarks" / "out_of_scope.yaml")
    assert report["meta"]["invalid_solutions"] == 0 and report["meta"]["test_cases"] == len(test)
    # the training phrasings' questions about unseen entities are answered
    assert report["by_phrasing"]["seen"]["EM"] > 30
    assert report["out_of_scope"]["questions"] > 200 and report["out_of_scope"]["correct_refusals"]["all"] > 50
    assert {"held_out_phrasings", "all_cases"} <= set(report["headline"])


def test_the_ngram_head_reads_a_misspelt_attribute_and_mixes_into_the_plan(tmp_path):
    """The pooled features blur a short attribute word; the n-gram head reads it even misspelt, and
    its share of the plan follows `lexical_share` (soay/lexical.py)."""
    from soay.lexical import LexicalHead

    texts = ["email of <|e1|>", "what is the email address of <|e1|>", "<|e1|> email please", "<|e1|>的邮箱", "<|e1|>邮箱地址",
             "where does <|e1|> work", "which organization is <|e1|> at", "<|e1|> affiliation", "<|e1|>在哪工作", "<|e1|>的工作单位"]
    labels = ["a"] * 5 + ["b"] * 5
    lexical = LexicalHead.fit(texts, labels, np.ones(len(texts)), c=10.0)
    asked = ["emial of <|e1|>", "<|e1|> afiliation", "<|e1|>邮箱是什么"]
    assert [lexical.labels[i] for i in lexical.probabilities(asked, lexical.labels).argmax(axis=1)] == ["a", "b", "a"]

    heads = _heads(0.99)  # features say "b" for [0, 1]; the n-gram head is unsure of a word it never saw
    heads.lexical = LexicalHead.fit(["x", "y", "x y z"], ["a", "b", OUT_OF_SCOPE], np.ones(3), c=10.0)
    heads.lexical_share = 0.5
    with pytest.raises(ValueError, match="masked questions"):
        heads.probabilities(np.array([[0.0, 1.0]]))  # a mix was asked for: the texts are required
    heads.lexical_share = 0.0
    features_only = heads.probabilities(np.array([[0.0, 1.0]]), ["x"])
    heads.lexical_share = 1.0
    assert heads.plan(np.array([[0.0, 1.0]]), ["x"])[0][0] == "a"  # the n-gram head alone: "x" is a's word
    heads.lexical_share = 0.5
    mixed = heads.probabilities(np.array([[0.0, 1.0]]), ["x"])
    assert np.allclose(mixed, 0.5 * features_only + 0.5 * heads.lexical.probabilities(["x"], heads.labels))
    heads.save(tmp_path)
    loaded = Heads.load(tmp_path)
    assert loaded.lexical_share == 0.5 and np.allclose(loaded.probabilities(np.array([[0.0, 1.0]]), ["x"]), mixed)
