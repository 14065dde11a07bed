"""The AMiner-style API environment: the 7 APIs of `specs/aminer.yaml` over the seeded corpus.

Methods carry the spec's API and parameter names and return JSON-compatible values only, so a
result is the same in-process, through the HTTP clone and inside the sandbox (which builds one
with `open_environment`).  The corpus is opened read-only; one connection serves all threads
behind a lock, which is enough because every call is a few index lookups.

Behaviour follows AMiner where the seeds pin it down and is documented here where they do not:

* Ids are 24 lowercase hex digits.  A malformed id (or a non-string) is a bad call and raises
  `ApiCallError`; a well-formed id that names nothing returns an empty result ([] or {}), as a
  lookup in a real database would.
* `searchPerson` ranks, best first: exact name (same words in the same order), then the same
  words in another order or without middle initials ("Zhang Wei", "James Smith" for
  "James R. Smith"), then organisation match, then interest match, then how much of the name
  matches, then citations, then id.  So a name with the scholar's organisation or one of their
  interests puts that scholar first unless a namesake shares it.
* Result sizes are capped like a search page: 10 search hits, 30 co-authors, 50 publications.
* Names, organisations and interests match in Latin or Chinese script: a scholar of Chinese origin
  is found by their name in characters (王伟) as by its pinyin (Wei Wang), an organisation by its
  Chinese name (清华大学, or part of it: 清华) and a field by its (计算机视觉). Chinese characters
  are words of their own in the match (see `normalize`); records keep the Latin names.
"""

from __future__ import annotations

import heapq
import json
import random
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, Self

import numpy as np

from soay.environment import academic_pools as names
from soay.environment.academic_search import NameTerms, TitleSearch
from soay.environment.text import CJK_CHAR, normalize
from soay.environment.base import ApiCallError, SpecDispatch
from soay.spec import ApiSpec, load_spec

SEARCH_LIMIT = 10
COAUTHOR_LIMIT = 30
PUBS_LIMIT = 50
MAX_TEXT_CHARS = 1_000
MAX_QUERY_TOKENS = 24
NAME_CANDIDATES = 2_000  # fuzzy name matches ranked per query (exact matches always are)
GROUP_CANDIDATES = 20  # most cited scholars taken per matching organisation or field

_ID = re.compile(r"[0-9a-f]{24}")
# Chinese characters that say what kind of organisation it is (大学, 研究所, 实验室, 科技, 理工,
# 国立...): in a Chinese name they weigh like the generic words below.
_GENERIC_ORG_CHARS = frozenset("大学院校研究所实验室心系部集团公司有限科技术理工国立")
# Words that say what kind of organisation it is rather than which one.
_GENERIC_ORG_WORDS = frozenset(
    {
        "university",
        "of",
        "the",
        "institute",
        "technology",
        "for",
        "and",
        "college",
        "school",
        "research",
        "center",
        "centre",
        "laboratory",
        "lab",
        "labs",
        "national",
        "state",
        "science",
        "sciences",
        "academy",
        "at",
        "de",
        "di",
        "polytechnic",
        "technical",
        "applied",
    }
)
def _org_weight(tokens: Iterable[str]) -> int:
    """Weight of organisation words in fifths: 1 for a generic word, 5 for a distinctive one.
    Integers, so that a sum does not depend on the (hash-seeded) order of a set."""
    return sum(1 if t in _GENERIC_ORG_WORDS or t in _GENERIC_ORG_CHARS else 5 for t in tokens)


def _weighted_jaccard(query: frozenset[str], target: frozenset[str]) -> float:
    """Token overlap in which generic organisation words count a fifth of a distinctive word."""
    union = _org_weight(query | target)
    return _org_weight(query & target) / union if union else 0.0


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _fts_query(tokens: list[str], operator: str = " ") -> str:
    """An FTS5 query of prefix terms (tokens come from `normalize`, so they need no escaping)."""
    return operator.join(f'"{t}"*' for t in tokens[:MAX_QUERY_TOKENS])


