"""Clarification triplets: questions about a name several scholars carry (asked without the
organisation that tells them apart) or a name nobody carries, whose expected answer is the
clarification the served answer gives. Made by the real factory over the small corpus, verified in
a real sandbox by the call trace's outcome (soay/outcomes.py), filed by the entity-split rules and
scored by SoAyEval."""

from __future__ import annotations

import random
import re
import sqlite3

import pytest

from soay import triplets as triplets_module
from soay.clarifications import (
    AMBIGUOUS, NOT_FOUND, clarification_matches, fabricate, is_clarification, outcome_answer, unqualified,
)
from soay.domains import get_domain
from soay.environment.academic_corpus import normalize
from soay.evaluation import Case, categorise, evaluate
from soay.outcomes import Outcome, analyse, fuzzy_apis
from soay.settings import Settings
from soay.splits import TRAIN, entity_split, group_split, held_out
from soay.triplets import TripletFactory, WorkUnit
from training.generate import sandbox_for

DOMAIN = get_domain("aminer")
SEARCHES = set(fuzzy_apis(DOMAIN.spec))
DATA = Settings().data
COMBINATIONS = ("coauthor_names", "person_citation_count", "most_cited_coauthor", "coauthors_in_field", "person_organization", "publication_year")
SPLITS = ("train", "validation", "test")


@pytest.fixture(scope="module")
def sandbox(aminer_db):
    with sandbox_for("aminer", aminer_db, Settings().sandbox) as box:
        yield box


@pytest.fixture(scope="module")
def corpus(aminer_db):
    with sqlite3.connect(f"{aminer_db.as_uri()}?mode=ro", uri=True) as conn:
        yield conn


def factory(env, run_batch, share: float = 1.0) -> TripletFactory:
    return TripletFactory(env, DOMAIN.combinations, run_batch, DATA.test_fraction, DATA.validation_fraction, clarification_share=share)


@pytest.fixture(scope="module")
def made(aminer_env, sandbox):
    """Every candidate a clarification question: four per combination and split."""
    f = factory(aminer_env, sandbox.run_batch)
    out, stats = [], {}
    for n, cid in enumerate(COMBINATIONS):
        for split in SPLITS:
            result = f.make(WorkUnit(cid, split, 4, seed=11 + n))
            out += result.triplets
            for k, v in result.stats.items():
                stats[k] = stats.get(k, 0) + v
    return out, stats


def _persons_named(corpus, name: str, organization: str | None = None) -> set[str]:
    sql = "SELECT p.pid FROM person p JOIN organization o ON o.id = p.org_id WHERE p.name_norm = ?"
    params: tuple = (normalize(name),)
    if organization is not None:
        sql, params = sql + " AND o.name = ?", (*params, organization)
    return {row[0] for row in corpus.execute(sql, params)}


def test_clarification_triplets_are_made_and_verified_by_the_runs_outcome(made, sandbox, corpus, aminer_env):
    triplets, stats = made
    assert len(triplets) == 4 * len(COMBINATIONS) * len(SPLITS) and all(is_clarification(t.answer) for t in triplets)
    kinds = {(t.split, t.answer["kind"]) for t in triplets}
    assert {(s, k) for s in ("train", "test") for k in (AMBIGUOUS, NOT_FOUND)} <= kinds
    assert stats["template_verified"] == stats["kept"] == stats["ambiguous_verified"] + stats["not_found_verified"] == len(triplets)
    for t, run in zip(triplets, sandbox.run_batch([t.code for t in triplets])):  # a fresh run agrees
        assert clarification_matches(t.answer, analyse(run.trace, run.ok, run.result, SEARCHES)), t.query
        answer = t.answer
        assert answer["api"] == t.solution.split(" -> ")[0] and answer["searched"] in t.query
        assert t.code.startswith(f"{'person' if answer['api'] == 'searchPerson' else 'publication'}_list = {answer['api']}(")
        if answer["kind"] == NOT_FOUND:  # nobody by that name, in the corpus or through the search
            assert not run.ok and aminer_env.call(answer["api"], **answer["args"]) == []
            if answer["api"] == "searchPerson":
                assert not _persons_named(corpus, answer["searched"])
                assert t.inputs["name"] == answer["searched"] and set(t.inputs) >= {"name", *t.combination.inputs}
            continue
        # every scholar of that name the question leaves open, and only they, are the candidates
        organization = answer["args"].get("organization")
        assert set(answer["candidates"]) == _persons_named(corpus, answer["searched"], organization)
        assert len(answer["candidates"]) >= 2 and answer["candidates"] == sorted(answer["candidates"])
        if organization is None and "organization" in t.combination.inputs:  # asked without it
            assert "organization" not in t.inputs and "organization=" not in t.code
            for pid in answer["candidates"]:
                assert aminer_env.head_inputs("searchPerson", pid)["organization"] not in t.query


