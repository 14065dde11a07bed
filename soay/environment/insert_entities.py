"""Add given scholars and publications to a copy of the academic corpus, so that its APIs answer about them.

The open-world benchmark (benchmarks/open_world_bench.py) asks about people the generator never
made. Its entities file (benchmarks/open_world/entities.yaml) lists them; this module writes them
into a corpus built by `build_academic_corpus` the way the generator would have written them, so
that every API of soay/environment/academic.py finds them:

* a scholar becomes a `person` row (new ids after the corpus's last, so rows stay numbered 1..N),
  with its Chinese name in `name_zh` (corpus layout 3) and `person_fts` over the name and also the
  Chinese name and aliases (searchPerson finds the scholar by any of them), `person_interest` rows,
  and the organisation: an existing one of the same (normalised) name or Chinese name, else a new
  `organization` row (its Chinese name in `name_zh` and indexed too). Chinese text is indexed the
  way the generator indexes it, a character a word (`fts_words`);
* an interest the corpus has no field for becomes a new `field` row, so that searchPerson's
  interest matching and its no-name group search see it;
* a publication becomes a `publication` row (a new `venue` when the corpus has none of that name)
  and `authorship` rows in byline order.

What the corpus derives, and how the inserted facts are kept consistent with it:

* co-authors and their joint-paper counts are read off `authorship` (getCoauthors). A declared
  co-authorship whose `joint` count exceeds the listed publications the two share gets filler
  publications of the pair (0 citations, dated inside both careers so that first/latest and most
  cited questions about the listed papers keep their answers); `fill_joint=False` leaves them out.
* the relation (advisor/student/coauthor) is read off the `advising` table (corpus layout 2): each
  declared advisor/student link is written there, so getCoauthors reports it whatever the two
  positions. The record holds one advisor per student: a student declared with two is reported,
  and the last declared is kept. A corpus of an older layout (no `advising` table) is refused.
* a position the corpus does not know is mapped to the closest known one (getPersonBasicInfo
  shows one of the corpus's positions), and reported.
* `num_pubs` and `num_citation` of the profile are the declared ones (as AMiner's profile counts
  papers its lists page through); undeclared, they are derived like the generator's: the number of
  the scholar's publications and the sum of their citations.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from soay.environment import academic_pools as names
from soay.environment.academic import AcademicEnvironment
from soay.environment.academic_search import build_search_indexes
from soay.environment.text import fts_words, normalize

OPEN_WORLD_AREA = "open_world"
"""The area of a field that an inserted interest adds."""
FILLER_VENUE = "arXiv"
_KNOWN_POSITIONS = {p.casefold(): p for p, _, _, _ in names.POSITIONS}
_POSITION_WORDS = (  # (words in a declared position, the corpus's position), first match wins
    (("phd student", "phd candidate", "doctoral", "graduate student", "student"), "PhD Student"),
    (("postdoc", "post-doc", "postdoctoral"), "Postdoc"),
    (("intern",), "Research Intern"),
    (("assistant professor", "lecturer"), "Assistant Professor"),
    (("associate professor", "senior lecturer", "reader"), "Associate Professor"),
    (("professor", "chair"), "Professor"),
    (("principal",), "Principal Researcher"),
    (("director", "head of"), "Research Director"),
    (("senior",), "Senior Researcher"),
    (("scientist", "engineer"), "Research Scientist"),
    (("researcher", "fellow", "research"), "Researcher"),
)
_DEFAULT_POSITION = "Researcher"
"""A scholar declared without a position: a middle tier."""


class Coauthor(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    relation: str = "coauthor"
    """From the declaring scholar's side: "advisor" names their advisor, "student" their student."""
    joint: int = Field(1, ge=1)


