"""Names that match nobody or several people, and why an answer is what it is: a real sandbox
process over the real in-process academic environment of the test corpus, its call trace read
by soay/outcomes.py and worded by the answer stage (serving/answer.py)."""

from __future__ import annotations

import sqlite3
import typing

import pytest

from serving.answer import ERRORS, compose_answer, compose_outcome, describe_error
from serving.schemas import Record
from soay.domains import get_domain
from soay.outcomes import analyse, explain, find_wrong_entity, fuzzy_apis
from soay.sandbox import Limits, Sandbox
from soay.sandbox.protocol import ErrorType

SPEC = get_domain("aminer").spec
SEARCHES = fuzzy_apis(SPEC)

COAUTHORS = """
person_list = searchPerson({args})
person = person_list[0]
coauthors = getCoauthors(person_id=person['person_id'])
final_result = [coauthor['name'] for coauthor in coauthors]
"""

VENUE_OF_TOP_PAPER = """
person_list = searchPerson({args})
person = person_list[0]
pubs = getPersonPubs(person_id=person['person_id'])
publication = getPublication(pub_id=pubs[0]['pub_id'])
final_result = publication['venue']
"""


@pytest.fixture(scope="module")
def sandbox(aminer_db):
    with Sandbox(get_domain("aminer").env_factory, {"db_path": str(aminer_db)}, Limits(cpu_seconds=5, wall_seconds=10)) as box:
        yield box


@pytest.fixture(scope="module")
def corpus(aminer_db):
    with sqlite3.connect(f"{aminer_db.as_uri()}?mode=ro", uri=True) as conn:
        yield conn


def _args(**kwargs: str) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _run(sandbox: Sandbox, template: str, query: str, **kwargs: str) -> tuple[typing.Any, dict]:
    run = sandbox.run(template.format(args=_args(**kwargs)))
    return run, compose_outcome(query, run.ok, run.result, run.error_type, run.trace, SEARCHES)


def _duplicated(corpus) -> tuple[str, list[str]]:
    """A name that several scholars carry, and their organisations."""
    name, orgs = corpus.execute(
        "SELECT p.name, group_concat(o.name, '|') FROM person p JOIN organization o ON o.id = p.org_id "
        "GROUP BY p.name_norm HAVING count(*) > 1 ORDER BY count(DISTINCT p.org_id) DESC, p.name LIMIT 1"
    ).fetchone()
    return name, orgs.split("|")


def _unique_with_pubs(corpus) -> tuple[str, str]:
    """A scholar whose name nobody else carries, with co-authors and publications: (name, org)."""
    return corpus.execute(
        "SELECT p.name, o.name FROM person p JOIN organization o ON o.id = p.org_id "
        "WHERE p.num_pubs > 2 AND (SELECT count(*) FROM person q WHERE q.name_norm = p.name_norm) = 1 "
        "ORDER BY p.num_pubs DESC, p.pid LIMIT 1"
    ).fetchone()


def test_the_trace_carries_each_call_with_a_summary_of_its_result(sandbox, corpus):
    name, _ = _unique_with_pubs(corpus)
    run = sandbox.run(COAUTHORS.format(args=_args(name=name)))
    assert run.ok, run.error
    assert [c["api"] for c in run.trace] == [c["api"] for c in run.calls] == ["searchPerson", "getCoauthors"]
    assert run.calls[0] == {"api": "searchPerson", "args": {"name": name}}  # the call list keeps its shape
    search, coauthors = run.trace
    assert search["args"] == {"name": name} and search["found"] >= 1 and search["items"][0]["name"] == name
    assert {"person_id", "organization", "interests"} <= set(search["items"][0])
    assert coauthors["found"] == len(run.result) and coauthors["args"] == {"person_id": search["items"][0]["person_id"]}