def test_clarifications_land_in_the_split_of_their_entities(made):
    triplets, _ = made
    for t in triplets:
        assert entity_split(t.entity_id, DATA.test_fraction, DATA.validation_fraction) == t.split, t.query
        if t.answer["kind"] == AMBIGUOUS:
            assert t.entity_id in t.answer["candidates"]
            assert group_split(t.answer["candidates"], DATA.test_fraction, DATA.validation_fraction) == t.split
            if t.split == TRAIN:  # no held-out scholar is named in training
                assert {entity_split(p, DATA.test_fraction, DATA.validation_fraction) for p in t.answer["candidates"]} == {TRAIN}
        _, language, index = t.template_id.rsplit("/", 2)
        if t.split == TRAIN:
            assert not held_out(DOMAIN.combinations.by_id[t.combination.id], language, int(index))
    train = [t for t in triplets if t.split == TRAIN]
    held = [t for t in triplets if t.split != TRAIN]
    named = lambda ts: {t.entity_id for t in ts} | {p for t in ts for p in t.answer.get("candidates", [])}  # noqa: E731
    leaked = {p for p in named(train) & named(held) if entity_split(p, DATA.test_fraction, DATA.validation_fraction) != TRAIN}
    assert not leaked
    assert not {t.query for t in train} & {t.query for t in held}


def test_a_wrong_candidate_list_or_a_wrong_search_is_rejected(aminer_env, sandbox, corpus, monkeypatch):
    # the code is right, the expected candidates are not: one namesake left out
    real = triplets_module.ambiguous_answer
    monkeypatch.setattr(triplets_module, "ambiguous_answer", lambda api, args, searched, ids: real(api, args, searched, sorted(ids)[1:]))
    f = factory(aminer_env, sandbox.run_batch)
    result = f.make(WorkUnit("coauthor_names", "train", 6, seed=5))
    assert result.stats["template_mismatch"] > 0 and not any(t.answer["kind"] == AMBIGUOUS for t in result.triplets)
    monkeypatch.undo()
    # the expected answer is right, the code searches someone else (a name one scholar carries)
    unique = corpus.execute("SELECT name FROM person GROUP BY name_norm HAVING count(*) = 1 ORDER BY name LIMIT 1").fetchone()[0]
    elsewhere = factory(aminer_env, lambda codes: sandbox.run_batch([re.sub(r"name='[^']*'", f"name={unique!r}", c) for c in codes]))
    result = elsewhere.make(WorkUnit("coauthor_names", "train", 4, seed=5))
    assert result.triplets == [] and result.stats["template_mismatch"] > 0

    outcome = Outcome("ambiguous", "searchPerson", {"name": "Ann Lee"}, [{"person_id": "a", "name": "Ann Lee"}, {"person_id": "b", "name": "Ann Lee"}])
    right = outcome_answer(outcome, "person_id")
    assert right == {"kind": "ambiguous", "api": "searchPerson", "searched": "Ann Lee", "args": {"name": "Ann Lee"}, "candidates": ["a", "b"]}
    assert clarification_matches(right, outcome)
    assert clarification_matches({**right, "searched": "ann  LEE"}, outcome)  # compared like names
    for wrong in ({**right, "candidates": ["a"]}, {**right, "candidates": ["a", "b", "c"]}, {**right, "kind": "not_found"},
                  {**right, "searched": "Bo Lee"}, {**right, "api": "searchPublication"}):
        assert not clarification_matches(wrong, outcome)


def test_namesakes_at_one_organisation_become_a_clarification_not_a_silent_pick(aminer_env, sandbox, corpus):
    rows = corpus.execute(
        "SELECT group_concat(p.pid, '|') FROM person p GROUP BY p.name_norm, p.org_id HAVING count(*) = 2 ORDER BY p.name"
    ).fetchall()
    pairs = [row[0].split("|") for row in rows]
    pairs = [p for p in pairs if len(_persons_named(corpus, aminer_env.head_inputs("searchPerson", p[0])["name"])) == 2]
    if not pairs:
        pytest.skip("no two namesakes share an organisation in this corpus")
    pair = pairs[0]
    split = group_split(pair, DATA.test_fraction, DATA.validation_fraction)
    own = next(p for p in pair if entity_split(p, DATA.test_fraction, DATA.validation_fraction) == split)
    f = factory(aminer_env, sandbox.run_batch, share=0.0)  # nothing made on purpose
    f._sample = lambda entity, split, rng: own  # the ordinary candidate is about one of the two
    result = f.make(WorkUnit("person_citation_count", split, 1, seed=0))
    (t,) = result.triplets
    assert result.stats["ambiguous_from_run"] == 1
    assert t.answer["kind"] == AMBIGUOUS and t.answer["candidates"] == sorted(pair)
    assert t.entity_id == next(p for p in sorted(pair) if entity_split(p, DATA.test_fraction, DATA.validation_fraction) == split)
    assert t.inputs["organization"] == t.answer["args"]["organization"] and t.inputs["organization"] in t.query


def _case(t, run, solution: str | None = None, gold=None) -> Case:
    return Case(t.hops, t.language, t.solution, t.code, t.answer if gold is None else gold, solution or t.solution, t.code, run.ok,
                run.result, run.trace, frozenset(SEARCHES))