class AcademicEnvironment(SpecDispatch):
    """The AMiner API library over one corpus built by `build_academic_corpus`."""

    def __init__(self, db_path: str | Path):
        path = Path(db_path).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no academic corpus at {path}")
        self.spec: ApiSpec = load_spec("aminer")
        self._conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False, cached_statements=256
        )
        # Map as much of the file as SQLite allows (2 GiB in common builds) and keep a larger
        # page cache for what lies beyond: a million-person corpus is 2.5 GB.
        self._conn.execute("PRAGMA mmap_size = 17179869184")
        self._conn.execute("PRAGMA cache_size = -65536")
        self._lock = threading.Lock()
        # Derived search structures of a corpus that has them (academic_search); None: FTS5 only.
        self._titles = TitleSearch.open(self._conn, self._lock)
        self._name_terms = NameTerms.open(self._conn, self._lock)
        self._n_persons = self._scalar("SELECT max(id) FROM person")
        self._n_publications = self._scalar("SELECT max(id) FROM publication")
        # A corpus of a layout before 3 has no Chinese renderings: read them as none.
        zh = {t: "name_zh" if self._has_column(t, "name_zh") else "''" for t in ("person", "organization", "field")}
        self._person_zh = zh["person"]
        # Small tables kept in memory: ranking needs their tokens for every candidate. An
        # organisation or field has a form per script, Latin and (where it has one) Chinese.
        self._org_names: dict[int, str] = {}
        self._org_names_zh: dict[int, str] = {}
        self._org_norms: dict[int, tuple[str, ...]] = {}
        self._org_tokens: dict[int, tuple[frozenset[str], ...]] = {}
        self._org_index: _OrgIndex | None = None  # _org_word_index
        for org_id, name, norm, name_zh in self._rows(f"SELECT id, name, name_norm, {zh['organization']} FROM organization"):
            self._org_names[org_id] = name
            self._org_names_zh[org_id] = name_zh or ""
            norms = (norm, normalize(name_zh)) if name_zh else (norm,)
            self._org_norms[org_id] = norms
            self._org_tokens[org_id] = tuple(frozenset(n.split()) for n in norms)
        self._fields: dict[str, tuple[tuple[tuple[str, frozenset[str]], ...], int]] = {}  # forms, id
        for field_id, name, name_zh in self._rows(f"SELECT id, name, {zh['field']} FROM field"):
            forms = [normalize(name)] + ([normalize(name_zh)] if name_zh else [])
            self._fields[name] = (tuple((f, frozenset(f.split())) for f in forms), field_id)

    # ---------------------------------------------------------------- the Environment protocol

    def sample_entity(self, entity: str, rng: random.Random) -> str:
        """A uniform random id: rows are numbered 1..N without gaps, so draw a row number."""
        if entity == "person":
            return self._scalar("SELECT pid FROM person WHERE id = ?", rng.randint(1, self._n_persons))
        if entity == "publication":
            return self._scalar("SELECT pid FROM publication WHERE id = ?", rng.randint(1, self._n_publications))
        raise ValueError(f"unknown entity {entity!r}; the entities are {', '.join(self.spec.entities)}")

    def head_inputs(self, api: str, entity_id: str) -> dict[str, str]:
        if api == "searchPerson":
            row = self._one("SELECT name, org_id, interests FROM person WHERE pid = ?", self._entity_id(entity_id))
            if row is None:
                raise ValueError(f"no person with id {entity_id}")
            return {"name": row[0], "organization": self._org_names[row[1]], "interest": json.loads(row[2])[0]}
        if api == "searchPublication":
            title = self._scalar("SELECT title FROM publication WHERE pid = ?", self._entity_id(entity_id))
            if title is None:
                raise ValueError(f"no publication with id {entity_id}")
            return {"publication_info": title}
        raise ValueError(f"{api!r} is not a head API of {self.spec.domain!r}")

    def head_record(self, api: str, entity_id: str) -> dict[str, Any]:
        if api == "searchPerson":
            rows = self._person_candidates("WHERE pid = ?", (self._entity_id(entity_id),))
            if not rows:
                raise ValueError(f"no person with id {entity_id}")
            return self._person_record(rows[0])
        if api == "searchPublication":
            row = self._one("SELECT pid, title, year FROM publication WHERE pid = ?", self._entity_id(entity_id))
            if row is None:
                raise ValueError(f"no publication with id {entity_id}")
            return {"pub_id": row[0], "title": row[1], "year": row[2]}
        raise ValueError(f"{api!r} is not a head API of {self.spec.domain!r}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------ the APIs

    def searchPerson(
        self, name: str | None = None, organization: str | None = None, interest: str | None = None
    ) -> list[dict[str, Any]]:
        """Scholars matching a name and/or organisation and/or interest, best first, at most 10.

        A name is matched on its words in any order, each word also as a prefix, ignoring
        case and diacritics; up to NAME_CANDIDATES fuzzy matches (plus every exact match) are
        ranked.  Without a name, the most cited scholars of the matching organisations and
        fields are ranked.
        """
        name = self._text("searchPerson", "name", name)
        organization = self._text("searchPerson", "organization", organization)
        interest = self._text("searchPerson", "interest", interest)
        if not (name or organization or interest):
            raise ApiCallError("searchPerson needs at least one of name, organization, interest")
        org_score = self._org_scorer(organization)
        field_scores = self._field_scores(interest) if interest else {}

        if name:
            q_norm = normalize(name)
            q_tokens = q_norm.split()
            # Name matches are many (2,000 fuzzy ones for a common name): read only what the
            # ranking looks at, the interests only when there is an interest to match and the
            # Chinese name only for a query in characters; the 10 best are read in full below.
            blank = "''"
            columns = (
                f"id, pid, {blank}, name_norm, org_id, {'interests' if field_scores else blank}, num_citation, 0, "
                f"{self._person_zh if CJK_CHAR.search(q_norm) else blank}"
            )

            def candidates(where: str, params: tuple) -> list[tuple]:
                return self._rows(f"SELECT {columns} FROM person {where}", *params)

            rows = {r[0]: r for r in candidates("WHERE name_norm = ?", (q_norm,))}
            if CJK_CHAR.search(name) and self._person_zh != "''":  # the name in characters, exactly
                q_zh = q_norm.replace(" ", "")
                rows.update((r[0], r) for r in candidates("WHERE name_zh = ?", (q_zh,)))
            for operator in (" ", " OR "):
                query = (
                    self._name_terms.query(q_tokens[:MAX_QUERY_TOKENS], any_word=operator != " ")
                    if self._name_terms
                    else _fts_query(q_tokens, operator)
                )
                if query is not None:  # None: no word of the index starts like a query word
                    fuzzy = candidates(
                        "WHERE id IN (SELECT rowid FROM person_fts WHERE person_fts MATCH ? LIMIT ?)",
                        (query, NAME_CANDIDATES),
                    )
                    rows.update((r[0], r) for r in fuzzy)
                if rows or len(q_tokens) < 2:
                    break
        else:
            q_norm, q_tokens = "", []
            rows = {r[0]: r for r in self._group_candidates(organization, org_score, field_scores)}

        q_set = frozenset(q_tokens)
        q_core = frozenset(t for t in q_tokens if len(t) > 1)
        cjk_query = bool(CJK_CHAR.search(q_norm))
        interest_of = _interest_scorer(field_scores)

        def rank(row: tuple) -> tuple:
            _, pid, _, person_norm, org_id, interests, citations, _, name_zh = row
            tokens = person_norm.split()
            if name_zh and cjk_query:  # a query in characters is matched by them
                tokens = normalize(name_zh).split()
                exact = 2 if tokens == q_tokens else 0
            else:
                exact = (
                    2
                    if person_norm == q_norm
                    else int(bool(q_core) and frozenset(t for t in tokens if len(t) > 1) == q_core)
                )
            return (-exact, -org_score(org_id), -interest_of(interests), -_jaccard(q_set, frozenset(tokens)), -citations, pid)

        best = [r[0] for r in heapq.nsmallest(SEARCH_LIMIT, rows.values(), key=rank)]
        full = {r[0]: r for r in self._person_candidates(f"WHERE id IN ({_marks(best)})", tuple(best))}
        return [self._person_record(full[i]) for i in best]

    def searchPublication(self, publication_info: str) -> list[dict[str, Any]]:
        """Publications matching a title or keywords, at most 10.

        The exact (normalised) title comes first, then BM25 over titles of publications holding
        all the query's words (the last also as a prefix), or any of them when none holds all.
        Small words ("of", "for") are left out of the match: they select nearly everything, which
        makes the match slow without making it better.
        """
        text = self._text("searchPublication", "publication_info", publication_info, required=True)
        assert text is not None  # required=True raises rather than returning None
        q_norm = normalize(text)
        tokens = q_norm.split()
        words = ([t for t in tokens if t not in names.SMALL_WORDS] or tokens)[:MAX_QUERY_TOKENS]
        hits = [
            r[0] for r in self._rows("SELECT id FROM publication WHERE title_norm = ? LIMIT ?", q_norm, SEARCH_LIMIT)
        ]
        all_words = " ".join(f'"{t}"' for t in words[:-1]) + f' "{words[-1]}"*'
        for every_word, query in ((True, all_words), (False, " OR ".join(f'"{t}"' for t in words))):
            # The same rows in the same order from the title postings where the corpus has them
            # (academic_search.TitleSearch: BM25 as FTS5 computes it, without a pass over the
            # doclist of every word), else from FTS5.
            fast = None
            if self._titles is not None:
                top = self._titles.top_all if every_word else self._titles.top_any
                fast = top(words, SEARCH_LIMIT + len(hits))
            hits += fast if fast is not None else [
                r[0]
                for r in self._rows(
                    "SELECT rowid FROM publication_fts WHERE publication_fts MATCH ? ORDER BY rank LIMIT ?",
                    query,
                    SEARCH_LIMIT + len(hits),
                )
            ]
            if hits or len(words) < 2:
                break
        ids = list(dict.fromkeys(hits))[:SEARCH_LIMIT]
        by_id = {
            r[0]: r
            for r in self._rows(f"SELECT id, pid, title, year FROM publication WHERE id IN ({_marks(ids)})", *ids)
        }
        return [{"pub_id": by_id[i][1], "title": by_id[i][2], "year": by_id[i][3]} for i in ids]

    def getCoauthors(self, person_id: str) -> list[dict[str, Any]]:
        """Co-authors by joint publications (desc), then name, then id; at most 30.

        The relation is seen from the queried scholar: "advisor" for the one who advised them
        (each student has one, a senior at their organisation, as in a real advising record),
        "student" for those they advised, else "coauthor". A record, not a guess from seniority
        and joint papers: that guess gave some students a dozen "advisors".
        """
        pid = self._id("getCoauthors", "person_id", person_id)
        me = self._one("SELECT id FROM person WHERE pid = ?", pid)
        if me is None:
            return []
        advisor = self._scalar("SELECT advisor_id FROM advising WHERE student_id = ?", me[0])
        students = {r[0] for r in self._rows("SELECT student_id FROM advising WHERE advisor_id = ?", me[0])}
        # Names are read only for co-authors with at least as many joint papers as the 30th
        # (the sort needs them for ties): a prolific scholar has thousands of co-authors.
        rows = self._rows(
            "WITH c AS MATERIALIZED ("
            "  SELECT a2.person_id AS person_id, count(*) AS n FROM authorship a1"
            "  JOIN authorship a2 ON a2.pub_id = a1.pub_id"
            "  WHERE a1.person_id = ?1 AND a2.person_id != ?1 GROUP BY a2.person_id) "
            "SELECT p.pid, p.name, p.id, c.n FROM c JOIN person p ON p.id = c.person_id "
            "WHERE c.n >= coalesce((SELECT n FROM c ORDER BY n DESC LIMIT 1 OFFSET ?2 - 1), 0) "
            "ORDER BY c.n DESC, p.name, p.pid LIMIT ?2",
            me[0],
            COAUTHOR_LIMIT,
        )
        relation = {advisor: "advisor"} | dict.fromkeys(students, "student")
        return [{"person_id": r[0], "name": r[1], "relation": relation.get(r[2], "coauthor"), "num_joint_pubs": r[3]} for r in rows]

    def getPersonInterest(self, person_id: str) -> list[str]:
        """Research interests, strongest first."""
        pid = self._id("getPersonInterest", "person_id", person_id)
        interests = self._scalar("SELECT interests FROM person WHERE pid = ?", pid)
        return json.loads(interests) if interests is not None else []

    def getPublication(self, pub_id: str) -> dict[str, Any]:
        """The full record of a publication, authors in byline order."""
        pid = self._id("getPublication", "pub_id", pub_id)
        row = self._one(
            "SELECT p.id, p.pid, p.title, p.year, p.abstract, v.name, p.num_citation, p.pdf_url "
            "FROM publication p JOIN venue v ON v.id = p.venue_id WHERE p.pid = ?",
            pid,
        )
        if row is None:
            return {}
        authors = self._rows(
            "SELECT p.pid, p.name, p.org_id FROM authorship a JOIN person p ON p.id = a.person_id "
            "WHERE a.pub_id = ? ORDER BY a.position",
            row[0],
        )
        return {
            "pub_id": row[1],
            "title": row[2],
            "year": row[3],
            "abstract": row[4],
            "venue": row[5],
            "num_citation": row[6],
            "pdf_url": row[7],
            "authors": [{"person_id": a[0], "name": a[1], "organization": self._org_names[a[2]]} for a in authors],
        }

    def getPersonBasicInfo(self, person_id: str) -> dict[str, Any]:
        """The profile of a scholar."""
        pid = self._id("getPersonBasicInfo", "person_id", person_id)
        row = self._one(
            "SELECT pid, name, gender, org_id, position, bio, education_experience, email, "
            "num_citation, num_pubs FROM person WHERE pid = ?",
            pid,
        )
        if row is None:
            return {}
        return {
            "person_id": row[0],
            "name": row[1],
            "gender": row[2],
            "organization": self._org_names[row[3]],
            "position": row[4],
            "bio": row[5],
            "education_experience": row[6],
            "email": row[7],
            "num_citation": row[8],
            "num_pubs": row[9],
        }

    def getPersonPubs(self, person_id: str) -> list[dict[str, Any]]:
        """Publications of a scholar by citations (desc), then year (desc), then id.

        Capped at the 50 most cited (AMiner pages its lists too); `num_pubs` of the profile
        gives the full count.
        """
        pid = self._id("getPersonPubs", "person_id", person_id)
        pubs = self._rows(
            "SELECT pub.id, pub.pid, pub.title, pub.year, pub.num_citation FROM authorship a "
            "JOIN publication pub ON pub.id = a.pub_id "
            "WHERE a.person_id = (SELECT id FROM person WHERE pid = ?) "
            "ORDER BY pub.num_citation DESC, pub.year DESC, pub.pid LIMIT ?",
            pid,
            PUBS_LIMIT,
        )
        if not pubs:
            return []
        ids = [p[0] for p in pubs]
        authors: dict[int, list[str]] = {i: [] for i in ids}
        for pub, name in self._rows(
            "SELECT a.pub_id, p.name FROM authorship a JOIN person p ON p.id = a.person_id "
            f"WHERE a.pub_id IN ({_marks(ids)}) ORDER BY a.pub_id, a.position",
            *ids,
        ):
            authors[pub].append(name)
        return [
            {"pub_id": p[1], "title": p[2], "year": p[3], "num_citation": p[4], "authors_name_list": authors[p[0]]}
            for p in pubs
        ]

    # ---------------------------------------------------------------------------- internals

    def _person_candidates(self, where: str, params: tuple) -> list[tuple]:
        return self._rows(
            "SELECT id, pid, name, name_norm, org_id, interests, num_citation, num_pubs, "
            f"{self._person_zh} FROM person {where}",
            *params,
        )

    def _person_record(self, row: tuple) -> dict[str, Any]:
        _, pid, name, _, org_id, interests, citations, pubs, name_zh = row
        return {
            "person_id": pid,
            "name": name,
            "name_zh": name_zh or "",
            "organization": self._org_names[org_id],
            "organization_zh": self._org_names_zh[org_id],
            "interests": json.loads(interests),
            "num_citation": citations,
            "num_pubs": pubs,
        }

    def _org_scorer(self, organization: str | None) -> Callable[[int], float]:
        """Organisation id -> match score: 2 for the same name, else weighted token overlap."""
        if not organization:
            return lambda org_id: 0.0
        return _OrgScorer(self, organization)

    def _org_word_index(self) -> _OrgIndex:
        """Organisation names as an inverted index, built at the first search that needs it."""
        if self._org_index is None:
            words: dict[str, list[int]] = {}
            by_norm: dict[str, list[int]] = {}
            form_org: list[int] = []
            form_weight: list[int] = []
            for org_id, forms in self._org_tokens.items():
                for tokens in forms:
                    for t in tokens:
                        words.setdefault(t, []).append(len(form_org))
                    form_org.append(org_id)
                    form_weight.append(_org_weight(tokens))
                for norm in self._org_norms[org_id]:
                    by_norm.setdefault(norm, []).append(org_id)
            self._org_index = _OrgIndex(
                {t: np.array(f, dtype=np.int64) for t, f in words.items()},
                np.array(form_org, dtype=np.int64),
                np.array(form_weight, dtype=np.int64),
                {n: frozenset(ids) for n, ids in by_norm.items()},
                max(self._org_tokens, default=0),
            )
        return self._org_index

    def _field_scores(self, interest: str) -> dict[str, float]:
        """Field name -> match score: 2 for the same field, else token overlap."""
        q_norm = normalize(interest)
        q_tokens = frozenset(q_norm.split())
        scores = {}
        for name, (forms, _) in self._fields.items():
            s = max(2.0 if norm == q_norm else _jaccard(q_tokens, tokens) for norm, tokens in forms)
            if s > 0:
                scores[name] = s
        return scores

    def _group_candidates(
        self, organization: str | None, org_score: Callable[[int], float], field_scores: dict[str, float]
    ) -> list[tuple]:
        """Candidates of a search without a name: the most cited of each matching group.

        Taken per best-matching organisation (with and without a matching interest) and per
        best-matching field, so the top of the full ranking is always among them.
        """
        org_ids: list[int] = []
        if organization:
            tokens = normalize(organization).split()
            distinctive = [t for t in tokens if t not in _GENERIC_ORG_WORDS and t not in _GENERIC_ORG_CHARS] or tokens
            # A Chinese name is first looked for with all its characters ("中国科学技术大学" is
            # nearly all generic characters, and any of them would match most organisations).
            queries = [_fts_query(tokens)] if CJK_CHAR.search(organization) else []
            queries += [_fts_query(distinctive, " OR ")] if distinctive else []
            matched: list[int] = []
            for query in queries:
                matched = [
                    r[0] for r in self._rows("SELECT rowid FROM organization_fts WHERE organization_fts MATCH ?", query)
                ]
                if matched:
                    break
            if matched:
                org_ids = (
                    org_score.best(matched, 5)
                    if isinstance(org_score, _OrgScorer)
                    else heapq.nsmallest(5, matched, key=lambda o: (-org_score(o), o))
                )
        field_ids = [self._fields[f][1] for f in sorted(field_scores, key=lambda f: -field_scores[f])][:5]
        rows: list[tuple] = []
        for org_id in org_ids:
            rows += self._person_candidates(
                "WHERE org_id = ? ORDER BY num_citation DESC LIMIT ?", (org_id, GROUP_CANDIDATES)
            )
            if field_ids:
                rows += self._person_candidates(
                    "AS p WHERE org_id = ? AND EXISTS (SELECT 1 FROM person_interest pi WHERE "
                    f"pi.field_id IN ({_marks(field_ids)}) AND pi.person_id = p.id) "
                    "ORDER BY num_citation DESC LIMIT ?",
                    (org_id, *field_ids, GROUP_CANDIDATES),
                )
        for field_id in field_ids[:3]:
            rows += self._person_candidates(
                "WHERE id IN (SELECT person_id FROM person_interest WHERE field_id = ? "
                "ORDER BY num_citation DESC LIMIT ?)",
                (field_id, GROUP_CANDIDATES),
            )
        return rows

    @staticmethod
    def _text(api: str, param: str, value: Any, required: bool = False) -> str | None:
        """A free-text argument: a string, bounded in length; one without a word (blank or only
        punctuation) counts as not given, since there is nothing in it to match."""
        if value is None:
            if required:
                raise ApiCallError(f"{api} is missing required argument {param}")
            return None
        if not isinstance(value, str):
            raise ApiCallError(f"{api}: {param} must be a string, got {type(value).__name__}")
        if len(value) > MAX_TEXT_CHARS:
            raise ApiCallError(f"{api}: {param} is longer than {MAX_TEXT_CHARS} characters")
        value = value.strip()
        if not normalize(value):
            if required:
                raise ApiCallError(f"{api}: {param} has no searchable words")
            return None
        return value

    @staticmethod
    def _id(api: str, param: str, value: Any) -> str:
        """A 24-hex-digit id (case-insensitive); anything else is a bad call."""
        if not isinstance(value, str):
            raise ApiCallError(f"{api}: {param} must be a string id, got {type(value).__name__}")
        normalized = value.strip().lower()
        if not _ID.fullmatch(normalized):
            raise ApiCallError(f"{api}: {param} {value[:64]!r} is not an id (24 hex digits)")
        return normalized

    def _entity_id(self, entity_id: Any) -> str:
        try:
            return self._id("head", "entity_id", entity_id)
        except ApiCallError as e:
            raise ValueError(str(e)) from None

    def _has_column(self, table: str, column: str) -> bool:
        return any(r[1] == column for r in self._rows(f"PRAGMA table_info({table})"))

    def _rows(self, sql: str, *params: Any) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _one(self, sql: str, *params: Any) -> tuple | None:
        with self._lock:
            return self._conn.execute(sql, params).fetchone()

    def _scalar(self, sql: str, *params: Any) -> Any:
        row = self._one(sql, *params)
        return row[0] if row else None


class _OrgIndex(NamedTuple):
    """Organisation names by word: word -> the forms (an organisation's Latin or Chinese name)
    holding it; each form's organisation (forms of one organisation are adjacent) and weight
    (`_org_weight`); normalised name -> organisations of that name."""

    words: dict[str, np.ndarray]
    form_org: np.ndarray
    form_weight: np.ndarray
    by_norm: dict[str, frozenset[int]]
    max_org: int


class _OrgScorer:
    """Organisation id -> match score for one query: 2.0 for the same name (in either script),
    else the best `_weighted_jaccard` of the query's words and one of the organisation's names."""

    def __init__(self, env: AcademicEnvironment, organization: str):
        self._env = env
        self._q_norm = normalize(organization)
        self._q_tokens = frozenset(self._q_norm.split())
        self._q_weight = _org_weight(self._q_tokens)
        self._cache: dict[int, float] = {}

    def __call__(self, org_id: int) -> float:
        s = self._cache.get(org_id)
        if s is None:
            s = self._cache[org_id] = (
                2.0
                if self._q_norm in self._env._org_norms[org_id]
                else max(_weighted_jaccard(self._q_tokens, tokens) for tokens in self._env._org_tokens[org_id])
            )
        return s

    def best(self, org_ids: list[int], n: int) -> list[int]:
        """The n best of `org_ids` by (score desc, id), as sorting them by `self` would give,
        scored at once through the word index: only the names sharing a word with the query
        count, and |q u t| = |q| + |t| - |q n t| in (integer) weights, so each score is
        `_weighted_jaccard`'s to the last bit."""
        index = self._env._org_word_index()
        shared = np.zeros(len(index.form_org), dtype=np.int64)
        for t in self._q_tokens:
            forms = index.words.get(t)
            if forms is not None:
                shared[forms] += _org_weight((t,))
        forms = np.flatnonzero(shared)  # ascending, and an organisation's forms are adjacent
        union = self._q_weight + index.form_weight[forms] - shared[forms]
        form_score = shared[forms] / union  # union >= the query's weight > 0
        orgs = index.form_org[forms]
        org_score = np.zeros(index.max_org + 1)
        if len(forms):
            starts = np.flatnonzero(np.concatenate([[True], orgs[1:] != orgs[:-1]]))
            org_score[orgs[starts]] = np.maximum.reduceat(form_score, starts)
        ids = np.array(org_ids, dtype=np.int64)
        scores = org_score[ids]
        same_name = index.by_norm.get(self._q_norm)
        for org_id in same_name or ():
            scores[ids == org_id] = 2.0
        order = np.lexsort((ids, -scores))[:n]
        for k in order.tolist():
            self._cache[org_ids[k]] = float(scores[k])
        return [org_ids[k] for k in order.tolist()]


def _interest_scorer(field_scores: dict[str, float]) -> Callable[[str], float]:
    """A scholar's interests (their JSON list, as stored) -> the best score of one of them.

    A field is among the interests when its JSON string is in the list's text: the only quotes
    in `["a", "b"]` delimit the names, which hold none themselves. That spares a json.loads per
    candidate, which was most of the ranking's time.
    """
    if not field_scores:
        return lambda interests: 0.0
    if any('"' in f or "\\" in f for f in field_scores):
        return lambda interests: max((field_scores.get(i, 0.0) for i in json.loads(interests)), default=0.0)
    encoded = sorted(((json.dumps(f), s) for f, s in field_scores.items()), key=lambda e: -e[1])

    def best(interests: str) -> float:
        for name, score in encoded:  # best score first: the first field found is the best
            if name in interests:
                return score
        return 0.0

    return best


def _marks(values: list) -> str:
    return ", ".join("?" * len(values))


def open_environment(db_path: str) -> AcademicEnvironment:
    """Factory used by the sandbox subprocess (import path `soay.environment.academic:open_environment`)."""
    return AcademicEnvironment(db_path)