def test_a_name_that_matches_nobody_is_said_to_match_nobody(sandbox):
    query = "Who are the coauthors of Zzyzx Qwerty at Nowhere University?"
    run, made = _run(sandbox, COAUTHORS, query, name="Zzyzx Qwerty", organization="Nowhere University")
    assert not run.ok and run.error_type == "runtime"  # the category stays, for operators
    assert made["kind"] == "not_found" and made["candidates"] is None
    assert made["answer"] == "No scholar named “Zzyzx Qwerty” at “Nowhere University” was found."
    assert made["explanation"] == [
        {"api": "searchPerson", "args": {"name": "Zzyzx Qwerty", "organization": "Nowhere University"}, "found": 0, "took": "nothing (it found nothing)"}
    ]
    Record(request_id="r", query=query, language="en", solution="searchPerson -> getCoauthors", code="", answer=made["answer"],
           timings={}, kind=made["kind"], candidates=made["candidates"], explanation=made["explanation"])

    # the name comes first however the program ordered its arguments
    _, zh = _run(sandbox, COAUTHORS, "Nowhere University的Zzyzx Qwerty有哪些合作者？", organization="Nowhere University", name="Zzyzx Qwerty")
    assert zh["kind"] == "not_found" and zh["language"] == "zh"
    assert zh["answer"] == "没有找到名为“Zzyzx Qwerty”、单位为“Nowhere University”的学者。"


def test_a_name_several_scholars_carry_lists_them_instead_of_picking_one(sandbox, corpus):
    name, orgs = _duplicated(corpus)
    query = f"Who are the coauthors of {name}?"
    run, made = _run(sandbox, COAUTHORS, query, name=name)
    assert run.ok  # the program took the first namesake: the answer must not pass that off as the one
    assert made["kind"] == "ambiguous"
    candidates = made["candidates"]
    assert len(candidates) >= 2 and len(candidates) == len(orgs)
    assert all(c["name"].lower() == name.lower() and c["person_id"] for c in candidates)
    assert sorted(c["organization"] for c in candidates) == sorted(orgs)
    assert made["answer"].startswith(f"Several scholars are named “{name}”: ")
    for c in candidates:
        assert c["organization"] in made["answer"] and c["interests"][0] in made["answer"]
    # each namesake at an organisation of its own comes with the question asked about it alone
    for c in candidates:
        if orgs.count(c["organization"]) == 1:
            assert c["question"] == f"Who are the coauthors of {name} at {c['organization']}?"
            again, chosen = _run(sandbox, COAUTHORS, c["question"], name=name, organization=c["organization"])
            assert chosen["kind"] == "answer" and again.trace[1]["args"] == {"person_id": c["person_id"]}

    _, zh = _run(sandbox, COAUTHORS, f"{name}的合作者有哪些？", name=name)
    assert zh["kind"] == "ambiguous" and zh["answer"].startswith(f"有多位名为“{name}”的学者：")


def test_an_organisation_shared_by_namesakes_leaves_them_ambiguous(sandbox, corpus):
    row = corpus.execute(
        "SELECT p.name, o.name FROM person p JOIN organization o ON o.id = p.org_id "
        "GROUP BY p.name_norm, p.org_id HAVING count(*) > 1 ORDER BY p.name LIMIT 1"
    ).fetchone()
    if row is None:
        pytest.skip("no two namesakes share an organisation in this corpus")
    name, org = row
    _, made = _run(sandbox, COAUTHORS, f"Who are the coauthors of {name} at {org}?", name=name, organization=org)
    assert made["kind"] == "ambiguous" and len(made["candidates"]) >= 2
    assert {c["organization"] for c in made["candidates"]} == {org}
    assert all("question" not in c for c in made["candidates"])  # the organisation does not tell them apart


def test_an_ordinary_answer_explains_each_hop(sandbox, corpus):
    name, org = _unique_with_pubs(corpus)
    query = f"Where was the most cited paper of {name} at {org} published?"
    run, made = _run(sandbox, VENUE_OF_TOP_PAPER, query, name=name, organization=org)
    assert run.ok, run.error
    assert made["kind"] == "answer" and made["candidates"] is None
    assert made["answer"] == compose_answer(query, True, run.result) == f"The answer is {run.result}."
    search, pubs, publication = made["explanation"]
    assert search["api"] == "searchPerson" and search["args"] == {"name": name, "organization": org} and search["found"] >= 1
    assert search["took"] == f"person_id of result 1: {name} ({org})"
    assert pubs["api"] == "getPersonPubs" and pubs["found"] >= 1 and pubs["took"].startswith("pub_id of result 1: ")
    title, year = run.trace[2]["items"][0]["title"], run.trace[2]["items"][0]["year"]
    assert publication == {"api": "getPublication", "args": {"pub_id": run.trace[2]["args"]["pub_id"]}, "found": 1,
                           "took": f"venue of result 1: {title} ({year})"}