def test_evaluation_scores_a_right_and_a_wrong_clarification(made, sandbox, corpus, aminer_env):
    triplets, _ = made
    ambiguous = next(t for t in triplets if t.answer["kind"] == AMBIGUOUS and t.hops == 2 and "organization" not in t.answer["args"])
    missing = next(t for t in triplets if t.answer["kind"] == NOT_FOUND and t.answer["api"] == "searchPerson" and t.hops == 2)
    other = next(s for s in (str(x) for x in DOMAIN.library) if s.startswith("searchPerson -> ") and s != ambiguous.solution)

    run = sandbox.run(ambiguous.code)
    assert categorise(_case(ambiguous, run)) == "EM"
    assert categorise(_case(ambiguous, run, solution=other)) == "DS"
    assert categorise(_case(ambiguous, run, gold={**ambiguous.answer, "candidates": ambiguous.answer["candidates"][:1]})) == "WC"
    # a program that names one namesake's organisation picks that one: an answer, not the clarification
    orgs = [aminer_env.head_inputs("searchPerson", p)["organization"] for p in ambiguous.answer["candidates"]]
    org = next(o for o in orgs if orgs.count(o) == 1)
    searched = f"name={ambiguous.answer['searched']!r}"
    picked = sandbox.run(ambiguous.code.replace(searched, f"{searched}, organization={org!r}"))
    assert picked.ok and picked.trace[0]["args"]["organization"] == org
    assert categorise(_case(ambiguous, picked)) == "WC"
    assert categorise(_case(ambiguous, picked, solution=other)) == "WS"
    broken = sandbox.run("final_result = (\n")
    assert categorise(_case(ambiguous, broken)) == "EE"

    run = sandbox.run(missing.code)
    assert not run.ok  # it takes the first of an empty search: that failure is the right answer
    assert categorise(_case(missing, run)) == "EM"
    unique = corpus.execute("SELECT name FROM person GROUP BY name_norm HAVING count(*) = 1 ORDER BY name LIMIT 1").fetchone()[0]
    someone = sandbox.run(re.sub(r"name='[^']*'", f"name={unique!r}", missing.code))
    assert categorise(_case(missing, someone)) == "WC"  # found someone: an answer where nobody is
    nobody_else = fabricate(missing.answer["searched"], "Quixote Zzyzx", random.Random(0))
    other_miss = sandbox.run(missing.code.replace(repr(missing.answer["searched"]), repr(nobody_else)))
    assert categorise(_case(missing, other_miss)) == "WC"  # not found, but not what was asked
    assert categorise(_case(missing, broken)) == "EE"
    # without the trace there is no outcome to read: a clarification is never right by its value
    assert categorise(Case(2, "en", missing.solution, missing.code, missing.answer, missing.solution, missing.code, True, missing.answer)) == "WC"

    report = evaluate([_case(ambiguous, sandbox.run(ambiguous.code)), _case(missing, run), _case(missing, someone)], set(DOMAIN.spec.api_names))
    assert report["kind:ambiguous"]["EM"] == 100.0 and report["kind:not_found"]["n"] == 2 and report["kind:not_found"]["EM"] == 50.0
    assert report["all"]["n"] == 3 and report["hop2"]["ACC"] == round(200 / 3, 2)


def test_phrasings_without_the_organisation_and_names_nobody_carries():
    assert unqualified("Who are the collaborators of {name} at {organization}?", "en", ["organization"]) == "Who are the collaborators of {name}?"
    assert unqualified("At {organization}, how many citations has {name} accumulated?", "en", ["organization"]) == "How many citations has {name} accumulated?"
    assert unqualified("What citation total does {organization}'s {name} have?", "en", ["organization"]) == "What citation total does {name} have?"
    assert unqualified("{name} {organization} citation count", "en", ["organization"]) == "{name} citation count"
    assert unqualified("{organization}的{name}有哪些合作者？", "zh", ["organization"]) == "{name}有哪些合作者？"
    assert unqualified("帮我查一下{name}（{organization}）的邮箱。", "zh", ["organization"]) == "帮我查一下{name}的邮箱。"
    assert unqualified("{name} works at {organization}; what gender is this scholar?", "en", ["organization"]) is None
    every = [(lang, t) for c in DOMAIN.combinations if "organization" in c.inputs and not c.group for lang, ts in c.phrasings.items() for t in ts]
    reduced = [unqualified(t, lang, ["organization"]) for lang, t in every]
    assert sum(r is not None for r in reduced) >= 0.95 * len(every)
    assert all("{organization}" not in r and "{name}" in r for r in reduced if r)
    rng = random.Random(1)
    made = fabricate("Wei B. Zhang", "Kenji Tanaka", rng)
    assert made.split()[1] == "B." and normalize(made) != normalize("Wei B. Zhang")
    assert fabricate("Cross-Domain Learning for Graphs", "Deep Networks", rng).count(" for ") == 1
