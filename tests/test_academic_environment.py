"""The seeded academic corpus and the AMiner-style environment over it, on real SQLite."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import time
from pathlib import Path

import pytest

from soay.environment import academic_pools
from soay.environment.academic import AcademicEnvironment, open_environment
from soay.environment.academic_corpus import build_academic_corpus, chinese_renderings, normalize
from soay.environment.base import ApiCallError, Environment
from soay.spec import load_spec

N_PERSONS = 3_000
TIER = {position: tier for position, _, _, tier in academic_pools.POSITIONS}
SPEC = load_spec("aminer")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("corpus") / "academic.sqlite"
    counts = build_academic_corpus(path, n_persons=N_PERSONS, seed=0)
    return path, counts


@pytest.fixture(scope="module")
def env(corpus: tuple[Path, dict]) -> AcademicEnvironment:
    environment = AcademicEnvironment(corpus[0])
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def db(corpus: tuple[Path, dict]) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{corpus[0]}?mode=ro", uri=True)
    yield conn
    conn.close()


def _sample(env: AcademicEnvironment, entity: str, n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [env.sample_entity(entity, rng) for _ in range(n)]


def _content_digest(path: Path) -> str:
    """Digest of every row of the base tables (the FTS indexes are derived from them)."""
    conn = sqlite3.connect(path)
    digest = hashlib.sha256()
    for table in ("organization", "field", "venue", "person", "person_interest", "advising", "publication", "authorship", "meta"):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
            digest.update(repr(row).encode())
    conn.close()
    return digest.hexdigest()


# ------------------------------------------------------------------------------- the corpus


def test_same_seed_same_content_different_seed_differs(tmp_path: Path) -> None:
    a = build_academic_corpus(tmp_path / "a.sqlite", n_persons=800, seed=7)
    b = build_academic_corpus(tmp_path / "b.sqlite", n_persons=800, seed=7)
    c = build_academic_corpus(tmp_path / "c.sqlite", n_persons=800, seed=8)
    for counts in (a, b, c):
        counts.pop("build_seconds")
    assert a == b
    assert _content_digest(tmp_path / "a.sqlite") == _content_digest(tmp_path / "b.sqlite")
    assert _content_digest(tmp_path / "a.sqlite") != _content_digest(tmp_path / "c.sqlite")
    first = "SELECT pid, name FROM person WHERE id = 1"
    rows = [sqlite3.connect(tmp_path / f"{x}.sqlite").execute(first).fetchone() for x in "abc"]
    assert rows[0] == rows[1] != rows[2]


def test_build_is_atomic_and_reports_progress(tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    target = tmp_path / "nested" / "corpus.sqlite"
    build_academic_corpus(target, n_persons=300, seed=1, progress=lambda *a: calls.append(a))
    assert target.is_file()
    assert [p.name for p in target.parent.iterdir()] == ["corpus.sqlite"]  # no temp file left
    stages = {stage for stage, _, _ in calls}
    assert {"persons", "publications", "authorships", "indexes", "done"} <= stages
    assert all(0 <= done <= total for _, done, total in calls)


def test_counts_and_schema(corpus: tuple[Path, dict], db: sqlite3.Connection) -> None:
    _, counts = corpus
    assert counts["persons"] == N_PERSONS
    assert counts["organizations"] >= 60
    assert 70 <= counts["fields"] <= 100
    for table, key in (
        ("person", "persons"),
        ("publication", "publications"),
        ("authorship", "authorships"),
        ("organization", "organizations"),
    ):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == counts[key]
    for table in ("person", "publication"):
        pids = [r[0] for r in db.execute(f"SELECT pid FROM {table}")]
        assert len(set(pids)) == len(pids)
        assert all(len(p) == 24 and int(p, 16) >= 0 and p == p.lower() for p in pids)
    names = [r[0] for r in db.execute("SELECT name FROM organization")]
    assert len(set(map(normalize, names))) == len(names)
    titles = [r[0] for r in db.execute("SELECT title_norm FROM publication")]
    assert len(set(titles)) == len(titles)


def test_person_totals_match_their_publications(db: sqlite3.Connection) -> None:
    mismatched = db.execute("""
        SELECT count(*) FROM person p JOIN (
            SELECT a.person_id, count(*) AS n, sum(pub.num_citation) AS c FROM authorship a
            JOIN publication pub ON pub.id = a.pub_id GROUP BY a.person_id) t ON t.person_id = p.id
        WHERE p.num_pubs != t.n OR p.num_citation != t.c""").fetchone()[0]
    assert mismatched == 0
    assert db.execute("SELECT min(num_pubs) FROM person").fetchone()[0] >= 1


def test_realistic_shapes(db: sqlite3.Connection) -> None:
    sizes = [r[0] for r in db.execute("SELECT count(*) FROM authorship GROUP BY pub_id")]
    assert min(sizes) >= 1 and max(sizes) <= 8
    years = [r[0] for r in db.execute("SELECT year FROM publication")]
    assert 1990 <= min(years) and max(years) <= 2025
    assert sum(y == 2025 for y in years) < 0.2 * len(years)
    n_interests = [len(json.loads(r[0])) for r in db.execute("SELECT interests FROM person")]
    assert min(n_interests) >= 2 and max(n_interests) <= 5
    positions = {r[0] for r in db.execute("SELECT DISTINCT position FROM person")}
    assert {"Professor", "Associate Professor", "PhD Student", "Postdoc"} <= positions
    org_sizes = sorted((r[0] for r in db.execute("SELECT count(*) FROM person GROUP BY org_id")), reverse=True)
    assert org_sizes[0] > 10 * org_sizes[len(org_sizes) // 2]  # Zipf-like organisation sizes


def test_long_tails(db: sqlite3.Connection) -> None:
    citations = sorted((r[0] for r in db.execute("SELECT num_citation FROM person")), reverse=True)
    assert sum(citations[: len(citations) // 100]) > 0.10 * sum(citations)
    pubs = sorted(r[0] for r in db.execute("SELECT num_pubs FROM person"))
    assert pubs[-1] >= 10 * pubs[len(pubs) // 2]
    paper = sorted(r[0] for r in db.execute("SELECT num_citation FROM publication"))
    assert paper[-1] >= 50 * max(paper[len(paper) // 2], 1)


def test_duplicate_names_exist(db: sqlite3.Connection) -> None:
    shared = db.execute("""SELECT count(*) FROM person WHERE name IN (
        SELECT name FROM person GROUP BY name HAVING count(*) > 1)""").fetchone()[0]
    assert shared >= 0.10 * N_PERSONS


# -------------------------------------------------------------------------- the environment


def test_is_an_environment(env: AcademicEnvironment, corpus: tuple[Path, dict]) -> None:
    assert isinstance(env, Environment)
    assert set(env.api_functions()) == set(SPEC.api_names)
    other = open_environment(str(corpus[0]))
    pid = _sample(env, "person", 1)[0]
    assert other.getPersonBasicInfo(pid) == env.getPersonBasicInfo(pid)
    other.close()


def test_every_api_returns_exactly_the_spec_attributes(env: AcademicEnvironment) -> None:
    person = max(_sample(env, "person", 50), key=lambda p: env.getPersonBasicInfo(p)["num_pubs"])
    info = env.getPersonBasicInfo(person)
    pub = env.getPersonPubs(person)[0]["pub_id"]
    calls = {
        "searchPerson": {"name": info["name"], "organization": info["organization"]},
        "searchPublication": {"publication_info": env.getPublication(pub)["title"]},
        "getCoauthors": {"person_id": person},
        "getPersonInterest": {"person_id": person},
        "getPublication": {"pub_id": pub},
        "getPersonBasicInfo": {"person_id": person},
        "getPersonPubs": {"person_id": person},
    }
    for api in SPEC.apis:
        result = env.call(api.name, **calls[api.name])
        assert json.loads(json.dumps(result)) == result  # JSON-compatible
        if api.returns == "values":
            assert result and all(isinstance(v, str) for v in result)
            continue
        records = [result] if api.returns == "record" else result
        assert records, api.name
        for record in records:
            assert tuple(record) == api.attribute_names, api.name
            for attribute in api.attributes:
                if attribute.attributes:
                    nested = tuple(a.name for a in attribute.attributes)
                    assert all(tuple(sub) == nested for sub in record[attribute.name])


def test_search_person_disambiguates_namesakes(env: AcademicEnvironment, db: sqlite3.Connection) -> None:
    rows = db.execute("""
        SELECT p.pid, p.name, o.name FROM person p JOIN organization o ON o.id = p.org_id
        WHERE p.name IN (SELECT name FROM person GROUP BY name HAVING count(DISTINCT org_id) > 1)
          AND NOT EXISTS (SELECT 1 FROM person q WHERE q.name = p.name AND q.org_id = p.org_id
                          AND q.id != p.id)""").fetchall()
    assert len(rows) >= 100
    by_name_only = sum(env.searchPerson(name=name)[0]["person_id"] == pid for pid, name, _ in rows)
    by_org = sum(env.searchPerson(name=name, organization=org)[0]["person_id"] == pid for pid, name, org in rows)
    assert by_org == len(rows)
    assert by_name_only < 0.8 * len(rows)  # the name alone is genuinely ambiguous


def test_search_person_is_fuzzy(env: AcademicEnvironment, db: sqlite3.Connection) -> None:
    pid, name, org = db.execute("""
        SELECT p.pid, p.name, o.name FROM person p JOIN organization o ON o.id = p.org_id
        WHERE p.name != p.name_norm AND p.name GLOB '*[^ -~]*' LIMIT 1""").fetchone()
    folded = " ".join(reversed(normalize(name).split()))  # lower case, no accents, any order
    assert pid in [r["person_id"] for r in env.searchPerson(name=folded, organization=org)]
    prefix = " ".join(w[:3] for w in normalize(name).split())
    assert pid in [r["person_id"] for r in env.searchPerson(name=prefix, organization=org)]
    assert env.searchPerson(name="Qwxzv Pqzrt") == []
    assert env.searchPerson(name="?!", organization=org) == env.searchPerson(organization=org)
    assert len(env.searchPerson(name="Wang")) == 10


def test_search_person_without_name(env: AcademicEnvironment) -> None:
    by_org = env.searchPerson(organization="Tsinghua University")
    assert by_org and all(r["organization"] == "Tsinghua University" for r in by_org)
    citations = [r["num_citation"] for r in by_org]
    assert citations == sorted(citations, reverse=True)
    by_interest = env.searchPerson(interest="knowledge graph")
    assert by_interest and all("knowledge graph" in r["interests"] for r in by_interest)
    both = env.searchPerson(organization="Tsinghua", interest="machine learning")
    assert both[0]["organization"] == "Tsinghua University"
    assert "machine learning" in both[0]["interests"]


def test_chinese_renderings_are_data_and_cover_the_pools(db: sqlite3.Connection) -> None:
    table = chinese_renderings()
    assert all(s in table["surnames"] for s in academic_pools.CHINESE_SURNAMES)
    assert all(s in table["given"] for s, _ in academic_pools.CHINESE_SYLLABLES)
    assert all(o.name in table["organizations"] for o in academic_pools.REAL_ORGS)
    assert all(f.name in table["fields"] for f in academic_pools.FIELDS)
    # scholars of Chinese origin (and only they) have a name in characters, surname first
    row = db.execute("SELECT name, name_zh FROM person WHERE name = 'Wei Wang' AND name_zh != '' LIMIT 1").fetchone()
    assert row is not None and row[1][0] in table["surnames"]["Wang"].split() and len(row[1]) == 2
    with_zh = db.execute("SELECT count(*) FROM person WHERE name_zh != ''").fetchone()[0]
    assert 0.2 * N_PERSONS < with_zh < 0.8 * N_PERSONS
    assert db.execute("SELECT name_zh FROM organization WHERE name = 'Tsinghua University'").fetchone()[0] == "清华大学"
    assert db.execute("SELECT name_zh FROM field WHERE name = 'quantum computing'").fetchone()[0] == "量子计算"
    zh_orgs = [r[0] for r in db.execute("SELECT name_zh FROM organization WHERE name_zh != ''")]
    assert len(set(zh_orgs)) == len(zh_orgs)  # a Chinese name names one organisation
    assert normalize("清华大学的 Wei") == "清 华 大 学 的 wei"


def test_search_person_in_chinese_script(env: AcademicEnvironment, db: sqlite3.Connection) -> None:
    rows = db.execute("""
        SELECT p.pid, p.name, p.name_zh, o.name, o.name_zh FROM person p JOIN organization o ON o.id = p.org_id
        WHERE p.name_zh != '' AND o.name_zh != '' ORDER BY p.id LIMIT 200""").fetchall()
    assert len(rows) == 200
    found = first = 0
    for pid, name, name_zh, org, org_zh in rows:
        by_name = [r["person_id"] for r in env.searchPerson(name=name_zh)]
        found += pid in by_name
        best = env.searchPerson(name=name_zh, organization=org_zh)
        first += best[0]["person_id"] == pid
        assert best[0]["name"] == name  # records keep the Latin name
        assert env.searchPerson(name=name, organization=org_zh)[0]["organization"] == org  # scripts mixed
    assert found >= 0.9 * len(rows)
    assert first >= 0.95 * len(rows)  # as with the Latin name and organisation (namesakes at one place aside)
    # the example of the task: 清华大学的王伟 is found as "Wei Wang" of Tsinghua
    wang = db.execute("""
        SELECT p.pid FROM person p JOIN organization o ON o.id = p.org_id
        WHERE p.name_zh = '王伟' AND o.name = 'Tsinghua University'""").fetchall()
    if wang:
        assert env.searchPerson(name="王伟", organization="清华大学")[0]["person_id"] in {r[0] for r in wang}


def test_search_by_organisation_and_field_in_chinese_script(env: AcademicEnvironment) -> None:
    latin = env.searchPerson(organization="Tsinghua University")
    assert env.searchPerson(organization="清华大学") == latin
    assert all(r["organization"] == "Tsinghua University" for r in env.searchPerson(organization="清华"))
    assert env.searchPerson(interest="知识图谱") == env.searchPerson(interest="knowledge graph")
    both = env.searchPerson(organization="清华", interest="机器学习")
    assert both[0]["organization"] == "Tsinghua University" and "machine learning" in both[0]["interests"]
    ustc = env.searchPerson(organization="中国科学技术大学")  # nearly all generic characters
    assert ustc and all(r["organization"] == "University of Science and Technology of China" for r in ustc)
    started = time.perf_counter()
    for query in ("清华大学", "中国科学院计算技术研究所", "浙江大学", "北京大学"):
        env.searchPerson(organization=query, interest="数据挖掘")
    assert (time.perf_counter() - started) / 4 < 0.05


def test_an_older_layout_without_chinese_names_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    build_academic_corpus(path, n_persons=300, seed=3)
    conn = sqlite3.connect(path)
    for table in ("person", "organization", "field"):
        if table == "person":
            conn.execute("DROP INDEX person_name_zh")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN name_zh")
    conn.commit()
    conn.close()
    with AcademicEnvironment(path) as old:
        hit = old.searchPerson(organization="Tsinghua University")
        assert hit and old.searchPerson(name=hit[0]["name"])[0]["name"] == hit[0]["name"]
        assert old.searchPerson(organization="Tsinghua", interest="machine learning")


def test_head_inputs_find_the_entity(env: AcademicEnvironment) -> None:
    persons = _sample(env, "person", 300, seed=1)
    hits = 0
    for pid in persons:
        inputs = env.head_inputs("searchPerson", pid)
        assert set(inputs) == {p.name for p in SPEC.api("searchPerson").params}
        assert inputs["interest"] == env.getPersonInterest(pid)[0]
        record = env.head_record("searchPerson", pid)
        assert record["person_id"] == pid and tuple(record) == SPEC.api("searchPerson").attribute_names
        first = env.searchPerson(name=inputs["name"], organization=inputs["organization"])[0]
        hits += first == record
    assert hits >= 0.85 * len(persons)
    pub = _sample(env, "publication", 1)[0]
    assert env.searchPublication(**env.head_inputs("searchPublication", pub))[0] == env.head_record(
        "searchPublication", pub
    )
    with pytest.raises(ValueError):
        env.head_inputs("getCoauthors", pub)


def test_search_publication_puts_exact_titles_first(env: AcademicEnvironment) -> None:
    pubs = _sample(env, "publication", 200, seed=2)
    found = sum(env.searchPublication(env.getPublication(p)["title"])[0]["pub_id"] == p for p in pubs)
    assert found >= 0.99 * len(pubs)
    lowered = env.getPublication(pubs[0])["title"].lower()
    assert env.searchPublication(lowered)[0]["pub_id"] == pubs[0]
    keyword = env.searchPublication("graph neural networks")
    assert 0 < len(keyword) <= 10
    assert env.searchPublication("zzqx unfindable words") == []


def test_get_person_pubs_most_cited_first(env: AcademicEnvironment) -> None:
    for pid in _sample(env, "person", 100, seed=3):
        pubs = env.getPersonPubs(pid)
        keys = [(-p["num_citation"], -p["year"], p["pub_id"]) for p in pubs]
        assert keys == sorted(keys)
        assert len(pubs) == min(50, env.getPersonBasicInfo(pid)["num_pubs"])
        name = env.getPersonBasicInfo(pid)["name"]
        assert all(name in p["authors_name_list"] for p in pubs)
        full = env.getPublication(pubs[0]["pub_id"])
        assert [a["name"] for a in full["authors"]] == pubs[0]["authors_name_list"]


def test_coauthors_and_relation_symmetry(env: AcademicEnvironment) -> None:
    checked = 0
    for pid in _sample(env, "person", 400, seed=4):
        coauthors = env.getCoauthors(pid)
        keys = [(-c["num_joint_pubs"], c["name"], c["person_id"]) for c in coauthors]
        assert keys == sorted(keys) and len(coauthors) <= 30
        assert pid not in {c["person_id"] for c in coauthors}
        for c in coauthors:
            assert c["relation"] in {"coauthor", "advisor", "student"}
            if c["relation"] == "coauthor":
                continue
            back = {b["person_id"]: b for b in env.getCoauthors(c["person_id"])}
            if pid in back:
                expected = "student" if c["relation"] == "advisor" else "advisor"
                assert back[pid]["relation"] == expected
                assert back[pid]["num_joint_pubs"] == c["num_joint_pubs"]
                checked += 1
    assert checked >= 20


def test_a_student_has_one_advisor_a_senior_at_their_organisation(env: AcademicEnvironment) -> None:
    """The advising record, not seniority plus two joint papers: that rule gave some students a
    dozen "advisors" from other organisations, and the advisor questions listed them all."""
    with_advisor = 0
    for pid in _sample(env, "person", 400, seed=5):
        advisors = [c for c in env.getCoauthors(pid) if c["relation"] == "advisor"]
        assert len(advisors) <= 1
        if advisors:
            with_advisor += 1
            me, advisor = env.getPersonBasicInfo(pid), env.getPersonBasicInfo(advisors[0]["person_id"])
            assert advisor["organization"] == me["organization"]
            assert TIER[advisor["position"]] == "senior" and TIER[me["position"]] == "junior"
    assert with_advisor >= 40


def test_unknown_and_malformed_ids(env: AcademicEnvironment) -> None:
    unknown = "0" * 24
    assert env.getCoauthors(unknown) == []
    assert env.getPersonPubs(unknown) == []
    assert env.getPersonInterest(unknown) == []
    assert env.getPersonBasicInfo(unknown) == {}
    assert env.getPublication(unknown) == {}
    pid = _sample(env, "person", 1)[0]
    assert env.getPersonBasicInfo(pid.upper()) == env.getPersonBasicInfo(pid)
    for bad in ("xyz", pid[:-1], pid + "0", "g" * 24, 123, None, [pid]):
        with pytest.raises(ApiCallError):
            env.getPersonBasicInfo(bad)
        with pytest.raises(ApiCallError):
            env.getPublication(bad)


def test_bad_calls_raise_api_call_error(env: AcademicEnvironment) -> None:
    pid = _sample(env, "person", 1)[0]
    bad_calls = [
        ("searchAuthor", {"name": "x"}),
        ("searchPerson", {}),
        ("searchPerson", {"name": "  "}),
        ("searchPerson", {"name": "!!!", "interest": "--"}),
        ("searchPerson", {"name": 42}),
        ("searchPerson", {"nam": "Wei Zhang"}),
        ("searchPerson", {"name": "x" * 5_000}),
        ("searchPublication", {}),
        ("searchPublication", {"publication_info": "  ?!  "}),
        ("getCoauthors", {}),
        ("getCoauthors", {"person_id": pid, "limit": 3}),
        ("getPublication", {"pub_id": 7}),
    ]
    for api, kwargs in bad_calls:
        with pytest.raises(ApiCallError):
            env.call(api, **kwargs)
    with pytest.raises(ValueError):
        env.sample_entity("venue", random.Random(0))


def test_sample_entity_covers_the_corpus(env: AcademicEnvironment, corpus: tuple[Path, dict]) -> None:
    persons = _sample(env, "person", 2_000, seed=5)
    assert len(set(persons)) > 0.7 * len(persons)
    assert all(env.getPersonBasicInfo(p)["person_id"] == p for p in persons[:50])
    pubs = _sample(env, "publication", 50, seed=5)
    assert all(env.getPublication(p)["pub_id"] == p for p in pubs)


def test_exact_calls_are_fast(env: AcademicEnvironment) -> None:
    pids = _sample(env, "person", 200, seed=6)
    started = time.perf_counter()
    for pid in pids:
        env.getPersonBasicInfo(pid)
        env.getPersonPubs(pid)
        env.getCoauthors(pid)
    per_call = (time.perf_counter() - started) / (3 * len(pids))
    assert per_call < 0.002


def test_default_size_builds_within_a_minute(tmp_path: Path) -> None:
    started = time.perf_counter()
    counts = build_academic_corpus(tmp_path / "default.sqlite", n_persons=20_000, seed=0)
    seconds = time.perf_counter() - started
    size_mb = (tmp_path / "default.sqlite").stat().st_size / 2**20
    print(f"\n20,000 persons: {seconds:.1f} s, {size_mb:.1f} MiB, {counts}")
    assert seconds < 60
    assert counts["duplicate_name_persons"] >= 0.10 * counts["persons"]
