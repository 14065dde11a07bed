"""Any filter a question gives: a person search by name alone, or with the organisation, the
research field or both (a combination's `filters`); the coder carrying every filter the question
has into the copied program; and the questions about a group of scholars (at an organisation, in a
field) that a search without a name answers."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
import yaml

from soay.agent import finish_code, with_question_filters
from soay.clarifications import is_clarification
from soay.code_builder import build_code
from soay.combinations import load_combinations
from soay.domains import get_domain
from soay.ground_truth import ground_truth
from soay.settings import Settings
from soay.splits import entity_split, held_out, phrasings_for
from soay.triplets import TripletFactory, WorkUnit
from training.generate import sandbox_for

DOMAIN = get_domain("aminer")
SPEC = DOMAIN.spec
NAME, ORG, FIELD = "name", "organization", "interest"
GROUPS = ("scholars_at_organization", "scholars_in_field", "scholars_at_organization_in_field")
PERSON = [c for c in DOMAIN.combinations if c.apis[0] == "searchPerson" and not c.group]


# --- the intents ------------------------------------------------------------------------------


def test_every_person_combination_is_phrased_with_every_filter_in_both_languages():
    assert len(PERSON) == 32 and len(DOMAIN.combinations) == 52
    for c in PERSON:
        assert set(c.filters) >= {FIELD} and c.required_placeholders == {NAME} | c.branch_placeholders, c.id
        asked = ({NAME}, {NAME, FIELD}) if c.answer.attr == ORG and c.hops == 1 else ({NAME}, {NAME, ORG}, {NAME, FIELD}, {NAME, ORG, FIELD})
        for language in ("en", "zh"):
            trained = [set(c.given(t)) for _, i, t in phrasings_for(c, "train") if _ == language and i < len(c.phrasings[language])]
            for given in asked:  # written phrasings, several each (the informal ones come on top)
                assert sum(g == given for g in trained) >= 2, (c.id, language, given)


def test_held_out_phrasings_give_exactly_the_inputs_and_the_new_ones_stand_before_them():
    for c in DOMAIN.combinations:
        for language, templates in c.phrasings.items():
            for i, t in enumerate(templates):
                if held_out(c, language, i):
                    assert set(c.given(t)) == set(c.inputs), (c.id, t)


def test_group_intents_are_in_the_library():
    for cid, inputs in zip(GROUPS, ((ORG,), (FIELD,), (ORG, FIELD))):
        c = DOMAIN.combinations.by_id[cid]
        assert c.group and c.inputs == inputs and c.solution == "searchPerson" and c.answer.op == "list" and c.kind == "lookup"
    assert "searchPerson" in {str(s) for s in DOMAIN.library}
    # "Who at {affiliation} has worked with {name}?": the co-authors at an organisation, by name alone
    c = DOMAIN.combinations.by_id["coauthors_at_organization"]
    assert "Who at {affiliation} has worked with {name}?" in c.phrasings["en"]


def _write(tmp_path: Path, combination: dict) -> Path:
    path = tmp_path / "aminer.yaml"
    path.write_text(yaml.safe_dump({"domain": "aminer", "combinations": [combination]}, allow_unicode=True), encoding="utf-8")
    return path


BASE = {
    "id": "x", "solution": "searchPerson -> getPersonBasicInfo", "inputs": ["name", "organization"], "filters": ["organization", "interest"],
    "answer": {"op": "value", "attr": "email"},
    "phrasings": {"en": ["Email of {name}?", "Mail of {name} ({interest})", "Email of {name} at {organization}?", "Mail of {name} ({organization})?"],
                  "zh": ["{name}的邮箱", "{organization}的{name}的邮箱？"]},
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"filters": ["organization", "shoe_size"]}, "no parameter"),
        ({"filters": ["name", "organization"]}, "every input is a filter"),
        ({"phrasings": {"en": ["Email of {organization}?", "a {name} {organization}", "b {name} {organization}"], "zh": ["{organization}的{name}"]}}, "uses"),
        ({"phrasings": {"en": ["Email of {name}?", "a {name} {organization}", "b {name}"], "zh": ["{organization}的{name}"]}}, "held-out phrasing"),
    ],
)
def test_filters_are_checked(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        load_combinations(SPEC, DOMAIN.library, _write(tmp_path, BASE | change))


def test_a_phrasing_gives_what_it_gives(tmp_path):
    c = load_combinations(SPEC, DOMAIN.library, _write(tmp_path, BASE)).by_id["x"]
    assert c.head_inputs == (NAME, ORG, FIELD) and c.placeholders == {NAME, ORG}
    assert c.given("Mail of {name} ({interest})") == (NAME, FIELD) and c.given("{name}的邮箱") == (NAME,)


# --- the code and the ground truth --------------------------------------------------------------


def test_the_program_searches_with_exactly_the_question_s_filters():
    c = DOMAIN.combinations.by_id["person_email"]
    solution = DOMAIN.combinations.solution(c)
    head = lambda values: build_code(SPEC, c, solution, values).splitlines()[0]  # noqa: E731
    assert head({NAME: "Wei Zhang"}) == "person_list = searchPerson(name='Wei Zhang')"
    assert head({FIELD: "databases", NAME: "Wei Zhang"}) == "person_list = searchPerson(name='Wei Zhang', interest='databases')"
    assert head({FIELD: "db", ORG: "MIT", NAME: "W"}) == "person_list = searchPerson(name='W', organization='MIT', interest='db')"
    group = DOMAIN.combinations.by_id["scholars_at_organization_in_field"]
    code = build_code(SPEC, group, DOMAIN.combinations.solution(group), {ORG: "MIT", FIELD: "databases"})
    assert code == "person_list = searchPerson(organization='MIT', interest='databases')\nfinal_result = [item['name'] for item in person_list]\n"


def test_a_group_answer_is_what_the_search_finds(aminer_env):
    rng = random.Random(3)
    c = DOMAIN.combinations.by_id["scholars_at_organization"]
    person = aminer_env.sample_entity("person", rng)
    org = aminer_env.head_inputs("searchPerson", person)[ORG]
    answer, values = ground_truth(aminer_env, c, DOMAIN.combinations.solution(c), person, {ORG: org}, rng)
    assert values == {ORG: org} and answer == [r["name"] for r in aminer_env.call("searchPerson", organization=org)]
    assert answer and org in {r[ORG] for r in aminer_env.call("searchPerson", organization=org)}


@pytest.fixture(scope="module")
def made(aminer_env, aminer_db):
    """Triplets of the new subsets and intents, made and verified by the factory of `soay generate`."""
    data = Settings().data
    out = {}
    with sandbox_for("aminer", aminer_db, Settings().sandbox) as sandbox:
        factory = TripletFactory(aminer_env, DOMAIN.combinations, sandbox.run_batch, data.test_fraction, data.validation_fraction,
                                 clarification_share=0.0)
        for n, cid in enumerate(("person_citation_count", "coauthor_count", "coauthors_in_field", *GROUPS)):
            c = DOMAIN.combinations.by_id[cid]
            # from the first training phrasing with other filters than the held-out ones
            start = next(k for k, (_, _, t) in enumerate(phrasings_for(c, "train")) if set(c.given(t)) != set(c.inputs)) if not c.group else 0
            out[cid] = {split: factory.make(WorkUnit(cid, split, count, seed=n, start=start if split == "train" else 0)).triplets
                        for split, count in (("train", 24), ("test", 6))}
    return out


def test_each_question_is_searched_with_its_own_filters_and_verified(made, aminer_env):
    for cid, by_split in made.items():
        c = DOMAIN.combinations.by_id[cid]
        assert len(by_split["train"]) >= 20 and len(by_split["test"]) >= 3, cid
        templates = {c.template_id(language, i): t for split in ("train", "test") for language, i, t in phrasings_for(c, split)}
        for t in by_split["train"] + by_split["test"]:
            if is_clarification(t.answer):
                continue
            given = c.given(templates[t.template_id])
            assert set(t.inputs) == set(given) | c.branch_placeholders, t.query
            call = ast.parse(t.code.splitlines()[0]).body[0].value
            assert {k.arg: k.value.value for k in call.keywords} == {k: t.inputs[k] for k in given}, t.code
            assert t.combination.inputs == list(c.inputs)
        if not c.group:
            subsets = {tuple(sorted(set(t.inputs) - c.branch_placeholders)) for t in by_split["train"]}
            assert len(subsets) >= 3, (cid, subsets)  # the name alone, with the field, with both ...


def test_a_group_question_is_filed_under_the_first_scholar_found_and_held_out_by_its_words(made, aminer_env):
    data = Settings().data
    for cid in GROUPS:
        train, test = made[cid]["train"], made[cid]["test"]
        for t in train + test:  # the entity a logged program of one hop is filed under (soay/log_triplets.py)
            assert t.entity_id == aminer_env.call("searchPerson", **t.inputs)[0]["person_id"]
            assert entity_split(t.entity_id, data.test_fraction, data.validation_fraction) == t.split
        words = lambda t: tuple(sorted(t.inputs.items()))  # noqa: E731
        assert not {words(t) for t in train} & {words(t) for t in test}
        assert len({t.query for t in train}) == len(train)


# --- the coder carries every filter ------------------------------------------------------------

PROGRAM = "person_list = searchPerson(name=<|e1|>, organization=<|o1|>)\nfinal_result = person_list[0]['num_citation']\n"
FIELDS = frozenset({"graph neural networks", "databases"})


def test_the_copied_program_gets_the_filters_the_question_gives():
    widened = with_question_filters(PROGRAM, "How many citations does Wei Zhang, who works on graph neural networks, have?", SPEC, FIELDS)
    assert widened.startswith("person_list = searchPerson(name=<|e1|>, organization=<|o1|>, interest=<|v1|>)\n")
    assert finish_code(PROGRAM, "How many citations does Wei Zhang, who works on graph neural networks, have?", SPEC, FIELDS).startswith(
        "person_list = searchPerson(name='Wei Zhang', interest='graph neural networks')\n")
    named_only = "person_list = searchPerson(name=<|e1|>)\nfinal_result = person_list[0]['num_citation']\n"
    assert finish_code(named_only, "How many citations does Wei Zhang at Tsinghua University have?", SPEC).startswith(
        "person_list = searchPerson(name='Wei Zhang', organization='Tsinghua University')\n")
    assert finish_code(named_only, "Wei Zhang的总被引次数是多少？", SPEC) == named_only.replace("<|e1|>", "'Wei Zhang'").strip()
    group = "person_list = searchPerson(organization=<|o1|>)\nfinal_result = [item['name'] for item in person_list]\n"
    assert finish_code(group, "Which scholars at Tsinghua University work on databases?", SPEC, FIELDS).startswith(
        "person_list = searchPerson(organization='Tsinghua University', interest='databases')\n")


def test_a_marker_the_program_uses_elsewhere_is_no_filter():
    # the organisation the co-authors must be at is a condition, not the searched scholar's organisation
    program = ("person_list = searchPerson(name=<|e1|>)\ncoauthors = getCoauthors(person_id=person_list[0]['person_id'])\n"
               "final_result = [c['name'] for c in coauthors if <|o1|> in c['organization']]\n")
    assert finish_code(program, "Who at Peking University has worked with Wei Zhang?", SPEC).startswith("person_list = searchPerson(name='Wei Zhang')\n")
    both = finish_code(program, "Who at Peking University has worked with Wei Zhang of Tsinghua University?", SPEC)
    assert both.startswith("person_list = searchPerson(name='Wei Zhang', organization='Tsinghua University')\n") and "'Peking University' in" in both
    # a publication search has no organisation to take; code without a readable search is left alone
    title = "publication_list = searchPublication(publication_info=<|e1|>)\nfinal_result = publication_list[0]['year']\n"
    assert with_question_filters(title, 'When was "Deep Graphs" by people at Tsinghua University published?', SPEC) == title
    for code in ("final_result = 1\n", "x = searchPerson(**args)\n", "x = searchPerson(name=f(<|e1|>))\n"):
        assert with_question_filters(code, "Wei Zhang at Tsinghua University", SPEC) == code
    # a name passed by position is not passed twice
    assert with_question_filters("x = searchPerson(<|e1|>)\n", "Wei Zhang at Tsinghua University", SPEC) == (
        "x = searchPerson(<|e1|>, organization=<|o1|>)\n")


def test_a_condition_the_question_fills_comes_before_a_search_filter():
    # copied from "Which collaborators of X at <|o1|> work at <|o2|>?"; this question names one organisation
    program = ("person_list = searchPerson(name=<|e1|>, organization=<|o1|>)\n"
               "coauthors = getCoauthors(person_id=person_list[0]['person_id'])\n"
               "final_result = [c['name'] for c in coauthors if <|o2|> in c['organization']]\n")
    restored = finish_code(program, "Who at Peking University has worked with Wei Zhang?", SPEC)
    assert restored.startswith("person_list = searchPerson(name='Wei Zhang')\n") and "if 'Peking University' in c['organization']" in restored
    both = finish_code(program, "Which collaborators of Wei Zhang at Tsinghua University work at Peking University?", SPEC)
    assert both == finish_code(program, "Which collaborators of Wei Zhang at Tsinghua University work at Peking University?", SPEC)
    assert both.startswith("person_list = searchPerson(name='Wei Zhang', organization='Tsinghua University')\n") and "'Peking University' in" in both
    # copied from a question that gave the scholar's field <|v1|> and the co-authors' <|v2|>
    fields = ("person_list = searchPerson(name=<|e1|>, interest=<|v1|>)\n"
              "final_result = [c for c in person_list if <|v2|> in c['interests']]\n")
    assert finish_code(fields, "Which collaborators of Wei Zhang work on databases?", SPEC, FIELDS) == (
        "person_list = searchPerson(name='Wei Zhang')\nfinal_result = [c for c in person_list if 'databases' in c['interests']]")
    # a name is never taken from the search
    titled = "person_list = searchPerson(name=<|e1|>)\nfinal_result = <|e2|>\n"
    assert with_question_filters(titled, "Who is Wei Zhang?", SPEC) == titled