def test_calls_of_one_api_in_a_loop_are_one_step(sandbox, corpus):
    name, org = _unique_with_pubs(corpus)
    code = (
        f"people = searchPerson({_args(name=name, organization=org)})\n"
        "pubs = getPersonPubs(person_id=people[0]['person_id'])\n"
        "final_result = [getPublication(pub_id=p['pub_id'])['venue'] for p in pubs[:3]]\n"
    )
    run = sandbox.run(code)
    assert run.ok, run.error
    steps = explain(run.trace, run.result)
    assert [s["api"] for s in steps] == ["searchPerson", "getPersonPubs", "getPublication"]
    assert steps[1]["took"] == f"pub_id of {min(3, run.trace[1]['found'])} results" and steps[2]["calls"] == min(3, run.trace[1]["found"])
    assert steps[2]["took"] == ("venue of each call's result" if steps[2]["calls"] > 1 else steps[2]["took"])
    assert steps[2]["took"].startswith("venue of ")


def test_an_api_that_rejects_a_call_is_said_in_words(sandbox):
    query = "Who are the coauthors of the scholar with id 42?"
    run, made = _run(sandbox, "final_result = getCoauthors(person_id='42')\n{args}", query)
    assert not run.ok and run.error_type == "runtime" and made["kind"] == "answer"
    assert made["answer"] == "I could not find an answer to this question: the program written for it made a call to getCoauthors that the service rejected."
    assert made["explanation"][0]["took"].startswith("the call failed: ApiCallError")


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("error_type", typing.get_args(ErrorType))
def test_each_execution_error_is_a_sentence_a_person_understands(language, error_type):
    query = "Who are the coauthors of Ada Lovelace?" if language == "en" else "Ada Lovelace的合作者有哪些？"
    reason = describe_error(language, error_type)
    assert reason == ERRORS[language][error_type] and "_" not in reason and len(reason) > 10  # words, not a code
    sentence = compose_answer(query, False, None, error_type)
    assert reason in sentence and f"({error_type})" not in sentence and "（" not in sentence
    assert compose_outcome(query, False, None, error_type, [], SEARCHES)["answer"] == sentence
    # every category reads differently
    assert len({describe_error(language, e) for e in typing.get_args(ErrorType)}) == len(typing.get_args(ErrorType))


def test_the_rules_on_a_bare_trace():
    def search(found, items, **args):
        return {"api": "searchPerson", "args": args, "found": found, "items": items}

    a = {"person_id": "a" * 24, "name": "Wei Zhang", "organization": "Tsinghua University", "interests": ["data mining"]}
    b = {"person_id": "b" * 24, "name": "Wei  ZHANG", "organization": "Peking University", "interests": ["robotics"]}
    c = {"person_id": "c" * 24, "name": "Wei Zhang Jr", "organization": "MIT", "interests": []}
    assert analyse([search(2, [a, b], name="wei zhang")], True, 1).kind == "ambiguous"
    assert analyse([search(2, [a, b], name="Wei Zhang", organization="Tsinghua")], True, 1).kind == "answer"
    assert analyse([search(2, [a, b], name="Wei Zhang", interest="robotics")], True, 1).kind == "answer"
    assert analyse([search(2, [a, b], name="Wei Zhang", organization="Fudan")], True, 1).candidates == [a, b]
    assert analyse([search(2, [a, c], name="Wei Zhang")], True, 1).kind == "answer"  # one exact match
    assert analyse([search(2, [a, b], organization="Tsinghua University")], True, 1).kind == "answer"  # not a name search
    # a search that found nothing, in a run that still answered, leaves the answer standing
    assert analyse([search(1, [a], name="Wei Zhang"), search(0, [], name="Nobody")], True, ["x"]).kind == "answer"
    assert analyse([search(1, [a], name="Wei Zhang"), search(0, [], name="Nobody")], True, []).kind == "not_found"
    assert analyse([search(0, [], name="Nobody")], False, None, fuzzy={"searchPublication"}).kind == "answer"


