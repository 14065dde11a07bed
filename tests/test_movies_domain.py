"""The movie domain goes through the same pipeline as AMiner: spec, library, intents, code, answers.

A real corpus is built into a temporary directory; nothing here is mocked. The generated code is
run with plain `exec` against the environment's API functions (the sandbox has its own tests), and
must reproduce the ground truth for the large majority of instances of every combination — the
few misses are the ambiguous names and titles the corpus contains on purpose.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from soay.answers import answers_match
from soay.code_builder import build_code
from soay.domains import get_domain
from soay.environment.base import ApiCallError, Environment
from soay.environment.movies import MovieEnvironment, open_environment
from soay.environment.movies_corpus import build_movie_corpus
from soay.environment.text import normalize
from soay.ground_truth import Unanswerable, ground_truth
from soay.solutions import SolutionLibrary
from soay.spec import Attribute, load_spec

DOMAIN = get_domain("movies")
INSTANCES = 20
MIN_MATCH = 0.8
_PY_TYPES = {"str": str, "int": int, "float": float}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("movies") / "movies.sqlite"
    build_movie_corpus(path, size=2000, seed=0)
    return path


@pytest.fixture(scope="module")
def env(corpus: Path) -> Iterator[MovieEnvironment]:
    environment = open_environment(str(corpus))
    yield environment
    environment.close()


# ------------------------------------------------------------------ spec, library, intents


def test_spec_library_has_multi_hop_solutions() -> None:
    library = SolutionLibrary(load_spec("movies"))
    solutions = {str(s) for s in library}
    assert library.graph.heads == ["searchMovie", "searchPeople"]
    assert sum(s.hops == 2 for s in library) >= 2
    assert {
        "searchMovie -> getMovie",
        "searchPeople -> getFilmography",
        "searchPeople -> getPersonProfile",
        "searchMovie -> getMovie -> getPersonProfile",
        "searchMovie -> getMovie -> getFilmography",
        "searchPeople -> getFilmography -> getMovie",
    } <= solutions
    # the concise rule drops the detours that add nothing
    assert "searchPeople -> getPersonProfile -> getFilmography" not in solutions


def test_intents_load_and_cover_the_library() -> None:
    combinations = DOMAIN.combinations
    assert len(combinations) >= 8
    assert combinations.solutions_used == {str(s) for s in DOMAIN.library}
    kinds = {c.kind for c in combinations}
    assert {"lookup", "branch", "loop"} <= kinds
    for c in combinations:
        assert len(c.templates("en")) >= 3 and len(c.templates("zh")) >= 2, c.id


# --------------------------------------------------------------------------- corpus


def test_corpus_is_deterministic_and_written_atomically(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "c.sqlite"
    report = build_movie_corpus(a, size=300, seed=7)
    build_movie_corpus(b, size=300, seed=7)
    build_movie_corpus(c, size=300, seed=8)
    assert report["movies"] == 300 and report["people"] == 600
    assert _dump(a) == _dump(b)
    assert _dump(a) != _dump(c)
    build_movie_corpus(a, size=300, seed=8)  # rebuilding replaces the file in place
    assert _dump(a) == _dump(c)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite", "b.sqlite", "c.sqlite"]


def test_corpus_has_long_tail_and_ambiguity(corpus: Path) -> None:
    conn = sqlite3.connect(corpus)
    credits = [n for (n,) in conn.execute("SELECT count(*) FROM credit GROUP BY person ORDER BY 1 DESC")]
    assert len(credits) == conn.execute("SELECT count(*) FROM person").fetchone()[0]  # everyone has a credit
    assert credits[0] >= 30 and credits[len(credits) // 2] <= 2
    shared_names = conn.execute("SELECT count(*) FROM (SELECT name FROM person GROUP BY name HAVING count(*) > 1)")
    assert shared_names.fetchone()[0] > 0
    remakes = conn.execute(
        "SELECT count(*) FROM (SELECT title FROM movie GROUP BY title HAVING count(DISTINCT year) > 1)"
    ).fetchone()[0]
    assert remakes > 0
    ids = [i for (i,) in conn.execute("SELECT movie_id FROM movie UNION ALL SELECT person_id FROM person")]
    assert all(re.fullmatch("[0-9a-f]{24}", i) for i in ids) and len(set(ids)) == len(ids)
    conn.close()


def test_year_tells_remakes_apart(env: MovieEnvironment, corpus: Path) -> None:
    conn = sqlite3.connect(corpus)
    rows = conn.execute(
        "SELECT movie_id, title, year FROM movie WHERE title IN "
        "(SELECT title FROM movie GROUP BY title HAVING count(DISTINCT year) > 1)"
    ).fetchall()
    conn.close()
    for movie_id, title, year in rows:
        assert env.searchMovie(title, str(year))[0]["movie_id"] == movie_id
        assert env.searchMovie(title, year)[0]["movie_id"] == movie_id


def test_search_ignores_case_accents_and_punctuation(env: MovieEnvironment, corpus: Path) -> None:
    conn = sqlite3.connect(corpus)
    accented = conn.execute("SELECT person_id, name FROM person WHERE name LIKE '%é%' OR name LIKE '%ë%'").fetchall()
    conn.close()
    assert accented
    for person_id, name in accented[:20]:
        plain = normalize(name, cjk_words=False)
        assert person_id in [r["person_id"] for r in env.searchPeople(plain.upper())]


# ---------------------------------------------------------------------- environment


def test_environment_follows_the_protocol(env: MovieEnvironment) -> None:
    assert isinstance(env, Environment)
    assert set(env.api_functions()) == set(env.spec.api_names)
    with pytest.raises(sqlite3.OperationalError):
        env.conn.execute("DELETE FROM movie")


def test_every_api_returns_exactly_the_spec_attributes(env: MovieEnvironment) -> None:
    rng = random.Random(3)
    for _ in range(25):
        movie = env.head_record("searchMovie", env.sample_entity("movie", rng))
        person = env.head_record("searchPeople", env.sample_entity("person", rng))
        results = {
            "searchMovie": env.call("searchMovie", title=movie["title"], year=str(movie["year"])),
            "searchPeople": env.call("searchPeople", name=person["name"]),
            "getMovie": env.call("getMovie", movie_id=movie["movie_id"]),
            "getPersonProfile": env.call("getPersonProfile", person_id=person["person_id"]),
            "getFilmography": env.call("getFilmography", person_id=person["person_id"]),
        }
        for name, result in results.items():
            api = env.spec.api(name)
            assert json.loads(json.dumps(result)) == result
            records = [result] if api.returns == "record" else result
            assert records, name
            for record in records:
                _check_record(name, record, api.attributes)
        assert results["searchMovie"][0] == movie
        assert [r["rating"] for r in results["getFilmography"]] == sorted(
            (r["rating"] for r in results["getFilmography"]), reverse=True
        )


def _check_record(api: str, record: dict, attributes: tuple[Attribute, ...]) -> None:
    assert set(record) == {a.name for a in attributes}, api
    for a in attributes:
        value = record[a.name]
        if a.type == "records":
            assert isinstance(value, list), (api, a.name)
            for sub in value:
                _check_record(api, sub, a.attributes)
        else:
            expected = str if a.ref else _PY_TYPES[a.type]
            assert isinstance(value, expected) and not isinstance(value, bool), (api, a.name, value)


def test_head_inputs_are_what_a_person_types(env: MovieEnvironment) -> None:
    rng = random.Random(5)
    movie_id = env.sample_entity("movie", rng)
    inputs = env.head_inputs("searchMovie", movie_id)
    assert set(inputs) == {"title", "year"} and inputs["year"].isdigit()
    assert env.searchMovie(**inputs)[0]["movie_id"] == movie_id
    person_id = env.sample_entity("person", rng)
    assert set(env.head_inputs("searchPeople", person_id)) == {"name"}
    with pytest.raises(ValueError):
        env.head_inputs("getMovie", movie_id)


@pytest.mark.parametrize(
    ("api", "kwargs", "message"),
    [
        ("searchFilm", {"title": "x"}, "unknown API"),
        ("getMovie", {}, r"missing required argument\(s\) movie_id"),
        ("getMovie", {"movie_id": "tt0133093"}, "24-character hex id"),
        ("getMovie", {"movie_id": "0" * 24}, "no movie with movie_id"),
        ("getFilmography", {"person_id": 42}, "24-character hex id"),
        ("searchMovie", {"title": "Heat", "year": "nineteen"}, "year must be a year"),
        ("searchMovie", {"title": "?!"}, "letters or digits"),
        ("searchPeople", {"name": ["a"]}, "must be a string"),
        ("searchPeople", {"name": "Ann", "country": "France"}, r"unexpected argument\(s\) country"),
    ],
)
def test_bad_calls_raise_clear_errors(env: MovieEnvironment, api: str, kwargs: dict, message: str) -> None:
    with pytest.raises(ApiCallError, match=message):
        env.call(api, **kwargs)


def test_open_environment_rejects_missing_or_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_environment(str(tmp_path / "absent.sqlite"))
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('domain', 'aminer')")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match="not a movie corpus"):
        open_environment(str(other))
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match="not a movie corpus"):
        open_environment(str(garbage))


# ------------------------------------------------------------- combinations end to end


@pytest.mark.parametrize("combination_id", [c.id for c in DOMAIN.combinations])
def test_generated_code_reproduces_ground_truth(env: MovieEnvironment, combination_id: str) -> None:
    combinations = DOMAIN.combinations
    c = combinations.by_id[combination_id]
    solution = combinations.solution(c)
    entity = DOMAIN.spec.api(solution.head).entity
    rng = random.Random(f"test/{combination_id}")
    matched = tried = 0
    for _ in range(2000):
        if tried == INSTANCES:
            break
        entity_id = env.sample_entity(entity, rng)
        head_values = env.head_inputs(solution.head, entity_id)
        try:
            answer, values = ground_truth(env, c, solution, entity_id, {k: head_values[k] for k in c.inputs}, rng)
        except Unanswerable:
            continue
        namespace: dict = dict(env.api_functions())
        exec(build_code(DOMAIN.spec, c, solution, values), namespace)  # noqa: S102 - our own template code
        tried += 1
        matched += answers_match(answer, namespace["final_result"])
    assert tried == INSTANCES, f"{combination_id}: only {tried} answerable instances"
    assert matched >= MIN_MATCH * tried, f"{combination_id}: {matched}/{tried} reproduced the ground truth"


def _dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
