"""SoAyEval categories and Score, and the GraphQL paper's code metrics, on hand-built cases."""

import pytest

from soay.evaluation import Case, categorise, code_scores, connected_subsequences, evaluate, extract_calls, markdown_table

APIS = {"searchPerson", "getCoauthors", "getPersonPubs", "getPersonBasicInfo"}
GOLD = """person_list = searchPerson(name='Ann Lee', organization='MIT')
target_person = person_list[0]
coauthors = getCoauthors(person_id=target_person['person_id'])
final_result = [item['name'] for item in coauthors]
"""
RENAMED = """people = searchPerson(organization='MIT', name='Ann Lee')
me = people[0]
final_result = [c['name'] for c in getCoauthors(person_id=me['person_id'])]
"""


def case(solution="searchPerson -> getCoauthors", ok=True, answer=("Bo", "Cy"), hops=2, code=GOLD, language="en"):
    return Case(hops, language, "searchPerson -> getCoauthors", GOLD, ["Bo", "Cy"], solution, code, ok, list(answer) if answer else None)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, "EM"),
        ({"answer": ("Cy", "bo")}, "EM"),  # lists compare as multisets, strings without case
        ({"solution": "searchPerson -> getPersonPubs"}, "DS"),
        ({"solution": "searchPerson -> getPersonPubs", "answer": ("Dee",)}, "WS"),
        ({"answer": ("Dee",)}, "WC"),
        ({"ok": False, "answer": None}, "EE"),
        ({"ok": False, "answer": None, "solution": "nonsense"}, "EE"),
        ({"solution": "searchPerson->getCoauthors"}, "EM"),
        ({"solution": "", "answer": ("Dee",)}, "WS"),
    ],
)
def test_categories(kwargs, expected):
    assert categorise(case(**kwargs)) == expected


def test_score_weights_hops_one_two_three():
    cases = [case(hops=1)] + [case(hops=2), case(hops=2, answer=("x",))] + [case(hops=3, ok=False, answer=None)]
    report = evaluate(cases, APIS)
    assert report["hop1"]["ACC"] == 100.0 and report["hop2"]["ACC"] == 50.0 and report["hop3"]["ACC"] == 0.0
    assert report["hop2"]["WC"] == 50.0 and report["hop3"]["EE"] == 100.0
    assert report["score"] == round((1 * 100 + 2 * 50 + 3 * 0) / 6, 2)
    assert report["all"]["n"] == 4
    assert "| hop2 |" in markdown_table(report)


def test_scores_per_language():
    report = evaluate([case(language="en"), case(language="zh", answer=("x",))], APIS)
    assert report["lang:en"]["ACC"] == 100.0 and report["lang:zh"]["ACC"] == 0.0
    assert report["score:en"] == 100.0 and report["score:zh"] == 0.0


def test_argument_standardisation_ignores_variable_names_and_order():
    gold = extract_calls(GOLD, APIS)
    renamed = extract_calls(RENAMED, APIS)
    assert [c.api for c in gold] == ["searchPerson", "getCoauthors"]
    assert gold[1].args == (("person_id", "$searchPerson.person_id"),)
    assert gold[0].args == renamed[0].args and gold[1].args == renamed[1].args
    s = code_scores(GOLD, RENAMED, APIS)
    assert (s.arg_full, s.arg_functions, s.seq_full, s.seq_connected) == (1.0, (2, 2), 1.0, 1.0)


def test_wrong_argument_and_wrong_order():
    wrong_arg = GOLD.replace("'MIT'", "'CMU'")
    s = code_scores(GOLD, wrong_arg, APIS)
    assert s.arg_full == 0.0 and s.arg_functions == (1, 2) and s.seq_full == 1.0
    assert code_scores(GOLD, "final_result = (", APIS).arg_full == 0.0


def test_connected_subsequences_allow_independent_reordering():
    a = """p = searchPerson(name='A')
q = searchPerson(name='B')
x = getCoauthors(person_id=p[0]['person_id'])
y = getPersonPubs(person_id=q[0]['person_id'])
final_result = [x, y]
"""
    b = """q = searchPerson(name='B')
y = getPersonPubs(person_id=q[0]['person_id'])
p = searchPerson(name='A')
x = getCoauthors(person_id=p[0]['person_id'])
final_result = [x, y]
"""
    assert connected_subsequences(extract_calls(a, APIS)) == {("searchPerson", "getCoauthors"), ("searchPerson", "getPersonPubs")}
    s = code_scores(a, b, APIS)
    assert s.seq_full == 0.0 and s.seq_connected == 1.0 and s.arg_full == 1.0


def test_loop_dependencies_are_followed():
    code = """person_list = searchPerson(name='A')
coauthors = getCoauthors(person_id=person_list[0]['person_id'])
for coauthor in coauthors:
    info = getPersonBasicInfo(person_id=coauthor['person_id'])
final_result = 1
"""
    calls = extract_calls(code, APIS)
    assert calls[2].depends_on == {1} and calls[1].depends_on == {0}
    assert connected_subsequences(calls) == {("searchPerson", "getCoauthors", "getPersonBasicInfo")}
