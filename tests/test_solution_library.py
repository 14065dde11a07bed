"""API graph (Def. 1), solution library (Def. 2 + concise rule) and combination validation."""

from pathlib import Path

import pytest
import yaml

from soay.combinations import load_combinations
from soay.graph import ApiGraph
from soay.solutions import SolutionLibrary, parse_solution
from soay.spec import ApiSpec, load_spec


@pytest.fixture(scope="module")
def spec() -> ApiSpec:
    return load_spec("aminer")


@pytest.fixture(scope="module")
def library(spec) -> SolutionLibrary:
    return SolutionLibrary(spec, max_hops=3)


def test_spec_has_the_seven_aminer_apis_with_rich_attributes(spec):
    assert set(spec.api_names) == {
        "searchPerson", "searchPublication", "getCoauthors", "getPersonInterest",
        "getPublication", "getPersonBasicInfo", "getPersonPubs",
    }
    info = set(spec.api("getPersonBasicInfo").attribute_names)
    assert {"gender", "position", "bio", "education_experience", "email", "num_citation"} <= info
    pub = set(spec.api("getPublication").attribute_names)
    assert {"title", "year", "abstract", "authors", "num_citation", "venue", "pdf_url"} <= pub
    assert spec.api("searchPerson").kind == "fuzzy" and spec.api("getCoauthors").kind == "exact"


def test_graph_edges_follow_definition_1(spec):
    g = ApiGraph(spec)
    assert g.heads == ["searchPerson", "searchPublication"]
    assert g.coupling("searchPerson", "getCoauthors").path == ("person_id",)
    authors = g.coupling("getPublication", "getPersonBasicInfo")
    assert authors.path == ("authors", "person_id") and authors.relation == "author"
    assert g.coupling("getPersonPubs", "getPublication").param == "pub_id"
    # free-text outputs (a name) never couple into a fuzzy search: heads keep zero in-degree
    assert all(c.dst not in g.heads for cs in g.edges.values() for c in cs)
    with pytest.raises(KeyError):
        g.coupling("getPersonInterest", "getCoauthors")


def test_library_is_concise_and_valid(library):
    names = [str(s) for s in library]
    assert len(names) >= 15 and len(set(names)) == len(names)
    assert all(s.head in library.graph.heads for s in library)
    assert all(s.hops <= 3 for s in library)
    assert "searchPublication -> getPublication -> getPersonBasicInfo" in names
    rejected = {str(s): str(k) for s, k in library.rejected}
    # a detour through a profile that adds nothing is pruned in favour of the direct path
    assert rejected["searchPerson -> getPersonBasicInfo -> getCoauthors"] == "searchPerson -> getCoauthors"
    assert rejected["searchPublication -> getPublication -> getPublication"] == "searchPublication -> getPublication"
    # but a hop that brings new attributes about a related entity is kept
    assert "searchPerson -> getCoauthors -> getPersonBasicInfo" in names


def test_max_hops_bounds_the_library(spec):
    assert {s.hops for s in SolutionLibrary(spec, max_hops=2)} == {1, 2}
    with pytest.raises(ValueError):
        SolutionLibrary(spec, max_hops=0)


def test_parse_solution_accepts_arrows_and_rejects_garbage():
    assert parse_solution("searchPerson→getCoauthors") == ("searchPerson", "getCoauthors")
    assert parse_solution(" a ->b ") == ("a", "b")
    for bad in ("", "a ->", "-> b"):
        with pytest.raises(ValueError):
            parse_solution(bad)


def test_aminer_combinations_cover_the_library(spec, library):
    combos = load_combinations(spec, library)
    assert len(combos) >= 40
    assert combos.solutions_used == {str(s) for s in library}
    kinds = {c.kind for c in combos}
    assert {"lookup", "branch", "loop"} <= kinds
    for cid in ("most_cited_coauthor", "collaborators_of_collaborators", "coauthors_in_field"):
        assert combos.by_id[cid].kind == "loop"
    assert all(c.templates("zh") and len(c.templates("en")) >= 3 for c in combos)


def _write_intents(tmp_path: Path, combination: dict) -> Path:
    path = tmp_path / "aminer.yaml"
    path.write_text(yaml.safe_dump({"domain": "aminer", "combinations": [combination]}), encoding="utf-8")
    return path


GOOD = {
    "id": "x",
    "solution": "searchPerson -> getPersonBasicInfo",
    "inputs": ["name", "organization"],
    "answer": {"op": "value", "attr": "email"},
    "phrasings": {"en": ["Email of {name} at {organization}?", "Mail of {name} ({organization})?"], "zh": ["{organization}的{name}的邮箱？"]},
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"solution": "searchPerson -> getPublication"}, "not in the solution library"),
        ({"inputs": ["nickname"]}, "no parameter"),
        ({"answer": {"op": "value", "attr": "shoe_size"}}, "not returned"),
        ({"phrasings": {"en": ["Email of {name}?", "x {name} {organization}"], "zh": ["{name}"]}}, "uses"),
        ({"phrasings": {"en": ["{name} {organization}", "{name} {organization}"]}}, "Chinese"),
        ({"answer": {"op": "value", "attr": "num_citation"}}, "not concise"),
        ({"pick": {0: "each"}, "answer": {"op": "count"}}, "not defined for a loop"),
    ],
)
def test_bad_combinations_are_rejected_with_a_reason(tmp_path, spec, library, change, message):
    with pytest.raises(ValueError, match=message):
        load_combinations(spec, library, _write_intents(tmp_path, GOOD | change))


def test_good_combination_loads(tmp_path, spec, library):
    combos = load_combinations(spec, library, _write_intents(tmp_path, GOOD))
    assert combos.by_id["x"].kind == "lookup"


@pytest.mark.parametrize(
    "informal, message",
    [({"y": {"en": ["mail {name} {organization}"]}}, "no combination y"),
     ({"x": {"en": ["mail of {name} pls"]}}, "uses"),
     ({"x": {"fr": ["courriel de {name} à {organization}"]}}, "unsupported language")],
)
def test_informal_phrasings_are_checked_like_the_written_ones(tmp_path, spec, library, informal, message):
    (tmp_path / "aminer.informal.yaml").write_text(yaml.safe_dump(informal, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_combinations(spec, library, _write_intents(tmp_path, GOOD))


def test_informal_phrasings_load_beside_the_written_ones(tmp_path, spec, library):
    (tmp_path / "aminer.informal.yaml").write_text(yaml.safe_dump({"x": {"en": ["mail of {name} @ {organization} pls"]}}), encoding="utf-8")
    combo = load_combinations(spec, library, _write_intents(tmp_path, GOOD)).by_id["x"]
    assert combo.informal == {"en": ("mail of {name} @ {organization} pls",)}
    assert combo.phrasings == {k: tuple(v) for k, v in GOOD["phrasings"].items()}
