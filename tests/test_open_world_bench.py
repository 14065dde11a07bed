"""The open-world benchmark on a made-up set: three scholars the corpus never had, six questions.

The entities are written into a copy of the session's small corpus and read back through the APIs;
the gold programs give the answers the entities imply; a heads model on the 2-layer base, whose
planner is made to get one question wrong on purpose, is scored by the bench's own path and its
results merged into the JSON the way repeated runs are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import open_world_bench as bench  # noqa: E402

ENTITIES = {
    "scholars": [
        {"id": "s001", "name": "Quillon Vantrebeck", "name_zh": None, "name_aliases": ["Q. Vantrebeck"], "aliases": ["HIComp"],
         "organization": "Harrowgate Institute of Computing", "organization_zh": "哈罗盖特计算研究所",
         "interests": ["stream mining", "machine learning"], "interests_zh": ["流数据挖掘", "机器学习"], "num_citation": 4211, "num_pubs": 87, "gender": "male",
         "position": "Associate Professor", "email": "qv@harrowgate.example", "education": "PhD, Harrowgate Institute of Computing",
         "bio": "Quillon Vantrebeck studies stream mining.",
         "coauthors": [{"id": "s002", "relation": "coauthor", "joint": 3}, {"id": "s003", "relation": "student", "joint": 2}]},
        {"id": "s002", "name": "Marisol Okonkwo-Lindqvist", "name_zh": "马丽索", "aliases": [],
         "organization": "Tsinghua University", "organization_zh": "清华大学", "interests": ["graph neural networks"],
         "num_citation": 910, "num_pubs": 33, "gender": "female", "position": "Lecturer",
         "coauthors": [{"id": "s001", "relation": "coauthor", "joint": 3}]},
        {"id": "s003", "name": "Tavish Pemberton", "organization": "Harrowgate Institute of Computing", "interests": ["stream mining"],
         "gender": "male", "position": "PhD Student", "coauthors": [{"id": "s001", "relation": "advisor", "joint": 2}]},
    ],
    "publications": [
        {"id": "p001", "title": "Sketching Unbounded Streams with Learned Priors", "year": 2021, "venue": "NeurIPS",
         "abstract": "We sketch streams.", "authors": ["s003", "s001"], "num_citation": 310},
        {"id": "p002", "title": "Okapi: Elastic Stream Joins at Scale", "year": 2019, "venue": "VLDB", "authors": ["s001", "s002"],
         "num_citation": 45},
        {"id": "p003", "title": "A Note on Spectral Drift in Citation Graphs", "year": 2023, "venue": "Workshop on Drift",
         "authors": ["s002"], "num_citation": 7},
    ],
}
HARROWGATE = "Harrowgate Institute of Computing"
QUESTIONS = [
    {"id": "q1", "language": "en", "question": f"Who has Quillon Vantrebeck of {HARROWGATE} co-authored with?", "intent": "coauthor_names",
     "arguments": {"name": "Quillon Vantrebeck", "organization": HARROWGATE}, "scholar": "s001", "publication": None,
     "style": "plain", "expected_kind": "answer"},
    {"id": "q2", "language": "en", "question": 'In which year was "Sketching Unbounded Streams with Learned Priors" published?',
     "intent": "publication_year", "arguments": {"publication_info": "Sketching Unbounded Streams with Learned Priors"},
     "scholar": None, "publication": "p001", "style": "plain", "expected_kind": "answer"},
    {"id": "q3", "language": "zh", "question": "研究stream mining的Tavish Pemberton在哪个机构工作？", "intent": "person_organization",
     "arguments": {"name": "Tavish Pemberton", "interest": "stream mining"}, "scholar": "s003", "publication": None,
     "style": "plain", "expected_kind": "answer"},
    # the planner below is made to take this one for the publication count: scored wrong
    {"id": "q4", "language": "en", "question": "How many citations does Marisol Okonkwo-Lindqvist at Tsinghua University have?",
     "intent": "person_citation_count", "arguments": {"name": "Marisol Okonkwo-Lindqvist", "organization": "Tsinghua University"},
     "scholar": "s002", "publication": None, "style": "casual", "expected_kind": "answer"},
    {"id": "q5", "language": "en", "question": f"Who has Zorvath Quenby of {HARROWGATE} co-authored with?", "intent": "coauthor_names",
     "arguments": {"name": "Zorvath Quenby", "organization": HARROWGATE}, "scholar": None, "publication": None,
     "style": "plain", "expected_kind": "not_found"},
    {"id": "q6", "language": "en", "question": "What will the weather be like in Lisbon tomorrow?", "intent": "unsupported",
     "arguments": {}, "scholar": None, "publication": None, "style": "off-topic", "expected_kind": "unsupported"},
]
WRONG = {"q4": "person_publication_count"}
"""The planner's deliberately wrong choice: the same solution (searchPerson), another intent."""
VOCABULARY = frozenset({"stream mining"})