def test_the_answer_stage_explains_an_executor_outcome(sandbox):
    """What Ingress.ask hands the answer deployment (the executor's dict less stdout) and what it
    makes of it, as a Record takes it."""
    import asyncio

    from serving.answer import AnswerComposer

    query = "Who are the coauthors of Zzyzx Qwerty at Nowhere University?"
    outcome = sandbox.run(COAUTHORS.format(args=_args(name="Zzyzx Qwerty", organization="Nowhere University"))).to_dict()
    ran = {k: outcome.get(k) for k in ("ok", "result", "error_type", "trace")}
    made = asyncio.run(AnswerComposer.func_or_class({}).explain(query, ran, SEARCHES))  # no scope: nothing is refused here
    record = Record(request_id="r", query=query, language=made["language"], solution="searchPerson -> getCoauthors", code="",
                    result=outcome["result"], ok=outcome["ok"], error=outcome["error"], error_type=outcome["error_type"],
                    answer=made["answer"], timings={}, kind=made["kind"], candidates=made["candidates"], explanation=made["explanation"])
    dumped = record.model_dump()
    assert dumped["kind"] == "not_found" and dumped["error_type"] == "runtime" and dumped["explanation"][0]["found"] == 0
    assert "Zzyzx Qwerty" in dumped["answer"] and "runtime" not in dumped["answer"]


def test_the_trace_stays_small_for_a_program_that_calls_in_a_loop(sandbox, corpus):
    from soay.sandbox.server import TRACE_DETAILED_CALLS, TRACE_ITEMS

    name, org = _unique_with_pubs(corpus)
    code = (
        f"people = searchPerson({_args(name=name, organization=org)})\n"
        "final_result = [len(getPersonInterest(person_id=people[0]['person_id'])) for _ in range(40)]\n"
        "final_result = len(searchPerson(interest='learning')) + sum(final_result)\n"
    )
    run = sandbox.run(code)
    assert run.ok, run.error
    assert len(run.trace) == len(run.calls) == 42
    assert all("items" in c for c in run.trace[:TRACE_DETAILED_CALLS]) and not any("items" in c for c in run.trace[TRACE_DETAILED_CALLS:])
    assert all(len(c.get("items", [])) <= TRACE_ITEMS for c in run.trace) and run.trace[-1]["found"] >= 1
    steps = explain(run.trace, run.result)
    assert [s["api"] for s in steps] == ["searchPerson", "getPersonInterest", "searchPerson"] and steps[1]["calls"] == 40


def test_the_request_log_says_what_kind_of_answer_it_was():
    from soay.logs import RequestLog

    logged = RequestLog(request_id="r", endpoint="/v1/ask", query="q", status="ok", kind="ambiguous")
    assert RequestLog.decode(logged.encode()).kind == "ambiguous"
    # records written before the field existed still read, as answers
    assert RequestLog.decode(b'{"request_id":"r","endpoint":"/v1/ask","query":"q","status":"ok"}').kind == "answer"


# --- never an answer about the wrong person ------------------------------------------------------

CITATIONS = """
person_list = searchPerson({args})
final_result = person_list[0]['num_citation']
"""


def _person(name: str, org: str, citations: int, *interests: str, pid: str = "") -> dict:
    return {"person_id": pid or (name + org).encode().hex()[:24].ljust(24, "0"), "name": name, "organization": org,
            "interests": list(interests), "num_citation": citations, "num_pubs": 10}


def _search(*items: dict, api: str = "searchPerson", **args: str) -> dict:
    return {"api": api, "args": args, "found": len(items), "items": list(items)}