class Scholar(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    name: str = Field(min_length=1)
    name_zh: str | None = None
    aliases: list[str] = Field(default_factory=list)
    """Other ways of writing the organisation ("PolyU", "清华")."""
    name_aliases: list[str] = Field(default_factory=list)
    """Other spellings of the name ("Zoe Mueller", "Tang Mingzhe")."""
    organization: str = Field(min_length=1)
    organization_zh: str | None = None
    interests: list[str] = Field(default_factory=list)
    interests_zh: list[str] = Field(default_factory=list)
    """The interests' Chinese names, in the same order."""
    num_citation: int | None = Field(None, ge=0)
    num_pubs: int | None = Field(None, ge=0)
    gender: str | None = None
    position: str | None = None
    email: str | None = None
    education: str | None = None
    bio: str | None = None
    coauthors: list[Coauthor] = Field(default_factory=list)


class Publication(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    title: str = Field(min_length=1)
    year: int
    venue: str | None = None
    abstract: str | None = None
    authors: list[str] = Field(min_length=1)
    num_citation: int = Field(0, ge=0)
    pdf_url: str | None = None


class Entities(BaseModel):
    model_config = ConfigDict(extra="ignore")

    scholars: list[Scholar] = Field(default_factory=list)
    publications: list[Publication] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Entities:
        ids = [s.id for s in self.scholars]
        if dupes := sorted(i for i, n in Counter(ids).items() if n > 1):
            raise ValueError(f"scholar ids used twice: {', '.join(dupes)}")
        if dupes := sorted(i for i, n in Counter(p.id for p in self.publications).items() if n > 1):
            raise ValueError(f"publication ids used twice: {', '.join(dupes)}")
        known = set(ids)
        for p in self.publications:
            if unknown := [a for a in p.authors if a not in known]:
                raise ValueError(f"publication {p.id}: authors {', '.join(unknown)} are not scholars of the file")
        for s in self.scholars:
            if unknown := [c.id for c in s.coauthors if c.id not in known]:
                raise ValueError(f"scholar {s.id}: co-authors {', '.join(unknown)} are not scholars of the file")
        return self


def load_entities(path: Path) -> Entities:
    """The entities file (benchmarks/open_world/entities.yaml), validated."""
    return Entities.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})


@dataclass
class Inserted:
    """What an insertion wrote: the corpus ids of the entities, and how derived fields were made consistent."""

    person_ids: dict[str, str] = field(default_factory=dict)
    """Entity id (s001) -> the person's 24-hex id."""
    publication_ids: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fillers: int = 0
    """Filler publications written so that declared joint-paper counts hold."""
    joint_filled: bool = True
    """Whether declared joint counts beyond the listed papers were filled (`fill_joint`)."""

    def to_dict(self) -> dict[str, Any]:
        return {"person_ids": self.person_ids, "publication_ids": self.publication_ids, "fillers": self.fillers, "notes": self.notes}


def entity_pid(kind: str, entity_id: str) -> str:
    """A 24-hex id for an inserted entity, deterministic in its kind and id."""
    return hashlib.blake2b(f"open-world:{kind}:{entity_id}".encode(), digest_size=12).hexdigest()


def corpus_position(declared: str | None) -> str:
    """The corpus's position for a declared one: itself when the corpus knows it, else the closest."""
    if not declared:
        return _DEFAULT_POSITION
    if declared.casefold() in _KNOWN_POSITIONS:
        return _KNOWN_POSITIONS[declared.casefold()]
    text = declared.casefold()
    return next((position for words, position in _POSITION_WORDS if any(w in text for w in words)), _DEFAULT_POSITION)


def insert_entities(db_path: Path, entities: Entities, fill_joint: bool = True) -> Inserted:
    """Write `entities` into the corpus at `db_path` (a copy: it is changed in place), in one
    transaction, then rewrite the search structures derived from its full-text indexes, which
    would otherwise not know the new names and titles."""
    conn = sqlite3.connect(db_path)
    try:
        with conn:
            inserted = _Writer(conn, entities, fill_joint).write()
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'person_term'").fetchone():
            build_search_indexes(conn)
    finally:
        conn.close()
    return inserted


