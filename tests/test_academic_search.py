"""The fast search paths of the academic environment (academic_search) answer exactly what the
plain FTS5 queries they replace answer: compared call by call on a small corpus."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from soay.environment import academic_pools
from soay.environment.academic import (
    NAME_CANDIDATES,
    AcademicEnvironment,
    _fts_query,
    _interest_scorer,
    _OrgScorer,
)
from soay.environment.academic_corpus import build_academic_corpus
from soay.environment.text import normalize

N_PERSONS = 1_500


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("search") / "academic.sqlite"
    build_academic_corpus(path, n_persons=N_PERSONS, seed=4)
    return path


@pytest.fixture(scope="module")
def env(corpus: Path) -> AcademicEnvironment:
    environment = AcademicEnvironment(corpus)
    assert environment._titles is not None and environment._name_terms is not None
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def plain_env(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> AcademicEnvironment:
    """The same corpus without the derived tables: the environment searches with FTS5 alone."""
    path = tmp_path_factory.mktemp("plain") / "academic.sqlite"
    shutil.copy(corpus, path)
    with sqlite3.connect(path) as conn:
        for table in ("person_term", "publication_term", "publication_posting"):
            conn.execute(f"DROP TABLE {table}")
    environment = AcademicEnvironment(path)
    assert environment._titles is None and environment._name_terms is None
    yield environment
    environment.close()


def _title_words(env: AcademicEnvironment, rng: random.Random) -> list[str]:
    title = env._conn.execute(
        "SELECT title_norm FROM publication WHERE id = ?", (rng.randint(1, env._n_publications),)
    ).fetchone()[0].split()
    words = [w for w in title if w not in academic_pools.SMALL_WORDS] or title
    kind = rng.randrange(6)
    if kind == 1:
        words = rng.sample(words, min(rng.randint(1, 3), len(words)))
    elif kind == 2:  # the last word cut short: a prefix of several words
        words = rng.sample(words, min(rng.randint(1, 3), len(words)))
        words[-1] = words[-1][: rng.randint(1, len(words[-1]))]
    elif kind == 3:  # a word no title has
        words[rng.randrange(len(words))] = "zorbulent"
    elif kind == 4:  # a word twice
        words = words + [rng.choice(words)]
    elif kind == 5:
        words = [rng.choice(words)[: rng.randint(1, 2)]]
    return words


def test_title_postings_rank_as_fts5_bm25(env: AcademicEnvironment) -> None:
    rng = random.Random(0)
    for _ in range(100):
        words = _title_words(env, rng)
        limit = rng.choice([10, 11])
        every = " ".join(f'"{t}"' for t in words[:-1]) + f' "{words[-1]}"*'
        any_ = " OR ".join(f'"{t}"' for t in words)
        for query, fast in ((every, env._titles.top_all(words, limit)), (any_, env._titles.top_any(words, limit))):
            want = [
                r[0]
                for r in env._conn.execute(
                    "SELECT rowid FROM publication_fts WHERE publication_fts MATCH ? ORDER BY rank LIMIT ?", (query, limit)
                )
            ]
            assert fast == want, query


def test_title_postings_leave_unusual_words_to_fts5(env: AcademicEnvironment) -> None:
    assert env._titles.top_all(["graph", "réseau"], 10) is None
    assert env._titles.top_any(["图"], 10) is None


def test_spelled_out_name_prefixes_match_the_same_rows(env: AcademicEnvironment) -> None:
    rng = random.Random(1)
    for _ in range(100):
        name, name_zh = env._conn.execute(
            "SELECT name, name_zh FROM person WHERE id = ?", (rng.randint(1, N_PERSONS),)
        ).fetchone()
        tokens = normalize(rng.choice([name, name_zh or name])).split()
        tokens = rng.choice([tokens, [t[: rng.randint(1, len(t))] for t in tokens], tokens[::-1] + ["zq"]])
        for operator in (" ", " OR "):
            want = env._conn.execute(
                "SELECT rowid FROM person_fts WHERE person_fts MATCH ? LIMIT ?", (_fts_query(tokens, operator), NAME_CANDIDATES)
            ).fetchall()
            query = env._name_terms.query(tokens, any_word=operator != " ")
            got = (
                env._conn.execute("SELECT rowid FROM person_fts WHERE person_fts MATCH ? LIMIT ?", (query, NAME_CANDIDATES)).fetchall()
                if query
                else []
            )
            assert got == want, (tokens, operator)


def test_organisation_scores_at_once_equal_one_by_one(env: AcademicEnvironment) -> None:
    rng = random.Random(2)
    org_ids = list(env._org_tokens)
    queries = [env._org_names[o] for o in rng.sample(org_ids, 20)]
    queries += [env._org_names_zh[o] for o in org_ids if env._org_names_zh[o]][:5] + ["University of Science", "清华"]
    for query in queries:
        one, many = _OrgScorer(env, query), _OrgScorer(env, query)
        sample = rng.sample(org_ids, min(200, len(org_ids)))
        assert many.best(sample, 5) == sorted(sample, key=lambda o: (-one(o), o))[:5], query
        assert all(one(o) == many(o) for o in sample)


def test_interest_scores_without_parsing_equal_parsed(env: AcademicEnvironment) -> None:
    interests = [r[0] for r in env._conn.execute("SELECT interests FROM person")]
    for interest in ("computer vision", "learning", "machine learning systems", "计算机视觉"):
        field_scores = env._field_scores(interest)
        fast = _interest_scorer(field_scores)
        for text in interests:
            assert fast(text) == max((field_scores.get(i, 0.0) for i in json.loads(text)), default=0.0)


def test_searches_answer_as_with_fts5_alone(env: AcademicEnvironment, plain_env: AcademicEnvironment) -> None:
    rng = random.Random(3)
    calls: list[tuple[str, dict]] = []
    for _ in range(25):
        inputs = env.head_inputs("searchPerson", env.sample_entity("person", rng))
        first, *_, last = inputs["name"].split()
        calls += [
            ("searchPerson", {"name": inputs["name"]}),
            ("searchPerson", {"name": inputs["name"], "organization": inputs["organization"]}),
            ("searchPerson", {"name": last, "interest": inputs["interest"]}),
            ("searchPerson", {"name": f"{first[:2]} {last[:3]}"}),
            ("searchPerson", {"organization": inputs["organization"], "interest": inputs["interest"]}),
            ("searchPublication", {"publication_info": " ".join(_title_words(env, rng))}),
            ("searchPublication", env.head_inputs("searchPublication", env.sample_entity("publication", rng))),
        ]
    for api, args in calls:
        assert env.call(api, **args) == plain_env.call(api, **args), (api, args)