def test_a_search_that_found_someone_else_names_the_closest_never_their_facts():
    """The issue's case: "Kaiming He" searched, "Yang He" ranked first, 9051 (Yang He's
    citations) answered as Kaiming He's. The answer says nobody by that name was found and names
    the closest, each with the question asked about it."""
    yang = _person("Yang He", "Zhejiang University", 9051, "pruning", "model compression")
    xin = _person("Xin He", "Peking University", 7307, "graph learning")
    trace = [_search(yang, xin, name="Kaiming He")]
    outcome = analyse(trace, True, 9051)
    assert outcome.kind == "not_found" and outcome.closest and outcome.candidates == [yang, xin]
    assert outcome.api == "searchPerson" and outcome.args == {"name": "Kaiming He"}
    assert outcome.to_dict()["closest"] is True

    made = compose_outcome("How many citations does Kaiming He have?", True, 9051, None, trace, SEARCHES)
    assert made["kind"] == "not_found"
    assert made["answer"] == ("No scholar named “Kaiming He” was found. The closest are: "
                              "Yang He (Zhejiang University; pruning, model compression), Xin He (Peking University; graph learning).")
    assert [c["question"] for c in made["candidates"]] == ["How many citations does Yang He have?", "How many citations does Xin He have?"]
    zh = compose_outcome("Kaiming He的引用数是多少？", True, 9051, None, trace, SEARCHES)
    assert zh["answer"] == ("没有找到名为“Kaiming He”的学者。最接近的是："
                            "Yang He（Zhejiang University；pruning、model compression）、Xin He（Peking University；graph learning）。")
    assert zh["candidates"][0]["question"] == "Yang He的引用数是多少？"
    for answer in (made["answer"], zh["answer"]):
        assert "9051" not in answer and "7307" not in answer

    # the same search's result when it is the one asked for stands
    kaiming = _person("Kaiming He", "Meta AI", 600000, "computer vision")
    assert analyse([_search(kaiming, yang, name="Kaiming He")], True, 600000).kind == "answer"
    # and an email of someone else is not passed off either ("Peter K.L. Wong" -> peter.miller@)
    miller = _person("Peter Miller", "University of Toronto", 10, "databases")
    assert analyse([_search(miller, name="Peter K.L. Wong")], True, "peter.miller@example.org").kind == "not_found"


@pytest.mark.parametrize(("searched", "found"), [
    ("Peter K.L. Wong", "Peter K. L. Wong"),
    ("Peter K.L. Wong", "Wong, Peter"),  # middle initials the record leaves out
    ("P. Wong", "Peter Wong"),
    ("Zhang Wei", "Wei Zhang"),
    ("WANG Lei", "Lei Wang"),
    ("José Núñez", "Jose Nunez"),
    ("Jose Nunez", "José Núñez"),
    ("Soo-jin Kim", "Soojin Kim"),
    ("Soo Jin Kim", "Soo-jin Kim"),
    ("Soojin Kim", "Soo Jin Kim"),
    ("Tang", "Jie Tang"),  # a surname alone
])
def test_a_name_written_another_way_is_still_the_one_asked_for(searched, found):
    hit = _person(found, "Tsinghua University", 42, "data mining")
    trace = [_search(hit, name=searched), {"api": "getPersonBasicInfo", "args": {"person_id": hit["person_id"]}, "found": 1, "items": [{"email": "x@y"}]}]
    assert analyse(trace, True, "x@y").kind == "answer"


@pytest.mark.parametrize(("searched", "found"), [
    ("Kaiming He", "Yang He"),
    ("Peter K.L. Wong", "Peter Miller"),
    ("K. He", "Yang He"),  # an initial that is not the found name's
    ("Yang He", "Yanghe Li"),  # separate words are not one joined word
    ("Jie Tang", "Tang"),  # a fuller name than the one found
    ("Wei Zhang", "Wei Zhao"),
])
def test_a_different_name_is_not_the_one_asked_for(searched, found):
    hit = _person(found, "Tsinghua University", 42, "data mining")
    outcome = analyse([_search(hit, name=searched)], True, 42)
    assert outcome.kind == "not_found" and outcome.closest and outcome.candidates == [hit]