class _Writer:
    def __init__(self, conn: sqlite3.Connection, entities: Entities, fill_joint: bool) -> None:
        self.conn, self.entities, self.fill_joint = conn, entities, fill_joint
        self.out = Inserted(joint_filled=fill_joint)
        self.tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "advising" not in self.tables:
            raise ValueError("the corpus has no advising table (a layout before 2): rebuild it with `soay corpus build`")
        # Layout 3 has Chinese names (name_zh) of persons, organisations and fields; a layout-2
        # corpus takes the scholars without them (the names are still indexed).
        self.zh = {t: any(r[1] == "name_zh" for r in conn.execute(f"PRAGMA table_info({t})")) for t in ("person", "organization")}
        self.row: dict[str, int] = {}  # scholar id -> person row id
        self.org: dict[str, int] = {}  # scholar id -> organization row id

    def write(self) -> Inserted:
        scholars = self.entities.scholars
        for s in scholars:
            pid = entity_pid("person", s.id)
            if self._scalar("SELECT 1 FROM person WHERE pid = ?", pid):
                raise ValueError(f"scholar {s.id} is in this corpus already: insert the entities into a fresh copy")
            self.out.person_ids[s.id] = pid
        for p in self.entities.publications:
            self.out.publication_ids[p.id] = entity_pid("publication", p.id)
        fields = self._fields()
        for s in scholars:
            self.org[s.id] = self._organization(s)
        next_person = (self._scalar("SELECT max(id) FROM person") or 0) + 1
        for k, s in enumerate(scholars):
            self.row[s.id] = next_person + k
        pubs = self._publications()
        pubs += self._fillers(pubs)
        self._persons(pubs, fields)
        self._advising()
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('open_world_entities', ?)",
                          (json.dumps({"scholars": len(scholars), "publications": len(self.entities.publications),
                                       "fillers": self.out.fillers}),))
        return self.out

    # ---------------------------------------------------------------- organisations and fields

    def _organization(self, s: Scholar) -> int:
        norm = normalize(s.organization)
        found = self._scalar("SELECT id FROM organization WHERE name_norm = ?", norm)
        if found is None and s.organization_zh and self.zh["organization"]:
            found = self._scalar("SELECT id FROM organization WHERE name_zh = ?", s.organization_zh.strip())
        if found is None:
            found = (self._scalar("SELECT max(id) FROM organization") or 0) + 1
            domain = s.email.rpartition("@")[2] if s.email and "@" in s.email else f"{norm.replace(' ', '')[:24] or 'org'}.example"
            row = (found, s.organization, norm, _organization_kind(norm), "", domain)
            if self.zh["organization"]:
                self.conn.execute("INSERT INTO organization VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, (s.organization_zh or "").strip()))
            else:
                self.conn.execute("INSERT INTO organization VALUES (?, ?, ?, ?, ?, ?)", row)
            self.conn.execute("INSERT INTO organization_fts(rowid, name) VALUES (?, ?)", (found, s.organization))
            self.out.notes.append(f"organisation {s.organization!r} added")
        for other in dict.fromkeys([*([s.organization_zh] if s.organization_zh else []), *s.aliases]):
            if not self._scalar("SELECT 1 FROM organization_fts WHERE organization_fts MATCH ? AND rowid = ?", _phrase(other), found):
                # another index entry of the same organisation: found by its Chinese name and short forms too
                self.conn.execute("INSERT INTO organization_fts(rowid, name) VALUES (?, ?)", (found, fts_words(other)))
        return found

    def _fields(self) -> dict[str, str]:
        """Declared interest -> the corpus's field name, adding a field for each new one."""
        existing = {normalize(name): name for (name,) in self.conn.execute("SELECT name FROM field")}
        zh_column = any(r[1] == "name_zh" for r in self.conn.execute("PRAGMA table_info(field)"))
        if zh_column:
            # an interest declared in Chinese is the field of that Chinese name
            for name, name_zh in self.conn.execute("SELECT name, name_zh FROM field WHERE name_zh != ''"):
                existing.setdefault(normalize(name_zh), name)
        out: dict[str, str] = {}
        next_id = (self._scalar("SELECT max(id) FROM field") or 0) + 1
        for s in self.entities.scholars:
            for interest, interest_zh in zip(s.interests, [*s.interests_zh, *[""] * len(s.interests)]):
                key = normalize(interest)
                if not key or interest in out:
                    continue
                if key not in existing and zh_column:  # with its Chinese name, so that a question in Chinese finds it
                    self.conn.execute("INSERT INTO field(id, name, area, name_zh) VALUES (?, ?, ?, ?)",
                                      (next_id, interest, OPEN_WORLD_AREA, interest_zh.strip()))
                elif key not in existing:
                    self.conn.execute("INSERT INTO field(id, name, area) VALUES (?, ?, ?)", (next_id, interest, OPEN_WORLD_AREA))
                elif zh_column and interest_zh:
                    self.conn.execute("UPDATE field SET name_zh = ? WHERE name = ? AND name_zh = ''", (interest_zh.strip(), existing[key]))
                if key not in existing:
                    existing[key] = interest
                    next_id += 1
                    self.out.notes.append(f"field {interest!r} added")
                out[interest] = existing[key]
        return out

    def _venue(self, name: str) -> int:
        found = self._scalar("SELECT id FROM venue WHERE lower(name) = lower(?)", name)
        if found is None:
            found = (self._scalar("SELECT max(id) FROM venue") or 0) + 1
            self.conn.execute("INSERT INTO venue VALUES (?, ?, ?)", (found, name, 0.5))
            self.out.notes.append(f"venue {name!r} added")
        return found

    # ---------------------------------------------------------------- publications

    def _publications(self) -> list[tuple[str, list[str], int, int]]:
        """Insert the declared publications; (title, author ids, year, citations) of each."""
        written = []
        next_id = (self._scalar("SELECT max(id) FROM publication") or 0) + 1
        for k, p in enumerate(self.entities.publications):
            if self._scalar("SELECT 1 FROM publication WHERE title_norm = ?", normalize(p.title)):
                self.out.notes.append(f"publication {p.id}: the corpus has a publication of the same title; searchPublication may return either first")
            pid = self.out.publication_ids[p.id]
            self._publication(next_id + k, pid, p.title, p.year, p.abstract or "", p.venue or FILLER_VENUE, p.num_citation,
                              p.pdf_url or f"https://pdf.aminer-corpus.example/{p.year}/{pid}.pdf", p.authors)
            written.append((p.title, p.authors, p.year, p.num_citation))
        return written

    def _publication(self, row: int, pid: str, title: str, year: int, abstract: str, venue: str, citations: int, pdf: str,
                     authors: list[str]) -> None:
        self.conn.execute("INSERT INTO publication VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (row, pid, title, normalize(title), year, abstract, self._venue(venue), citations, pdf))
        self.conn.execute("INSERT INTO publication_fts(rowid, title) VALUES (?, ?)", (row, title))
        self.conn.executemany("INSERT INTO authorship VALUES (?, ?, ?)", [(row, i, self.row[a]) for i, a in enumerate(authors)])

    def _fillers(self, pubs: list[tuple[str, list[str], int, int]]) -> list[tuple[str, list[str], int, int]]:
        """Publications of a pair whose declared joint count exceeds the listed papers they share."""
        declared: dict[tuple[str, str], int] = {}
        for s in self.entities.scholars:
            for c in s.coauthors:
                if c.id == s.id:
                    continue
                pair = tuple(sorted((s.id, c.id)))
                declared[pair] = max(declared.get(pair, 0), c.joint)
        shared = Counter(tuple(sorted((a, b))) for _, authors, _, _ in pubs for a in set(authors) for b in set(authors) if a < b)
        years: dict[str, list[int]] = {}
        for _, authors, year, _ in pubs:
            for a in authors:
                years.setdefault(a, []).append(year)
        names_of = {s.id: s.name for s in self.entities.scholars}
        written: list[tuple[str, list[str], int, int]] = []
        next_id = (self._scalar("SELECT max(id) FROM publication") or 0) + 1
        for (a, b), joint in sorted(declared.items()):
            missing = joint - shared[(a, b)]
            if missing <= 0:
                if missing < 0:
                    self.out.notes.append(f"{a} and {b}: declared {joint} joint papers, the listed publications give {shared[(a, b)]}")
                continue
            if not self.fill_joint:
                self.out.notes.append(f"{a} and {b}: declared {joint} joint papers, only {shared[(a, b)]} listed (not filled)")
                continue
            year = _filler_year(years.get(a, []), years.get(b, []))
            for k in range(missing):
                title = f"Joint Work of {names_of[a]} and {names_of[b]} ({k + 1})"
                pid = entity_pid("filler", f"{a}:{b}:{k}")
                self._publication(next_id, pid, title, year, "", FILLER_VENUE, 0, f"https://pdf.aminer-corpus.example/{year}/{pid}.pdf", [a, b])
                written.append((title, [a, b], year, 0))
                next_id += 1
            self.out.fillers += missing
            self.out.notes.append(f"{a} and {b}: {missing} filler publication(s) ({year}, 0 citations) make the {joint} declared joint papers")
        return written

    # ---------------------------------------------------------------- persons

    def _persons(self, pubs: list[tuple[str, list[str], int, int]], fields: dict[str, str]) -> None:
        counts: Counter[str] = Counter(a for _, authors, _, _ in pubs for a in set(authors))
        citations: Counter[str] = Counter()
        for _, authors, _, cites in pubs:
            for a in set(authors):
                citations[a] += cites
        for s in self.entities.scholars:
            row, pid = self.row[s.id], self.out.person_ids[s.id]
            position = corpus_position(s.position)
            if s.position and position != s.position:
                self.out.notes.append(f"{s.id}: position {s.position!r} is written as the corpus's {position!r}")
            interests = list(dict.fromkeys(fields[i] for i in s.interests if i in fields))
            num_pubs = s.num_pubs if s.num_pubs is not None else counts[s.id]
            num_citation = s.num_citation if s.num_citation is not None else citations[s.id]
            org_domain = self._scalar("SELECT domain FROM organization WHERE id = ?", self.org[s.id])
            email = s.email or f"{normalize(s.name).replace(' ', '.')}@{org_domain}"
            bio = s.bio if s.bio is not None else ""
            values = (row, pid, s.name, normalize(s.name), s.gender or "", self.org[s.id], position, bio, s.education or "",
                      email, json.dumps(interests, ensure_ascii=False), num_citation, num_pubs)
            if self.zh["person"]:
                values += ((s.name_zh or "").strip(),)
            self.conn.execute(f"INSERT INTO person VALUES ({', '.join('?' * len(values))})", values)
            self.conn.executemany("INSERT INTO person_interest VALUES (?, ?, ?, ?)",
                                  [(self._scalar("SELECT id FROM field WHERE name = ?", f), row, rank, num_citation)
                                   for rank, f in enumerate(interests)])
            # one index entry per way of writing the name: searchPerson finds the scholar by each
            for text in dict.fromkeys([s.name, *([s.name_zh] if s.name_zh else []), *s.name_aliases]):
                self.conn.execute("INSERT INTO person_fts(rowid, name) VALUES (?, ?)", (row, fts_words(text)))

    def _advising(self) -> None:
        """Declared advisor/student links, written to the advising table that getCoauthors reads
        (one advisor per student: a second declared advisor is reported, the last one kept)."""
        advisor_of: dict[str, str] = {}
        for s in self.entities.scholars:
            for c in s.coauthors:
                if c.relation not in ("advisor", "student") or c.id == s.id:
                    continue
                student, advisor = (s.id, c.id) if c.relation == "advisor" else (c.id, s.id)
                if advisor_of.get(student, advisor) != advisor:
                    self.out.notes.append(f"{student}: declared advisors {advisor_of[student]} and {advisor}; "
                                          f"the advising record holds one, {advisor}")
                advisor_of[student] = advisor
        self.conn.executemany("INSERT OR REPLACE INTO advising(student_id, advisor_id) VALUES (?, ?)",
                              [(self.row[student], self.row[advisor]) for student, advisor in advisor_of.items()])

    def _scalar(self, sql: str, *params: Any) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None


def _phrase(text: str) -> str:
    """An FTS5 query for the words of `text`, in order."""
    return '"' + normalize(text).replace('"', " ") + '"'


def _organization_kind(norm: str) -> str:
    words = set(norm.split())
    if words & {"university", "college", "school", "universität", "université", "universidad"}:
        return "university"
    if words & {"institute", "academy", "laboratory", "lab", "labs", "center", "centre", "institut"}:
        return "institute"
    return "company"


def _filler_year(a: list[int], b: list[int]) -> int:
    """A year inside both scholars' listed careers where possible: never before either's first
    listed paper (first-publication questions), never after either's last (latest-paper ones)."""
    if not a and not b:
        return 2015
    low = max(min(a or b), min(b or a))
    high = min(max(a or b), max(b or a))
    return min(low, high)


def check_entities(db_path: Path, entities: Entities, inserted: Inserted) -> dict[str, Any]:
    """Read the inserted facts back through the APIs: each scholar found by name (and first by
    name and organisation), their co-authors with the declared joint counts, their publications,
    and each publication's record. Returns counts and a list of problems (empty when all hold)."""
    problems: list[str] = []
    counts = Counter()
    pid = inserted.person_ids
    with AcademicEnvironment(db_path) as env:
        for s in entities.scholars:
            for text in dict.fromkeys([s.name, *([s.name_zh] if s.name_zh else []), *s.name_aliases]):
                counts["names"] += 1
                hits = [h["person_id"] for h in env.searchPerson(name=text)]
                if pid[s.id] in hits:
                    counts["found_by_name"] += 1
                else:
                    problems.append(f"{s.id}: searchPerson(name={text!r}) does not find it")
            first = env.searchPerson(name=s.name, organization=s.organization)
            if first and first[0]["person_id"] == pid[s.id]:
                counts["first_by_name_and_organization"] += 1
            else:
                problems.append(f"{s.id}: searchPerson(name, organization) puts {first[0]['name'] if first else 'nobody'} first")
            coauthors = {c["person_id"]: c for c in env.getCoauthors(pid[s.id])}
            for c in s.coauthors:
                got = coauthors.get(pid[c.id])
                if got is None:
                    problems.append(f"{s.id}: getCoauthors misses {c.id}")
                elif inserted.joint_filled and got["num_joint_pubs"] < c.joint:
                    problems.append(f"{s.id}: getCoauthors gives {got['num_joint_pubs']} joint papers with {c.id}, declared {c.joint}")
                elif got["relation"] != c.relation:
                    counts["relations_derived_otherwise"] += 1
            titles = {p["title"] for p in env.getPersonPubs(pid[s.id])}
            for p in entities.publications:
                if s.id in p.authors and p.title not in titles:
                    problems.append(f"{s.id}: getPersonPubs misses {p.id}")
        for p in entities.publications:
            record = env.getPublication(inserted.publication_ids[p.id])
            authors = [a["person_id"] for a in record.get("authors", [])]
            if record.get("title") != p.title or record.get("year") != p.year or authors != [pid[a] for a in p.authors]:
                problems.append(f"{p.id}: getPublication does not return the declared title, year and byline")
            hits = [h["pub_id"] for h in env.searchPublication(p.title)]
            if inserted.publication_ids[p.id] not in hits[:1]:
                problems.append(f"{p.id}: searchPublication(title) does not put it first")
    return {"scholars": len(entities.scholars), "publications": len(entities.publications), **counts, "problems": problems}