@pytest.fixture(scope="module")
def open_world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("open_world")
    (root / "entities.yaml").write_text(yaml.safe_dump(ENTITIES, allow_unicode=True))
    for split in ("validation", "test"):
        (root / f"{split}.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS))
    return root


@pytest.fixture(scope="module")
def corpus_copy(open_world, aminer_db, tmp_path_factory):
    """(copy, what was inserted, the APIs' check) of the session corpus with the entities."""
    from soay.environment.insert_entities import load_entities

    copy = tmp_path_factory.mktemp("open_world_corpus") / "corpus.sqlite"
    inserted, check = bench.prepare_corpus(aminer_db, load_entities(open_world / "entities.yaml"), copy)
    return copy, inserted, check


def test_inserted_scholars_are_found_and_their_facts_come_back(corpus_copy):
    from soay.environment.academic import AcademicEnvironment

    copy, inserted, check = corpus_copy
    assert check["problems"] == [] and check["found_by_name"] == check["names"] == 5
    assert check["first_by_name_and_organization"] == 3
    ids = inserted.person_ids
    with AcademicEnvironment(copy) as env:
        assert env.searchPerson(name="Quillon Vantrebeck")[0]["person_id"] == ids["s001"]
        assert ids["s002"] in [h["person_id"] for h in env.searchPerson(name="马丽索")]  # by the Chinese name too
        assert ids["s001"] in [h["person_id"] for h in env.searchPerson(organization="哈罗盖特计算研究所")]
        assert ids["s001"] in [h["person_id"] for h in env.searchPerson(name="Quillon Vantrebeck", organization="HIComp")][:1]  # a short form
        assert ids["s003"] in [h["person_id"] for h in env.searchPerson(interest="流数据挖掘")]  # the new field, in Chinese
        assert ids["s003"] in [h["person_id"] for h in env.searchPerson(interest="stream mining")]  # a field the corpus lacked
        # joint counts as declared (filler papers of the pair), the relation from the advising record
        coauthors = {c["person_id"]: c for c in env.getCoauthors(ids["s001"])}
        assert {k: (c["num_joint_pubs"], c["relation"]) for k, c in coauthors.items()} == {ids["s002"]: (3, "coauthor"),
                                                                                          ids["s003"]: (2, "student")}
        assert env.getCoauthors(ids["s003"])[0]["relation"] == "advisor"
        pubs = env.getPersonPubs(ids["s001"])
        assert pubs[0]["title"] == "Sketching Unbounded Streams with Learned Priors"  # fillers have no citations
        assert min(p["year"] for p in pubs) == 2019 and max(p["year"] for p in pubs) == 2021  # nor move the career
        record = env.getPublication(inserted.publication_ids["p001"])
        assert [a["person_id"] for a in record["authors"]] == [ids["s003"], ids["s001"]] and record["venue"] == "NeurIPS"
        assert env.getPublication(inserted.publication_ids["p003"])["venue"] == "Workshop on Drift"
        info = env.getPersonBasicInfo(ids["s001"])
        assert (info["num_citation"], info["num_pubs"], info["organization"]) == (4211, 87, HARROWGATE)  # as declared
        info = env.getPersonBasicInfo(ids["s003"])
        assert (info["num_pubs"], info["num_citation"]) == (2, 310)  # undeclared: derived like the generator's
        assert env.getPersonBasicInfo(ids["s002"])["position"] == "Assistant Professor"  # "Lecturer", a position the corpus knows
    assert inserted.fillers == 3 and any("Lecturer" in n for n in inserted.notes)


def test_a_declared_advisor_is_recorded_whatever_the_positions(aminer_db, tmp_path):
    """getCoauthors reads the advising record, not the positions: a declared link between two
    researchers is reported as declared; a second advisor of one student is noted, the last kept."""
    import shutil

    from soay.environment.academic import AcademicEnvironment
    from soay.environment.insert_entities import Entities, insert_entities

    scholar = {"organization": "Harrowgate Institute of Computing", "position": "Researcher"}
    entities = Entities.model_validate({"scholars": [
        {**scholar, "id": "a", "name": "Orla Fennimore", "coauthors": [{"id": "b", "relation": "advisor"}, {"id": "c", "relation": "advisor"}]},
        {**scholar, "id": "b", "name": "Bram Kesteloot"},
        {**scholar, "id": "c", "name": "Cyra Wendeborn", "coauthors": [{"id": "a", "relation": "student"}]},
    ], "publications": []})  # fmt: skip
    copy = tmp_path / "corpus.sqlite"
    shutil.copyfile(aminer_db, copy)
    inserted = insert_entities(copy, entities)
    ids = inserted.person_ids
    with AcademicEnvironment(copy) as env:
        assert {c["person_id"]: c["relation"] for c in env.getCoauthors(ids["a"])} == {ids["b"]: "coauthor", ids["c"]: "advisor"}
        assert {c["person_id"]: c["relation"] for c in env.getCoauthors(ids["c"])} == {ids["a"]: "student"}
    assert any("declared advisors b and c" in n for n in inserted.notes)


def test_gold_programs_answer_and_a_wrong_program_is_scored_wrong(corpus_copy):
    from soay.domains import get_domain
    from soay.outcomes import fuzzy_apis
    from soay.settings import SandboxSettings
    from training.generate import sandbox_for

    copy, inserted, _ = corpus_copy
    domain = get_domain("aminer")
    questions = [bench.Question.model_validate(q) for q in QUESTIONS]
    built = [bench.gold_program(q, domain) for q in questions]
    assert built[-1] == (None, None) and all(p for p, _ in built[:-1])
    fuzzy = frozenset(fuzzy_apis(domain.spec))
    wrong = bench.gold_program(questions[3].model_copy(update={"intent": WRONG["q4"]}), domain)[0]
    with sandbox_for(domain, copy, SandboxSettings()) as sandbox:
        runs = sandbox.run_batch([p or "final_result = None" for p, _ in built] + [wrong])
    golds = [bench.judge_gold(q, bench.Gold(p), r, inserted, fuzzy) if p else bench.Gold(None) for q, (p, _), r in zip(questions, built, runs)]
    assert [g.problem for g in golds] == [None] * 6
    assert sorted(golds[0].result) == ["Marisol Okonkwo-Lindqvist", "Tavish Pemberton"]
    assert [g.result for g in golds[1:4]] == [2021, HARROWGATE, 910]
    assert golds[4].outcome == "not_found"
    fixed = bench.library_literals(domain)
    right = bench.judge(questions[3], golds[3], "person_citation_count", built[3][0], runs[3], domain, fixed)
    assert (right.solution, right.arguments, right.answer, right.wrong) == (True, True, True, [])
    off = bench.judge(questions[3], golds[3], WRONG["q4"], wrong, runs[-1], domain, fixed)
    assert runs[-1].result == 33 and (off.solution, off.arguments, off.answer) == (False, True, False)
    # another name in the program: the arguments are wrong, and so is the answer it finds
    other = bench.judge(questions[0], golds[0], "coauthor_names", built[0][0].replace("Quillon Vantrebeck", "Tavish Pemberton"),
                        runs[2], domain, fixed)
    assert (other.arguments, other.answer) == (False, False)
    # a not-found question is answered right only by saying so; an unsupported one only by refusing
    assert bench.judge(questions[4], golds[4], "coauthor_names", built[4][0], runs[4], domain, fixed).answer
    assert not bench.judge(questions[4], golds[4], "coauthor_names", built[0][0], runs[0], domain, fixed).answer
    assert bench.judge(questions[5], golds[5], "out_of_scope", "", runs[5], domain, fixed).answer
    assert not bench.judge(questions[5], golds[5], "coauthor_names", built[0][0], runs[0], domain, fixed).answer


def _heads_model(llm, base: Path, directory: Path) -> Path:
    """A heads model on `base` whose planner picks each question's gold combination (WRONG's for
    q4) and out of scope for q6, by prototypes of the questions' own features, and whose coder
    holds each question's masked gold program: what the bench scores is then known."""
    from soay.code_builder import build_code
    from soay.domains import get_domain
    from soay.heads import OUT_OF_SCOPE, Heads
    from soay.mentions import mask_code
    from soay.question_encoder import BASE_LINK
    from training.offline import encode

    domain = get_domain("aminer")
    labels = [OUT_OF_SCOPE if q["intent"] == "unsupported" else WRONG.get(q["id"], q["intent"]) for q in QUESTIONS]
    features = encode(llm, [q["question"] for q in QUESTIONS], vocabulary=VOCABULARY).astype(np.float64)
    mean, scale = features.mean(axis=0), np.ones(features.shape[1])
    unit = (features - mean) / np.linalg.norm(features - mean, axis=1, keepdims=True)
    classes = list(dict.fromkeys(labels))
    weight = np.stack([50 * unit[[i for i, label in enumerate(labels) if label == c]].mean(axis=0) for c in classes])
    programs, kept = [], []
    for i, (q, label) in enumerate(zip(QUESTIONS, labels)):
        if label == OUT_OF_SCOPE:
            continue
        c = domain.combinations.by_id[label]
        programs.append(mask_code(build_code(domain.spec, c, domain.combinations.solution(c), q["arguments"]), q["question"], VOCABULARY))
        kept.append(i)
    heads = Heads(mean=mean, scale=scale, weight=weight, bias=np.zeros(len(classes)), labels=classes, exemplars=unit[kept],
                  exemplar_labels=[labels[i] for i in kept], exemplar_programs=programs, vocabulary=VOCABULARY,
                  out_of_scope_threshold=0.5, sentence_encoder=None)
    heads.save(directory)
    (directory / BASE_LINK).symlink_to(base, target_is_directory=True)
    return directory


def test_the_bench_scores_a_model_and_merges_its_results(gemma_small, aminer_db, open_world, tmp_path, monkeypatch):
    from contextlib import contextmanager

    from training import evaluate, offline

    out = tmp_path / "results" / "open_world.json"
    with offline.encoder(gemma_small) as llm:
        model = _heads_model(llm, gemma_small, tmp_path / "model")
        # the bench's prediction path as it is (training/evaluate.py predict_with_heads), on the engine
        # already started for the heads: one start of vLLM instead of two
        monkeypatch.setattr(evaluate, "encoder", contextmanager(lambda base_dir, max_model_len=256: iter([llm])))
        data = bench.main(["--model", f"fixture={model}", "--set-dir", str(open_world), "--corpus", str(aminer_db), "--out", str(out)])
    assert data == json.loads(out.read_text())
    assert set(data) == {"validation", "designs"}
    assert {lang: set(v) for lang, v in data["validation"].items()} == {"en": set(bench.METRICS), "zh": set(bench.METRICS)}
    # q4 (en) is planned as another intent: its solution and answer are wrong, its arguments right
    assert data["validation"]["en"] == {"solution": 80.0, "arguments": 100.0, "answer": 80.0, "refusals": 20.0, "n": 5}
    assert data["validation"]["zh"] == {"solution": 100.0, "arguments": 100.0, "answer": 100.0, "refusals": 0.0, "n": 1}
    (design,) = data["designs"]
    assert (design["name"], design["split"], design["questions"], design["gold_problems"]) == ("fixture", "validation", 6, [])
    assert design["by_intent"]["person_citation_count"]["solution"] == 0.0 and design["by_style"]["off-topic"]["refusals"] == 100.0
    assert design["by_kind"]["not_found"]["answer"] == 100.0 and design["false_refusals"] == 0.0
    failures = [json.loads(line) for line in (out.parent / "open_world-failures-validation-fixture.jsonl").read_text().splitlines()]
    assert [(f["id"], f["wrong"], f["predicted"]["combination"], f["predicted"]["answer"]) for f in failures] == [
        ("q4", ["solution", "answer"], "person_publication_count", 33)]
    assert "searchPerson(name='Marisol Okonkwo-Lindqvist', organization='Tsinghua University')" in failures[0]["predicted"]["program"]
    # another run: its split's headline and its design entry (by name and split) replace the old ones
    entry = {k: v for k, v in design.items() if k != "split"}
    bench.merge_results(out, "test", [{**entry, "en": {**entry["en"], "answer": 0.0}}])
    merged = bench.merge_results(out, "validation", [{**entry, "name": "fixture", "zh": {**entry["zh"], "n": 7}}])
    assert merged["test"]["en"]["answer"] == 0.0 and merged["validation"]["zh"]["n"] == 7
    assert [(d["name"], d["split"]) for d in merged["designs"]] == [("fixture", "test"), ("fixture", "validation")]