def test_the_organisation_asked_for_must_be_the_found_scholars():
    stanford = _person("Tom Mitchell", "Stanford University", 5000, "machine learning")
    trace = [_search(stanford, name="Tom Mitchell", organization="CMU")]
    made = compose_outcome("How many citations does Tom Mitchell at CMU have?", True, 5000, None, trace, SEARCHES)
    assert made["kind"] == "not_found" and "5000" not in made["answer"]
    assert made["answer"] == ("No scholar named “Tom Mitchell” at “CMU” was found. "
                              "The closest are: Tom Mitchell (Stanford University; machine learning).")
    assert made["candidates"][0]["question"] == "How many citations does Tom Mitchell at Stanford University have?"

    # an organisation written short or long is the same one
    for asked, theirs in [("CMU", "Carnegie Mellon University"), ("Carnegie Mellon University", "CMU"), ("MIT", "Massachusetts Institute of Technology"),
                          ("ETH", "ETH Zurich"), ("ETHZ", "ETH Zurich"), ("UC Berkeley", "University of California, Berkeley"),
                          ("Carnegie Mellon", "Carnegie Mellon University")]:
        hit = _person("Tom Mitchell", theirs, 5000, "machine learning")
        assert analyse([_search(hit, name="Tom Mitchell", organization=asked)], True, 5000).kind == "answer", (asked, theirs)
    # one acronym is not enough for two long names
    tianjin = _person("Tom Mitchell", "Tianjin University", 5000)
    assert analyse([_search(tianjin, name="Tom Mitchell", organization="Tsinghua University")], True, 5000).kind == "not_found"
    # a search by organisation alone (no name) is not judged: its results are a group, not a person
    assert analyse([_search(stanford, organization="CMU")], True, 5000).kind == "answer"


def test_namesakes_none_of_whom_is_at_the_asked_organisation_are_said_so():
    """"Research interests of Anna Schmidt at ETH Zurich" with two Anna Schmidts, at MIT and KTH:
    the clarification must not call them scholars at ETH Zurich, and each offered question asks
    about one of them where they are."""
    mit = _person("Anna Schmidt", "MIT", 300, "databases")
    kth = _person("Anna Schmidt", "KTH Royal Institute of Technology", 120, "robotics")
    trace = [_search(mit, kth, name="Anna Schmidt", organization="ETH Zurich")]
    made = compose_outcome("Research interests of Anna Schmidt at ETH Zurich", True, ["databases"], None, trace, SEARCHES)
    assert made["kind"] == "ambiguous"
    assert made["answer"].startswith("Several scholars are named “Anna Schmidt”: Anna Schmidt (MIT; databases), ")
    assert "None of them is at “ETH Zurich”." in made["answer"]
    assert [c["question"] for c in made["candidates"]] == [
        "Research interests of Anna Schmidt at MIT", "Research interests of Anna Schmidt at KTH Royal Institute of Technology"]
    zh = compose_outcome("ETH Zurich的Anna Schmidt的研究兴趣是什么？", True, ["databases"], None, trace, SEARCHES)
    assert zh["answer"].startswith("有多位名为“Anna Schmidt”的学者：") and "其中没有单位为“ETH Zurich”的。" in zh["answer"]
    # an organisation both namesakes share is said as theirs, as before
    both = compose_outcome("Research interests of Anna Schmidt at MIT", True, ["databases"], None,
                           [_search(mit, _person("Anna Schmidt", "MIT", 5, "vision"), name="Anna Schmidt", organization="MIT")], SEARCHES)
    assert both["answer"].startswith("Several scholars are named “Anna Schmidt” at “MIT”: ") and "None of them" not in both["answer"]


def test_namesakes_stay_ambiguous_and_a_result_the_program_picked_itself_stands():
    a = _person("Yang He", "Zhejiang University", 9051, "pruning")
    b = _person("Yang He", "Peking University", 120, "robotics")
    assert analyse([_search(a, b, name="Yang He")], True, 9051).kind == "ambiguous"
    assert analyse([_search(a, b, name="Yang He", organization="Fudan University")], True, 9051).kind == "ambiguous"
    # the program looked past the first result, to the one with the name: its answer stands
    kaiming = _person("Kaiming He", "Meta AI", 600000, "computer vision")
    trace = [_search(a, kaiming, name="Kaiming He"),
             {"api": "getPersonBasicInfo", "args": {"person_id": kaiming["person_id"]}, "found": 1, "items": [{"email": "k@meta"}]}]
    assert analyse(trace, True, "k@meta").kind == "answer"
    # a name search that found nothing is still a plain not-found, without candidates
    assert analyse([_search(name="Kaiming He")], False, None).candidates is None


def test_titles_and_names_in_other_scripts():
    paper = {"pub_id": "p" * 24, "title": "Graph Attention Networks", "year": 2018}
    # keywords are not a title: a few words judge nothing
    assert analyse([_search(paper, api="searchPublication", publication_info="attention graphs")], True, 2018).kind == "answer"
    assert analyse([_search(paper, api="searchPublication", publication_info="Graph Attention Networks for node classification")], True, 2018).kind == "answer"
    trace = [_search(paper, api="searchPublication", publication_info="Deep Residual Learning for Image Recognition")]
    outcome = analyse(trace, True, 2018)
    assert outcome.kind == "not_found" and outcome.closest and outcome.candidates == [paper]
    made = compose_outcome("Which year was Deep Residual Learning for Image Recognition published?", True, 2018, None, trace, SEARCHES)
    assert made["answer"] == ("No publication matching “Deep Residual Learning for Image Recognition” was found. "
                              "The closest are: Graph Attention Networks (2018).")
    assert made["candidates"][0]["question"] == "Which year was Graph Attention Networks published?"
    # a name in Chinese characters is judged against a field in them, else by its pinyin
    yang = _person("Yang He", "Zhejiang University", 9051)
    assert analyse([_search(yang, name="何恺明")], True, 9051).kind == "not_found"  # "Kaiming He" is not Yang He
    assert analyse([_search(_person("Kaiming He", "Zhejiang University", 9051), name="何恺明")], True, 9051).kind == "answer"
    assert analyse([_search({**yang, "name_zh": "何洋"}, name="何恺明")], True, 9051).kind == "not_found"
    assert analyse([_search({**yang, "name_zh": "何恺明"}, name="何恺明")], True, 9051).kind == "answer"


def _surname(corpus) -> str:
    """The surname the most scholars of the corpus share."""
    names = [n for (n,) in corpus.execute("SELECT name FROM person")]
    surnames = [n.split()[-1] for n in names]
    return max(sorted(set(surnames)), key=surnames.count)


def test_a_name_nobody_carries_but_the_search_found_others_for_in_the_corpus(sandbox, corpus):
    """The real search ranks scholars of the same surname first for a given name nobody has: the
    program's `person_list[0]` is one of them, and its number is never the answer."""
    surname = _surname(corpus)
    searched = f"Zzyzx {surname}"
    run, made = _run(sandbox, CITATIONS, f"How many citations does {searched} have?", name=searched)
    assert run.ok and run.trace[0]["found"] >= 1 and run.trace[0]["items"][0]["name"] != searched
    assert made["kind"] == "not_found" and str(run.result) not in made["answer"]
    assert made["answer"].startswith(f"No scholar named “{searched}” was found. The closest are: {run.trace[0]['items'][0]['name']} (")
    assert made["candidates"] and all(c["name"].split()[-1] == surname for c in made["candidates"])
    _, zh = _run(sandbox, CITATIONS, f"{searched}的引用数是多少？", name=searched)
    assert zh["kind"] == "not_found" and zh["answer"].startswith(f"没有找到名为“{searched}”的学者。最接近的是：") and str(run.result) not in zh["answer"]

    # the surname alone is carried by every scholar found: the answer stands
    run, alone = _run(sandbox, CITATIONS, f"How many citations does {surname} have?", name=surname)
    assert run.trace[0]["found"] >= 2 and alone["kind"] == "answer" and alone["answer"] == f"The answer is {run.result}."


def test_an_organisation_the_found_scholar_is_not_at_in_the_corpus(sandbox, corpus):
    row = corpus.execute(
        "SELECT p.name FROM person p JOIN organization o ON o.id = p.org_id WHERE o.name = 'Carnegie Mellon University' "
        "AND (SELECT count(*) FROM person q WHERE q.name_norm = p.name_norm) = 1 ORDER BY p.pid LIMIT 1"
    ).fetchone()
    if row is None:
        pytest.skip("nobody at Carnegie Mellon University in this corpus")
    (name,) = row
    run, made = _run(sandbox, CITATIONS, f"How many citations does {name} at CMU have?", name=name, organization="CMU")
    assert made["kind"] == "answer" and made["answer"] == f"The answer is {run.result}."
    query = f"How many citations does {name} at Stanford University have?"
    run, made = _run(sandbox, CITATIONS, query, name=name, organization="Stanford University")
    assert run.ok and run.trace[0]["items"][0]["organization"] == "Carnegie Mellon University"
    assert made["kind"] == "not_found" and str(run.result) not in made["answer"]
    assert made["answer"].startswith(f"No scholar named “{name}” at “Stanford University” was found. The closest are: {name} (Carnegie Mellon University")
    assert made["candidates"][0]["question"] == f"How many citations does {name} at Carnegie Mellon University have?"


def test_a_name_in_chinese_characters_is_judged_against_a_romanised_record_by_its_pinyin():
    """"清华大学的王伟…" searches in either script; the record found says "Wei Wang" only. A
    namesake by pinyin is the person asked; anyone else is a wrong entity (never answered about)."""
    from soay.outcomes import romanised_names

    assert "Mingyuan Ouyang" in romanised_names("欧阳明远") and romanised_names("王伟") == ["Wei Wang"]
    searched = {"api": "searchPerson", "args": {"name": "王伟", "organization": "清华大学"}, "found": 2,
                "items": [{"person_id": "a", "name": "Wei Wang", "organization": "Tsinghua University"}]}
    assert find_wrong_entity([searched]) is None
    other = {**searched, "items": [{"person_id": "b", "name": "Yang He", "organization": "Tsinghua University"}]}
    assert find_wrong_entity([other]) is other


def test_an_organisation_in_chinese_is_judged_against_the_records_chinese_affiliation():
    """清华大学的王伟 answered with the facts of a Wei Wang at Fudan was seen served: the search
    ranks the name first. A search record carries organization_zh; its characters decide, short
    forms included (北航 of 北京航空航天大学)."""
    fudan = {"person_id": "a", "name": "Wei Wang", "name_zh": "王伟", "organization": "Fudan University", "organization_zh": "复旦大学"}
    call = {"api": "searchPerson", "args": {"name": "王伟", "organization": "清华大学"}, "found": 1, "items": [fudan]}
    assert find_wrong_entity([call]) is call
    tsinghua = {**fudan, "organization": "Tsinghua University", "organization_zh": "清华大学"}
    assert find_wrong_entity([{**call, "items": [tsinghua]}]) is None
    beihang = {**fudan, "organization": "Beihang University", "organization_zh": "北京航空航天大学"}
    assert find_wrong_entity([{**call, "args": {"name": "王伟", "organization": "北航"}, "items": [beihang]}]) is None
    unrendered = {**fudan, "organization_zh": ""}  # no Chinese affiliation to judge by
    assert find_wrong_entity([{**call, "items": [unrendered]}]) is None


@pytest.mark.parametrize(("query", "result", "expected"), [
    ("Who at Spotify has worked with Maria Lopez?", [], "None: the program ran and found no item that matches the question."),
    ("Maria Lopez在Spotify的合作者有哪些？", [], "没有：程序已运行，但没有符合问题条件的结果。"),
    ("What is the email of Maria Lopez?", None, "I could not find an answer to this question."),
    ("What is the email of Maria Lopez?", "", "I could not find an answer to this question."),
])
def test_a_filter_that_keeps_nothing_is_an_answer_and_no_value_is_not(query, result, expected):
    """"Who at O has worked with X?" is answered by an empty list when none of X's co-authors is
    at O: that is the answer, and the sentence says so instead of calling it a failure."""
    assert compose_answer(query, True, result) == expected
