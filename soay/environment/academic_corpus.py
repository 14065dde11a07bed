"""Seeded generator of the academic corpus behind the AMiner-style environment, written to SQLite.

The pipeline needs a corpus that behaves like AMiner where it matters for SoAy: scholars with
shared names (so that `searchPerson` needs the organisation or interest to pick the right one),
long-tailed productivity and citations (so that "the most cited paper" is a meaningful
question), co-authorship with advisor/student structure, and unique publication titles (so that
`searchPublication` on a title is answerable).  Everything is drawn from one seed with numpy,
so the same seed gives the same content, and the numeric skeleton is generated in one go while
the strings are rendered and inserted in chunks, which keeps memory bounded at a million
scholars.

Generative story, in order:
  organisations (real names first, then template-built; Zipf-like sizes)
  -> scholars (organisation, culture from the organisation's country, name, career age,
     position, talent, advisor for students, 2-5 interests coherent with the advisor's)
  -> publications (a non-student lead drawn by talent and seniority, 1-8 authors from the
     lead's students, colleagues and same-field scholars; byline with students first and the
     lead last; field from the lead's interests; year inside every author's career; venue from
     the field's area; lognormal citations growing with age, lead talent and venue prestige)
  -> every scholar without a paper gets one with their advisor, so profiles are never empty.

Chinese renderings (layout 3): a scholar of Chinese origin also has their name in characters
("Wei Wang" -> 王伟, surname first), drawn per scholar from the characters a pinyin syllable is
written with; an organisation has its Chinese name (a table for the real ones, composed from the
city and template for the built ones; none for a coined company brand or a person-named
institute); a field has its Chinese name. The tables are data, in chinese_renderings.yaml. The
full-text indexes hold both scripts, a Chinese character being a word of its own, so a search
written in either finds the same rows.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from soay.environment import academic_pools as names
from soay.environment.academic_search import build_search_indexes
from soay.environment.text import FTS_TOKENIZER, fts_words, normalize
from soay.files import atomic_path

Progress = Callable[[str, int, int], None]

CURRENT_YEAR = 2025
FIRST_YEAR = 1990
PAPERS_PER_PERSON = 2.0  # lead-drawn papers per scholar, before the zero-paper fix-up
AUTHOR_COUNT_P = (0.07, 0.17, 0.24, 0.20, 0.13, 0.09, 0.05, 0.05)  # P(1..8 authors)
MAX_AUTHORS = len(AUTHOR_COUNT_P)
MAX_INTERESTS = 5
MIN_DUPLICATE_NAME_FRACTION = 0.12
CHUNK = 50_000
SCHEMA_VERSION = 3  # 2: the advising table; 3: Chinese renderings (name_zh) of persons, organisations, fields
CHINESE_CULTURE = names.CULTURE_NAMES.index("chinese")
RENDERINGS = Path(__file__).with_name("chinese_renderings.yaml")


@cache
def chinese_renderings() -> dict[str, Any]:
    """The Chinese rendering tables (chinese_renderings.yaml): surnames and given-name syllables
    to characters, organisations, cities, organisation templates and fields to Chinese."""
    return yaml.safe_load(RENDERINGS.read_text(encoding="utf-8"))


def public_id(seed: int, kind: str, row: int) -> str:
    """A 24-hex-digit id like AMiner's, deterministic in (seed, kind, row)."""
    return hashlib.blake2b(f"{seed}:{kind}:{row}".encode(), digest_size=12).hexdigest()


def build_academic_corpus(
    db_path: Path,
    n_persons: int = 20_000,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Generate the corpus for `seed` and write it to `db_path` atomically; return its counts.

    The database is written to a temporary file next to `db_path` and renamed when complete,
    so a reader never sees a half-built corpus.  `progress(stage, done, total)` is called as
    chunks are written.
    """
    if n_persons < 100:
        raise ValueError("n_persons must be at least 100")
    started = time.perf_counter()
    report = progress or (lambda stage, done, total: None)

    rng = np.random.default_rng(seed)
    pools = _NamePools(rng)
    vocab = _Vocabulary()
    orgs = _make_organizations(rng, max(60, n_persons // 40), vocab)
    report("organizations", len(orgs.names), len(orgs.names))
    persons = _make_persons(rng, n_persons, orgs, pools, vocab)
    papers = _make_papers(rng, persons, vocab)
    persons.num_pubs, persons.num_citation = papers.person_totals(n_persons)

    with atomic_path(db_path) as tmp_path, closing(sqlite3.connect(tmp_path)) as conn:
        _write(conn, seed, orgs, persons, papers, pools, vocab, report)
        counts = {
            "organizations": len(orgs.names),
            "fields": len(vocab.fields),
            "venues": len(vocab.venue_names),
            "persons": n_persons,
            "publications": papers.n,
            "authorships": int(papers.n_authorships),
            "duplicate_name_persons": int(persons.duplicate_name_count()),
        }
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [
                ("domain", "aminer"),
                ("schema_version", str(SCHEMA_VERSION)),
                ("size", str(n_persons)),
                ("seed", str(seed)),
                ("counts", json.dumps(counts, sort_keys=True)),
            ],
        )
        conn.commit()
    report("done", 1, 1)
    counts["build_seconds"] = round(time.perf_counter() - started, 2)
    return counts


# --------------------------------------------------------------------------------------------
# Vectorised sampling helpers.
# --------------------------------------------------------------------------------------------


def _zipf(n: int, exponent: float, offset: float) -> np.ndarray:
    """Normalised Zipf-like weights for ranks 1..n (offset flattens the head)."""
    w = 1.0 / (np.arange(1, n + 1) + offset) ** exponent
    return w / w.sum()


def _draw(rng: np.random.Generator, p: np.ndarray, size: int) -> np.ndarray:
    """Indices drawn from the probability vector `p` (faster than rng.choice for big sizes)."""
    cum = np.cumsum(p)
    return np.minimum(np.searchsorted(cum, rng.random(size) * cum[-1], side="right"), len(p) - 1)


class _GroupSampler:
    """Weighted draws of a member of a given group, for many draws at once.

    Members are sorted by group and their weights cumulated once; a draw for group g is a
    uniform number in g's slice of the cumulative sum, located by binary search.  Draws for a
    group without (positively weighted) members give -1.
    """

    def __init__(self, group: np.ndarray, weight: np.ndarray, n_groups: int):
        order = np.argsort(group, kind="stable")
        counts = np.bincount(group, minlength=n_groups)
        self.members = order
        self.end = np.cumsum(counts)
        self.start = self.end - counts
        self.cum = np.cumsum(weight[order].astype(np.float64))
        padded = np.concatenate([[0.0], self.cum])
        self.lo = padded[self.start]
        self.hi = padded[self.end]

    def sample(self, rng: np.random.Generator, groups: np.ndarray) -> np.ndarray:
        lo, hi = self.lo[groups], self.hi[groups]
        pos = np.searchsorted(self.cum, lo + rng.random(len(groups)) * (hi - lo), side="right")
        pos = np.clip(pos, self.start[groups], np.maximum(self.end[groups] - 1, 0))
        out = self.members[np.minimum(pos, len(self.members) - 1)] if len(self.members) else pos
        return np.where(hi > lo, out, -1)


def _blank_duplicates(matrix: np.ndarray) -> np.ndarray:
    """A copy with repeated values within each row set to -1 (the first occurrence stays)."""
    m = matrix.copy()
    for j in range(1, m.shape[1]):
        for i in range(j):
            m[(m[:, j] == m[:, i]) & (m[:, j] >= 0), j] = -1
    return m


def _dedupe_rows(matrix: np.ndarray) -> np.ndarray:
    """Drop repeated values within each row, moving the blanks (-1) to the end, order kept."""
    m = _blank_duplicates(matrix)
    return np.take_along_axis(m, np.argsort(m < 0, axis=1, kind="stable"), axis=1)


def _hash64(texts: list[str]) -> np.ndarray:
    """Deterministic 64-bit fingerprints (a collision only costs a redraw, never a duplicate)."""
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts),
        dtype=np.uint64,
        count=len(texts),
    )


def _title_case(phrase: str) -> str:
    """Title case that keeps acronyms ("SLAM", "3D") and small words ("for", "of") as they are."""

    def word(w: str, first: bool) -> str:
        parts = w.split("-")
        return "-".join(
            p if (k > 0 or not first) and p in names.SMALL_WORDS else p[:1].upper() + p[1:] for k, p in enumerate(parts)
        )

    return " ".join(word(w, i == 0) for i, w in enumerate(phrase.split(" ")))


def _ascii_slug(text: str) -> str:
    return normalize(text).replace(" ", "").encode("ascii", "ignore").decode()


def _chunks(total: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, CHUNK):
        yield start, min(total, start + CHUNK)


# --------------------------------------------------------------------------------------------
# Vocabulary: fields, venues and name pools, indexed for numpy.
# --------------------------------------------------------------------------------------------


class _Vocabulary:
    """Fields, areas and venues of the academic pools (academic_pools.yaml) as arrays the generator can index."""

    def __init__(self) -> None:
        self.fields = [f.name for f in names.FIELDS]
        self.areas = list(names.AREAS)
        self.field_area = np.array([self.areas.index(f.area) for f in names.FIELDS])
        self.field_popularity = np.array([f.popularity for f in names.FIELDS])
        self.field_title = [_title_case(f) for f in self.fields]
        self.fields_zh = [chinese_renderings()["fields"].get(f, "") for f in self.fields]
        # Topics per field and methods per area, flattened with offsets.
        self.topics = [t for f in names.FIELDS for t in f.topics]
        topic_len = np.array([len(f.topics) for f in names.FIELDS])
        self.topic_off, self.topic_len = np.cumsum(topic_len) - topic_len, topic_len
        self.methods = [m for a in names.AREAS.values() for m in a.methods]
        method_len = np.array([len(a.methods) for a in names.AREAS.values()])
        self.method_off, self.method_len = np.cumsum(method_len) - method_len, method_len
        self.topics_title = [_title_case(t) for t in self.topics]
        self.methods_title = [_title_case(m) for m in self.methods]
        self.adjectives_title = [_title_case(a) for a in names.TITLE_ADJECTIVES]
        self.domains_title = [_title_case(d) for d in names.APPLICATION_DOMAINS]
        self.properties_title = [_title_case(p) for p in names.PROPERTIES]
        # Venues: unique names; an area lists (venue, prestige) entries, weighted to the top.
        self.venue_names: list[str] = []
        self.venue_prestige: list[float] = []
        entry_area, entry_venue, entry_weight = [], [], []
        for a, area in enumerate(names.AREAS.values()):
            for venue, prestige in area.venues:
                if venue not in self.venue_names:
                    self.venue_names.append(venue)
                    self.venue_prestige.append(prestige)
                entry_area.append(a)
                entry_venue.append(self.venue_names.index(venue))
                entry_weight.append(0.4 + prestige)
        self.venue_entry = np.array(entry_venue)
        self.venue_sampler = _GroupSampler(np.array(entry_area), np.array(entry_weight), len(self.areas))
        self.prestige = np.array(self.venue_prestige)
        self.abstract_methods = [t.replace("a {a}", "{art} {a}") for t in names.ABSTRACT_METHODS]
        # Positions.
        self.positions = [p[0] for p in names.POSITIONS]
        self.position_tier = np.array([("junior", "middle", "senior").index(p[3]) for p in names.POSITIONS])


class _NamePools:
    """Given names and surnames of every culture, Zipf-weighted, unique by normalised form."""

    def __init__(self, rng: np.random.Generator):
        self.given: list[str] = []
        self.surnames: list[str] = []
        self._given_index: dict[str, int] = {}
        self._surname_index: dict[str, int] = {}
        # (culture, gender) -> (given indices, probabilities); culture -> surnames likewise.
        self.given_pools: list[tuple[np.ndarray, np.ndarray]] = []
        self.surname_pools: list[tuple[np.ndarray, np.ndarray]] = []
        # Chinese given names (pool index) -> their pinyin syllables, for the Chinese rendering.
        self.given_syllables: dict[int, tuple[str, ...]] = {}
        for culture in names.CULTURE_NAMES:
            if culture == "chinese":
                given_lists = self._syllable_given(rng, names.CHINESE_SYLLABLES, 0.35)
                surnames = names.CHINESE_SURNAMES
                for given, _ in given_lists:
                    for g in given:
                        self.given_syllables.setdefault(
                            self._add(self.given, self._given_index, g), self._syllables_of(g)
                        )
            else:
                pool = names.CULTURES[culture]
                given_lists = [(list(pool[g]), _zipf(len(pool[g]), 0.7, 5.0)) for g in ("male", "female")]
                if culture == "korean":
                    generated = self._syllable_given(rng, names.KOREAN_SYLLABLES, 0.0)
                    given_lists = [
                        (head + more, np.concatenate([0.3 * w, 0.7 * more_w]))
                        for (head, w), (more, more_w) in zip(given_lists, generated)
                    ]
                surnames = pool["surnames"]
            for given, weights in given_lists:
                idx = np.array([self._add(self.given, self._given_index, g) for g in given])
                self.given_pools.append(self._merge(idx, weights))
            idx = np.array([self._add(self.surnames, self._surname_index, s) for s in surnames])
            self.surname_pools.append(self._merge(idx, _zipf(len(surnames), 0.8, 3.0)))

    @staticmethod
    def _syllables_of(given: str) -> tuple[str, ...]:
        """The syllables a Chinese given name was built from: itself when it is one ("Wei",
        "Yuxiao"), else the capitals of its parts ("JieWei" is never written; "Jiewei" is split
        after the longest first syllable whose rest is a syllable too)."""
        known = {s for s, _ in names.CHINESE_SYLLABLES}
        word = given.lower()
        if word in known:
            return (word,)
        for cut in range(len(word) - 1, 0, -1):
            if word[:cut] in known and word[cut:] in known:
                return (word[:cut], word[cut:])
        return (word,)

    @staticmethod
    def _add(pool: list[str], index: dict[str, int], name: str) -> int:
        key = normalize(name)
        if key not in index:
            index[key] = len(pool)
            pool.append(name)
        return index[key]

    @staticmethod
    def _merge(idx: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sum the weights of spellings that normalise to the same name."""
        values, inverse = np.unique(idx, return_inverse=True)
        return values, np.bincount(inverse, weights=weights) / weights.sum()

    @staticmethod
    def _syllable_given(
        rng: np.random.Generator, syllables: tuple[tuple[str, str], ...], single_share: float
    ) -> list[tuple[list[str], np.ndarray]]:
        """Male and female given names built from gender-tagged syllables, with weights.

        Single syllables (a share `single_share`, a few very common: "Wei", "Jie") come first;
        two-syllable names follow in a seeded order with a flatter distribution.  The balance
        sets how often full names repeat: enough to make disambiguation matter, not so much
        that a name and an organisation stop identifying most scholars.
        """
        out = []
        for gender in ("m", "f"):
            syll = [s for s, g in syllables if g in (gender, "n")]
            singles = [s.capitalize() for s in syll] if single_share else []
            pairs = [a.capitalize() + b for a in syll for b in syll if a != b]
            pairs = [pairs[i] for i in rng.permutation(len(pairs))]
            weights = np.concatenate(
                [single_share * _zipf(len(singles), 1.0, 4.0), (1 - single_share) * _zipf(len(pairs), 0.5, 20.0)]
            )
            out.append((singles + pairs, weights))
        return out


class _ChineseNames:
    """Names of the scholars of Chinese origin in characters: surname first, then one character
    (or a written pair, for "Yuxiao") per syllable of the given name. Each is drawn per scholar
    from the characters the syllable is written with, the most common first with falling weights
    and by the gender the name leans to, so namesakes in pinyin are mostly namesakes in
    characters too ("Wei Wang" is mostly 王伟, sometimes 王威 or 汪伟)."""

    def __init__(self, pools: _NamePools):
        table = chinese_renderings()
        self.pools = pools
        self.surnames: dict[int, tuple[list[str], np.ndarray]] = {}
        for surname in names.CHINESE_SURNAMES:
            idx = pools._surname_index[normalize(surname)]
            self.surnames.setdefault(idx, self._choices(table["surnames"][surname]))
        # (syllable, female) -> choices
        self.syllables: dict[tuple[str, int], tuple[list[str], np.ndarray]] = {}
        for syllable, entry in table["given"].items():
            for female, key in ((0, "m"), (1, "f")):
                self.syllables[syllable, female] = self._choices(entry[key] if isinstance(entry, dict) else entry)

    @staticmethod
    def _choices(written: str) -> tuple[list[str], np.ndarray]:
        options = written.split()
        weights = 1.0 / (np.arange(len(options)) + 1.0) ** 2
        return options, np.cumsum(weights / weights.sum())

    @staticmethod
    def _pick(choices: tuple[list[str], np.ndarray], u: float) -> str:
        options, cum = choices
        return options[min(int(np.searchsorted(cum, u, side="right")), len(options) - 1)]

    def render(self, given: int, surname: int, female: int, u: list[float]) -> str:
        """The name in characters; "" for a name the tables do not cover."""
        syllables = self.pools.given_syllables.get(given)
        family = self.surnames.get(surname)
        if syllables is None or family is None:
            return ""
        out = [self._pick(family, u[0])]
        for k, syllable in enumerate(syllables):
            choices = self.syllables.get((syllable, female))
            if choices is None:
                return ""
            out.append(self._pick(choices, u[1 + k]))
        return "".join(out)


# --------------------------------------------------------------------------------------------
# Organisations.
# --------------------------------------------------------------------------------------------

_KINDS = ("university", "institute", "company")


class _Organizations:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[int] = []
        self.countries: list[str] = []
        self.domains: list[str] = []
        self.zh: list[str] = []  # the Chinese name, "" when there is none
        self._seen_names: set[str] = set()
        self._seen_domains: set[str] = set()
        self._seen_zh: set[str] = set()

    def add(self, name: str, kind: str, country: str, domain: str, zh: str = "") -> bool:
        """Add an organisation unless one of the same name exists; a Chinese name another one
        already has is dropped ("University of Chengdu" and "Chengdu University" are both
        成都大学 in Chinese: the first keeps it), so that a Chinese name names one place."""
        key = normalize(name)
        if key in self._seen_names:
            return False
        if zh in self._seen_zh:
            zh = ""
        elif zh:
            self._seen_zh.add(zh)
        self.zh.append(zh)
        base, n = domain, 1
        while domain in self._seen_domains:
            n += 1
            head, _, tail = base.partition(".")
            domain = f"{head}{n}.{tail}"
        self._seen_names.add(key)
        self._seen_domains.add(domain)
        self.names.append(name)
        self.kinds.append(_KINDS.index(kind))
        self.countries.append(country)
        self.domains.append(domain)
        return True


def _initials(text: str) -> str:
    return "".join(w[0] for w in normalize(text).split() if w not in names.SMALL_WORDS)


def _make_organizations(rng: np.random.Generator, n_orgs: int, vocab: _Vocabulary) -> _Organizations:
    """Real organisations first (they get the largest sizes), then unique template-built ones."""
    orgs = _Organizations()
    zh = chinese_renderings()
    for org in names.REAL_ORGS[:n_orgs]:
        orgs.add(org.name, org.kind, org.country, org.domain, zh["organizations"].get(org.name, ""))
    countries = list(names.COUNTRY_WEIGHTS)
    country_p = np.array(list(names.COUNTRY_WEIGHTS.values()))
    country_p /= country_p.sum()
    all_surnames = [s for c in names.CULTURES.values() for s in c["surnames"]]
    misses = 0
    while len(orgs.names) < n_orgs:
        kind = _KINDS[_draw(rng, np.array([0.55, 0.3, 0.15]), 1)[0]]
        country = countries[_draw(rng, country_p, 1)[0]]
        city = names.CITIES[country][rng.integers(len(names.CITIES[country]))]
        city_slug = _ascii_slug(city)
        tld = names.COUNTRY_TLD[country]
        if kind == "university":
            templates = names.UNIVERSITY_TEMPLATES["GENERIC"] + names.UNIVERSITY_TEMPLATES.get(country, ())
            template = templates[rng.integers(len(templates))]
            name = template.format(c=city)
            name_zh = _render_zh(zh["templates"].get(template, ""), zh["cities"].get(city, ""))
            domain = f"{city_slug}{_initials(template.replace('{c}', ''))}.{tld}"
        elif kind == "institute":
            template = names.INSTITUTE_TEMPLATES[rng.integers(len(names.INSTITUTE_TEMPLATES))]
            field_index = rng.integers(len(vocab.fields))
            field = vocab.field_title[field_index]
            surname = all_surnames[rng.integers(len(all_surnames))]
            name = template.format(c=city, s=surname, f=field)
            name_zh = _render_zh(
                zh["templates"].get(template, ""), zh["cities"].get(city, ""), vocab.fields_zh[field_index]
            )
            head = _ascii_slug(surname) if "{s}" in template else city_slug
            domain = f"{head}{_initials(template.replace('{c}', '').replace('{s}', '').replace('{f}', ''))}{_initials(field)}.{tld}"
        else:
            stem = (
                names.COMPANY_PREFIXES[rng.integers(len(names.COMPANY_PREFIXES))]
                + names.COMPANY_SUFFIXES[rng.integers(len(names.COMPANY_SUFFIXES))]
            )
            name = f"{stem} {names.COMPANY_KINDS[rng.integers(len(names.COMPANY_KINDS))]}"
            name_zh = ""  # a coined brand has no Chinese name
            domain = f"{stem.lower()}.com"
        if orgs.add(name, kind, country, domain, name_zh):
            misses = 0
        else:
            misses += 1
            if misses > 100_000:
                raise ValueError(f"cannot build {n_orgs} unique organisation names")
    return orgs


def _render_zh(template: str, city: str, field: str = "") -> str:
    """A Chinese organisation name from its template; "" when a part has no rendering."""
    if not template or ("{c}" in template and not city) or ("{f}" in template and not field):
        return ""
    return template.format(c=city, f=field)


# --------------------------------------------------------------------------------------------
# Persons.
# --------------------------------------------------------------------------------------------

_CULTURE_HOME = {
    "chinese": "CN",
    "japanese": "JP",
    "korean": "KR",
    "indian": "IN",
    "anglo": "US",
    "german": "DE",
    "french": "FR",
    "italian": "IT",
    "spanish": "ES",
    "slavic": "RU",
    "middle_eastern": "TR",
}


class _Persons:
    """The numeric skeleton of scholars; strings are rendered at write time."""

    n: int
    org: np.ndarray
    culture: np.ndarray
    gender: np.ndarray  # 0 male, 1 female
    given: np.ndarray
    surname: np.ndarray
    middle: np.ndarray  # index into names.MIDDLE_INITIALS, -1 when none
    age: np.ndarray
    position: np.ndarray
    tier: np.ndarray  # 0 junior, 1 middle, 2 senior
    talent: np.ndarray
    advisor: np.ndarray  # -1 when none
    interests: np.ndarray  # (n, MAX_INTERESTS), -1 padded, strongest first
    n_interests: np.ndarray
    bsc: np.ndarray
    msc: np.ndarray
    phd: np.ndarray
    email_rank: np.ndarray
    num_pubs: np.ndarray
    num_citation: np.ndarray

    def name_keys(self, with_middle: bool = True) -> np.ndarray:
        """One integer per distinct full name (or per given name + surname)."""
        key = self.given.astype(np.int64) * 1_000_003 + self.surname
        return key * 32 + self.middle + 1 if with_middle else key

    def duplicate_name_mask(self) -> np.ndarray:
        _, inverse, counts = np.unique(self.name_keys(), return_inverse=True, return_counts=True)
        return counts[inverse] > 1

    def duplicate_name_count(self) -> int:
        return int(self.duplicate_name_mask().sum())


def _make_persons(
    rng: np.random.Generator, n: int, orgs: _Organizations, pools: _NamePools, vocab: _Vocabulary
) -> _Persons:
    p = _Persons()
    p.n = n
    n_orgs = len(orgs.names)
    org_kind = np.array(orgs.kinds)
    org_weight = _zipf(n_orgs, 1.0, 3.0) * np.where(org_kind == 2, 0.6, 1.0)
    p.org = _draw(rng, org_weight / org_weight.sum(), n)

    # Culture from the organisation's country, then names from the culture's pools.
    countries = sorted(set(orgs.countries))
    org_country = np.array([countries.index(c) for c in orgs.countries])
    cultures = list(names.CULTURE_NAMES)
    p.culture = np.empty(n, dtype=np.int64)
    person_country = org_country[p.org]
    for ci, country in enumerate(countries):
        rows = np.flatnonzero(person_country == ci)
        mix = names.COUNTRY_CULTURE_MIX[country]
        mix_p = np.array([mix.get(c, 0.0) for c in cultures])
        p.culture[rows] = _draw(rng, mix_p / mix_p.sum(), rows.size)
    p.gender = (rng.random(n) < 0.28).astype(np.int64)
    p.given = np.empty(n, dtype=np.int64)
    p.surname = np.empty(n, dtype=np.int64)
    for ci in range(len(cultures)):
        for g in (0, 1):
            rows = np.flatnonzero((p.culture == ci) & (p.gender == g))
            values, prob = pools.given_pools[2 * ci + g]
            p.given[rows] = values[_draw(rng, prob, rows.size)]
        rows = np.flatnonzero(p.culture == ci)
        values, prob = pools.surname_pools[ci]
        p.surname[rows] = values[_draw(rng, prob, rows.size)]
    middle_rate = np.array([names.MIDDLE_INITIAL_RATE[c] for c in cultures])[p.culture]
    p.middle = np.where(rng.random(n) < middle_rate, rng.integers(len(names.MIDDLE_INITIALS), size=n), -1)
    _force_duplicate_names(rng, p)

    # Career: a quarter are students; the rest have a gamma-distributed career age.
    student = rng.random(n) < 0.25
    p.age = np.where(student, rng.integers(0, 5, n), 5 + np.floor(rng.gamma(1.6, 8.0, n))).clip(0, 45).astype(np.int64)
    p.position = np.empty(n, dtype=np.int64)
    effective_age = p.age + np.where(student, 0.0, rng.normal(0.0, 2.0, n))
    person_kind = org_kind[p.org]
    for k, kind in enumerate(_KINDS):
        rows = np.flatnonzero(person_kind == k)
        pos_idx = np.array([i for i, pos in enumerate(names.POSITIONS) if pos[1] == kind])
        min_age = np.array([names.POSITIONS[i][2] for i in pos_idx])
        step = np.searchsorted(min_age, effective_age[rows], side="right") - 1
        p.position[rows] = pos_idx[np.clip(step, 0, len(pos_idx) - 1)]
    p.tier = vocab.position_tier[p.position]
    p.talent = rng.lognormal(0.0, 0.9, n)

    # Students and postdocs get an advisor: a senior at their organisation, picked by talent.
    seniors = _GroupSampler(p.org, p.talent * (p.tier == 2), n_orgs)
    p.advisor = np.where(p.tier == 0, seniors.sample(rng, p.org), -1)

    _assign_interests(rng, p, vocab)
    _assign_education(rng, p, orgs)

    # E-mail local parts (given.surname) repeat within an organisation; number the repeats.
    key = p.name_keys(with_middle=False) * n_orgs + p.org
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    first = np.searchsorted(sorted_key, sorted_key, side="left")
    p.email_rank = np.empty(n, dtype=np.int64)
    p.email_rank[order] = np.arange(n) - first
    return p


def _force_duplicate_names(rng: np.random.Generator, p: _Persons) -> None:
    """Copy names onto scholars elsewhere until enough names are shared.

    Natural collisions (common Chinese names) already give many; small corpora need help so
    that disambiguation by organisation or field is always exercised.  A copy only ever goes
    to a scholar at a different organisation.
    """
    for _ in range(20):
        dup = p.duplicate_name_mask()
        deficit = MIN_DUPLICATE_NAME_FRACTION * p.n - dup.sum()
        if deficit <= 0:
            return
        unique_rows = np.flatnonzero(~dup)
        m = min(math.ceil(deficit / 2), unique_rows.size // 2)
        picked = rng.choice(unique_rows, size=2 * m, replace=False)
        src, dst = picked[:m], picked[m:]
        ok = p.org[src] != p.org[dst]
        src, dst = src[ok], dst[ok]
        p.given[dst], p.surname[dst], p.middle[dst] = p.given[src], p.surname[src], p.middle[src]
        p.gender[dst], p.culture[dst] = p.gender[src], p.culture[src]


def _assign_interests(rng: np.random.Generator, p: _Persons, vocab: _Vocabulary) -> None:
    """2-5 fields per scholar, strongest first, mostly from one area; students follow advisors."""
    n = p.n
    popularity = vocab.field_popularity / vocab.field_popularity.sum()
    by_area = _GroupSampler(vocab.field_area, vocab.field_popularity, len(vocab.areas))
    n_candidates = 8
    cand = np.full((n, n_candidates), -1, dtype=np.int64)
    cand[:, 0] = _draw(rng, popularity, n)

    def fill(rows: np.ndarray, first_free: int) -> None:
        area = vocab.field_area[cand[rows, 0]]
        for j in range(first_free, n_candidates):
            same_area = by_area.sample(rng, area)
            anywhere = _draw(rng, popularity, rows.size)
            cand[rows, j] = np.where(rng.random(rows.size) < 0.65, same_area, anywhere)

    # Advisors are seniors and have no advisor themselves, so their interests come first.
    fill(np.flatnonzero(p.advisor < 0), 1)
    independent = _dedupe_rows(cand)
    advisees = np.flatnonzero(p.advisor >= 0)
    adv = independent[p.advisor[advisees]]
    cand[advisees, 0] = np.where(rng.random(advisees.size) < 0.8, adv[:, 0], cand[advisees, 0])
    cand[advisees, 1] = np.where(adv[:, 1] >= 0, adv[:, 1], adv[:, 0])
    fill(advisees, 2)

    interests = _dedupe_rows(cand)[:, :MAX_INTERESTS]
    # A one-field area can leave a single distinct field: add a second from anywhere.
    single = np.flatnonzero(interests[:, 1] < 0)
    while single.size:
        interests[single, 1] = _draw(rng, popularity, single.size)
        single = single[interests[single, 1] == interests[single, 0]]
    distinct = (interests >= 0).sum(axis=1)
    p.n_interests = np.minimum(rng.integers(2, MAX_INTERESTS + 1, n), distinct)
    keep = np.arange(MAX_INTERESTS)[None, :] < p.n_interests[:, None]
    p.interests = np.where(keep, interests, -1)


def _assign_education(rng: np.random.Generator, p: _Persons, orgs: _Organizations) -> None:
    """Degrees from universities: bachelor's often at home, doctorates at prestigious places."""
    n = p.n
    kinds = np.array(orgs.kinds)
    uni = np.flatnonzero(kinds == 0)
    prestige = _zipf(len(orgs.names), 1.0, 3.0)[uni]
    countries = sorted(set(orgs.countries))
    uni_country = np.array([countries.index(orgs.countries[u]) for u in uni])
    home_sampler = _GroupSampler(uni_country, prestige**0.5, len(countries))
    cultures = list(names.CULTURE_NAMES)
    home = np.array([countries.index(_CULTURE_HOME[c]) if _CULTURE_HOME[c] in countries else -1 for c in cultures])[
        p.culture
    ]
    at_home = uni[np.maximum(home_sampler.sample(rng, np.maximum(home, 0)), 0)]
    anywhere = uni[_draw(rng, prestige**0.7 / (prestige**0.7).sum(), n)]
    home_ok = (home >= 0) & (home_sampler.sample(rng, np.maximum(home, 0)) >= 0)
    p.bsc = np.where(home_ok & (rng.random(n) < 0.65), at_home, anywhere)
    p.msc = np.where(rng.random(n) < 0.45, uni[_draw(rng, prestige / prestige.sum(), n)], -1)
    phd_uni = uni[_draw(rng, prestige**1.3 / (prestige**1.3).sum(), n)]
    # Doctorates: everyone past the student stage, bar some company staff.
    position_name = np.array([pos[0] for pos in names.POSITIONS])[p.position]
    has_phd = (position_name != "PhD Student") & (position_name != "Research Intern")
    has_phd &= ~((kinds[p.org] == 2) & (rng.random(n) < 0.2))
    p.phd = np.where(has_phd, phd_uni, -1)


# --------------------------------------------------------------------------------------------
# Publications.
# --------------------------------------------------------------------------------------------


class _Papers:
    """The numeric skeleton of publications and their bylines."""

    def __init__(
        self,
        authors: np.ndarray,
        lead: np.ndarray,
        field: np.ndarray,
        year: np.ndarray,
        venue: np.ndarray,
        citations: np.ndarray,
    ):
        self.authors = authors  # (n, MAX_AUTHORS), byline order, -1 padded
        self.lead, self.field, self.year, self.venue = lead, field, year, venue
        self.citations = citations
        self.n = len(lead)
        self.n_authorships = int((authors >= 0).sum())

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(paper, byline position, person) for every authorship."""
        paper, position = np.nonzero(self.authors >= 0)
        return paper, position, self.authors[paper, position]

    def person_totals(self, n_persons: int) -> tuple[np.ndarray, np.ndarray]:
        paper, _, person = self.flat()
        num_pubs = np.bincount(person, minlength=n_persons)
        num_citation = np.bincount(person, weights=self.citations[paper], minlength=n_persons)
        return num_pubs.astype(np.int64), num_citation.astype(np.int64)


def _career_year(rng: np.random.Generator, start: np.ndarray) -> np.ndarray:
    """A publication year in [max(start, FIRST_YEAR), CURRENT_YEAR], skewed to recent years."""
    first = np.maximum(start, FIRST_YEAR)
    span = CURRENT_YEAR - first + 1
    return np.minimum(first + np.floor(span * rng.random(len(start)) ** 0.75), CURRENT_YEAR).astype(np.int64)


def _make_papers(rng: np.random.Generator, p: _Persons, vocab: _Vocabulary) -> _Papers:
    n = p.n
    start = CURRENT_YEAR - p.age
    n_lead = round(PAPERS_PER_PERSON * n)
    lead_weight = p.talent**1.2 * (np.minimum(p.age, 30) + 3) * (p.tier > 0)
    lead = _draw(rng, lead_weight / lead_weight.sum(), n_lead)
    year = _career_year(rng, start[lead])
    size = 1 + _draw(rng, np.array(AUTHOR_COUNT_P), n_lead)
    rank_p = np.array([0.45, 0.25, 0.15, 0.1, 0.05])
    rank = np.minimum(_draw(rng, rank_p, n_lead), p.n_interests[lead] - 1)
    field = p.interests[lead, rank]

    # Co-authors: the lead's students, colleagues at the lead's organisation, and scholars of
    # the paper's field, each picked by talent; only people whose career had begun (a year of
    # slack for master's work) can be on the paper, others are redrawn among the field.
    primary = p.interests[:, 0]
    students = _GroupSampler(np.maximum(p.advisor, 0), (p.advisor >= 0).astype(float), n)
    colleagues = _GroupSampler(p.org, p.talent, int(p.org.max()) + 1)
    peers = _GroupSampler(primary, p.talent, len(vocab.fields))
    authors = np.full((n_lead, MAX_AUTHORS), -1, dtype=np.int64)
    is_student = np.zeros((n_lead, MAX_AUTHORS), dtype=bool)
    authors[:, 0] = lead
    for slot in range(1, MAX_AUTHORS):
        rows = np.flatnonzero(size > slot)
        u = rng.random(rows.size)
        student = students.sample(rng, lead[rows])
        colleague = colleagues.sample(rng, p.org[lead[rows]])
        pick = np.where(u < 0.2 + 0.5 * (student >= 0), colleague, -1)
        pick = np.where((u < 0.5) & (student >= 0), student, pick)
        for _ in range(3):
            bad = (pick < 0) | (start[np.maximum(pick, 0)] > year[rows] + 1)
            pick = np.where(bad, peers.sample(rng, field[rows]), pick)
        pick = np.where((pick >= 0) & (start[np.maximum(pick, 0)] <= year[rows] + 1), pick, -1)
        authors[rows, slot] = pick
        is_student[rows, slot] = (pick == student) & (pick >= 0)
    # Byline: students first, then the others, the lead last (or, less often, first); repeated
    # draws of the same scholar are blanked and sorted to the end.
    authors = _blank_duplicates(authors)
    key = np.where(is_student, -10.0, 0.0) + rng.random(authors.shape)
    key[:, 0] = np.where(rng.random(n_lead) < 0.7, 100.0, -100.0)
    key = np.where(authors >= 0, key, np.inf)
    authors = np.take_along_axis(authors, np.argsort(key, axis=1, kind="stable"), axis=1)

    # Every scholar gets at least one paper: first-authored, with their advisor when they have one.
    counts = np.bincount(authors[authors >= 0], minlength=n)
    lonely = np.flatnonzero(counts == 0)
    extra = np.full((lonely.size, MAX_AUTHORS), -1, dtype=np.int64)
    extra[:, 0] = lonely
    extra[:, 1] = p.advisor[lonely]
    authors = np.concatenate([authors, _dedupe_rows(extra)])
    lead = np.concatenate([lead, np.where(p.advisor[lonely] >= 0, p.advisor[lonely], lonely)])
    field = np.concatenate([field, primary[lonely]])
    year = np.concatenate([year, _career_year(rng, start[lonely])])

    perm = rng.permutation(len(lead))
    authors, lead, field, year = authors[perm], lead[perm], field[perm], year[perm]
    venue = vocab.venue_entry[vocab.venue_sampler.sample(rng, vocab.field_area[field])]
    # Citations: lognormal, more for older papers, talented leads and prestigious venues.
    age = CURRENT_YEAR + 0.5 - year
    mu = -0.3 + 1.15 * np.log1p(age) + 0.6 * np.log(p.talent[lead]) + 1.0 * vocab.prestige[venue]
    citations = np.floor(np.exp(mu + 1.15 * rng.standard_normal(len(lead)))) - 1
    citations = citations.clip(0, 250_000).astype(np.int64)
    return _Papers(authors, lead, field, year, venue, citations)


# --------------------------------------------------------------------------------------------
# Text rendering.
# --------------------------------------------------------------------------------------------


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _join_words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _person_rows(
    seed: int,
    start: int,
    end: int,
    p: _Persons,
    pools: _NamePools,
    vocab: _Vocabulary,
    orgs: _Organizations,
    chinese: _ChineseNames,
) -> list[tuple]:
    """Rows of the person table for scholars start..end-1 (ids start+1..end)."""
    rng = np.random.default_rng([seed, 1, start])
    sl = slice(start, end)
    # Draws of the Chinese renderings, from a stream of their own (the other columns stay as
    # they were before there were renderings).
    zh_draws = np.random.default_rng([seed, 3, start]).random((end - start, 3)).tolist()
    is_chinese = (p.culture[sl] == CHINESE_CULTURE).tolist()
    columns = zip(
        range(start, end),
        rng.integers(len(names.BIO_TEMPLATES), size=end - start).tolist(),
        p.given[sl].tolist(),
        p.middle[sl].tolist(),
        p.surname[sl].tolist(),
        p.org[sl].tolist(),
        p.position[sl].tolist(),
        p.interests[sl].tolist(),
        p.gender[sl].tolist(),
        p.phd[sl].tolist(),
        p.msc[sl].tolist(),
        p.bsc[sl].tolist(),
        p.email_rank[sl].tolist(),
        p.num_citation[sl].tolist(),
        p.num_pubs[sl].tolist(),
        is_chinese,
        zh_draws,
    )
    rows = []
    for i, bio, g, m, s, org, pos, interests, female, phd, msc, bsc, rank, cites, pubs, zh, u in columns:
        given, surname = pools.given[g], pools.surnames[s]
        name = f"{given} {names.MIDDLE_INITIALS[m]}. {surname}" if m >= 0 else f"{given} {surname}"
        position = vocab.positions[pos]
        fields = [vocab.fields[f] for f in interests if f >= 0]
        degrees = [f"{degree}, {orgs.names[u]}" for degree, u in (("PhD", phd), ("MSc", msc), ("BSc", bsc)) if u >= 0]
        local = f"{_ascii_slug(given)}.{_ascii_slug(surname)}{rank + 1 if rank else ''}"
        text = names.BIO_TEMPLATES[bio].format(
            name=name,
            position=position,
            a=_article(position),
            org=orgs.names[org],
            interests=_join_words(fields[:3]),
            Poss="Her" if female else "His",
            poss="her" if female else "his",
        )
        rows.append(
            (
                i + 1,
                public_id(seed, "person", i + 1),
                name,
                normalize(name),
                "female" if female else "male",
                org + 1,
                position,
                text,
                "; ".join(degrees),
                f"{local}@{orgs.domains[org]}",
                json.dumps(fields),
                cites,
                pubs,
                chinese.render(g, s, female, u) if zh else "",
            )
        )
    return rows


class _TitleDraw:
    """The random components of a chunk of titles and abstracts, redrawable row by row."""

    def __init__(self, rng: np.random.Generator, field: np.ndarray, vocab: _Vocabulary):
        self.rng, self.field, self.vocab = rng, field, vocab
        self.area = vocab.field_area[field]
        n = len(field)
        self.cols: dict[str, np.ndarray] = {
            k: np.zeros(n, dtype=np.int64)
            for k in (
                "template",
                "adj",
                "method",
                "topic",
                "domain",
                "prop",
                "head",
                "tail",
                "k",
                "gain",
                "opening",
                "approach",
                "result",
            )
        }
        self.redraw(np.arange(n))

    def redraw(self, rows: np.ndarray) -> None:
        rng, v, m = self.rng, self.vocab, rows.size
        area, field = self.area[rows], self.field[rows]
        sizes = {
            "template": len(names.TITLE_TEMPLATES),
            "adj": len(names.TITLE_ADJECTIVES),
            "domain": len(names.APPLICATION_DOMAINS),
            "prop": len(names.PROPERTIES),
            "head": len(names.ACRONYM_HEADS),
            "tail": len(names.ACRONYM_TAILS),
            "k": 6,
            "gain": 140,
            "opening": len(names.ABSTRACT_OPENINGS),
            "approach": len(names.ABSTRACT_METHODS),
            "result": len(names.ABSTRACT_RESULTS),
        }
        for key, size in sizes.items():
            self.cols[key][rows] = rng.integers(size, size=m)
        self.cols["method"][rows] = v.method_off[area] + (rng.random(m) * v.method_len[area]).astype(np.int64)
        self.cols["topic"][rows] = v.topic_off[field] + (rng.random(m) * v.topic_len[field]).astype(np.int64)

    def titles(self, rows: np.ndarray) -> list[str]:
        v, c = self.vocab, self.cols
        out = []
        for r in rows.tolist():
            method, topic = v.methods_title[c["method"][r]], v.topics_title[c["topic"][r]]
            adj = self._adjective(r, method, topic)
            out.append(
                names.TITLE_TEMPLATES[c["template"][r]].format(
                    a=adj,
                    m=method,
                    t=topic,
                    d=v.domains_title[c["domain"][r]],
                    p=v.properties_title[c["prop"][r]],
                    x=self._acronym(r),
                )
            )
        return out

    def abstract(self, r: int) -> str:
        v, c = self.vocab, self.cols
        method, topic = v.methods[c["method"][r]], v.topics[c["topic"][r]]
        adj = self._adjective(r, method, topic).lower()
        fill = {
            "T": topic[:1].upper() + topic[1:],
            "t": topic,
            "m": method,
            "a": adj,
            "f": v.fields[self.field[r]],
            "d": names.APPLICATION_DOMAINS[c["domain"][r]],
            "p": names.PROPERTIES[c["prop"][r]],
            "x": self._acronym(r),
            "art": _article(adj),
            "k": int(c["k"][r]) + 3,
            "g": f"{1.0 + c['gain'][r] / 10:.1f}",
        }
        return " ".join(
            (
                names.ABSTRACT_OPENINGS[c["opening"][r]].format(**fill),
                v.abstract_methods[c["approach"][r]].format(**fill),
                names.ABSTRACT_RESULTS[c["result"][r]].format(**fill),
            )
        )

    def _adjective(self, r: int, method: str, topic: str) -> str:
        """The drawn adjective, or the next one when it would repeat a word of the title."""
        adjectives, a = self.vocab.adjectives_title, int(self.cols["adj"][r])
        words = set(method.lower().split()) | set(topic.lower().split())
        while adjectives[a].lower() in words or adjectives[a].split("-")[0].lower() in words:
            a = (a + 1) % len(adjectives)
        return adjectives[a]

    def _acronym(self, r: int) -> str:
        return names.ACRONYM_HEADS[self.cols["head"][r]] + names.ACRONYM_TAILS[self.cols["tail"][r]]


def _publication_rows(
    seed: int, start: int, end: int, papers: _Papers, vocab: _Vocabulary, seen: np.ndarray
) -> tuple[list[tuple], np.ndarray]:
    """Rows of the publication table for papers start..end-1 and the updated title fingerprints.

    A title whose normalised form was used before (in this chunk or an earlier one, as told by
    the sorted fingerprints `seen`) is drawn again, so titles are unique corpus-wide.
    """
    rng = np.random.default_rng([seed, 2, start])
    draw = _TitleDraw(rng, papers.field[start:end], vocab)
    n = end - start
    titles: list[str] = [""] * n
    norms: list[str] = [""] * n
    hashes = np.zeros(n, dtype=np.uint64)
    pending = np.arange(n)
    for _ in range(100):
        for r, title in zip(pending.tolist(), draw.titles(pending)):
            titles[r], norms[r] = title, normalize(title)
        hashes[pending] = _hash64([norms[r] for r in pending.tolist()])
        _, first = np.unique(hashes, return_index=True)
        repeated = np.ones(n, dtype=bool)
        repeated[first] = False
        pos = np.minimum(np.searchsorted(seen, hashes), max(len(seen) - 1, 0))
        repeated |= (seen[pos] == hashes) if len(seen) else False
        pending = np.flatnonzero(repeated)
        if not pending.size:
            break
        draw.redraw(pending)
    else:
        raise RuntimeError("could not draw unique publication titles; enlarge the vocabulary")
    rows = []
    for r in range(n):
        i = start + r
        pid = public_id(seed, "publication", i + 1)
        year = int(papers.year[i])
        rows.append(
            (
                i + 1,
                pid,
                titles[r],
                norms[r],
                year,
                draw.abstract(r),
                int(papers.venue[i]) + 1,
                int(papers.citations[i]),
                f"https://pdf.aminer-corpus.example/{year}/{pid}.pdf",
            )
        )
    return rows, np.sort(np.concatenate([seen, hashes]))


# --------------------------------------------------------------------------------------------
# SQLite.
# --------------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE organization(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, name_norm TEXT NOT NULL, kind TEXT NOT NULL,
    country TEXT NOT NULL, domain TEXT NOT NULL, name_zh TEXT NOT NULL DEFAULT '');
CREATE TABLE field(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, area TEXT NOT NULL, name_zh TEXT NOT NULL DEFAULT '');
CREATE TABLE venue(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, prestige REAL NOT NULL);
CREATE TABLE person(
    id INTEGER PRIMARY KEY, pid TEXT NOT NULL, name TEXT NOT NULL, name_norm TEXT NOT NULL,
    gender TEXT NOT NULL, org_id INTEGER NOT NULL REFERENCES organization(id),
    position TEXT NOT NULL, bio TEXT NOT NULL, education_experience TEXT NOT NULL,
    email TEXT NOT NULL, interests TEXT NOT NULL, num_citation INTEGER NOT NULL,
    num_pubs INTEGER NOT NULL, name_zh TEXT NOT NULL DEFAULT '');
CREATE TABLE person_interest(
    field_id INTEGER NOT NULL REFERENCES field(id), person_id INTEGER NOT NULL REFERENCES person(id),
    rank INTEGER NOT NULL, num_citation INTEGER NOT NULL,
    PRIMARY KEY(field_id, person_id)) WITHOUT ROWID;
CREATE TABLE publication(
    id INTEGER PRIMARY KEY, pid TEXT NOT NULL, title TEXT NOT NULL, title_norm TEXT NOT NULL,
    year INTEGER NOT NULL, abstract TEXT NOT NULL, venue_id INTEGER NOT NULL REFERENCES venue(id),
    num_citation INTEGER NOT NULL, pdf_url TEXT NOT NULL);
CREATE TABLE advising(
    student_id INTEGER PRIMARY KEY REFERENCES person(id),
    advisor_id INTEGER NOT NULL REFERENCES person(id));
CREATE TABLE authorship(
    pub_id INTEGER NOT NULL REFERENCES publication(id), position INTEGER NOT NULL,
    person_id INTEGER NOT NULL REFERENCES person(id),
    PRIMARY KEY(pub_id, position)) WITHOUT ROWID;
"""

_INDEXES = f"""
CREATE UNIQUE INDEX person_pid ON person(pid);
CREATE INDEX person_name ON person(name_norm);
CREATE INDEX person_name_zh ON person(name_zh);
CREATE INDEX person_org ON person(org_id, num_citation DESC);
CREATE INDEX person_interest_cited ON person_interest(field_id, num_citation DESC);
CREATE UNIQUE INDEX publication_pid ON publication(pid);
CREATE INDEX publication_title ON publication(title_norm);
CREATE INDEX authorship_person ON authorship(person_id, pub_id);
CREATE INDEX advising_advisor ON advising(advisor_id);
CREATE INDEX organization_name ON organization(name_norm);
CREATE VIRTUAL TABLE person_fts USING fts5(name, content='', tokenize='{FTS_TOKENIZER}');
CREATE VIRTUAL TABLE publication_fts USING fts5(title, content='', tokenize='{FTS_TOKENIZER}');
CREATE VIRTUAL TABLE organization_fts USING fts5(name, content='', tokenize='{FTS_TOKENIZER}');
INSERT INTO person_fts(rowid, name) SELECT id, name || ' ' || fts_words(name_zh) FROM person;
INSERT INTO publication_fts(rowid, title) SELECT id, title FROM publication;
INSERT INTO organization_fts(rowid, name) SELECT id, name || ' ' || fts_words(name_zh) FROM organization;
INSERT INTO person_fts(person_fts) VALUES ('optimize');
INSERT INTO publication_fts(publication_fts) VALUES ('optimize');
PRAGMA analysis_limit = 1000;
ANALYZE;
"""


def _write(
    conn: sqlite3.Connection,
    seed: int,
    orgs: _Organizations,
    p: _Persons,
    papers: _Papers,
    pools: _NamePools,
    vocab: _Vocabulary,
    report: Progress,
) -> None:
    """Bulk-load everything in one transaction, then build indexes and full-text indexes."""
    for pragma in (
        "journal_mode=OFF",
        "synchronous=OFF",
        "temp_store=MEMORY",
        "cache_size=-262144",
        "locking_mode=EXCLUSIVE",
    ):
        conn.execute(f"PRAGMA {pragma}")
    conn.executescript(_SCHEMA)
    conn.create_function("fts_words", 1, fts_words, deterministic=True)
    conn.executemany(
        "INSERT INTO organization VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (i + 1, name, normalize(name), _KINDS[kind], country, domain, zh)
            for i, (name, kind, country, domain, zh) in enumerate(
                zip(orgs.names, orgs.kinds, orgs.countries, orgs.domains, orgs.zh)
            )
        ],
    )
    conn.executemany(
        "INSERT INTO field VALUES (?, ?, ?, ?)",
        [(i + 1, f.name, f.area, vocab.fields_zh[i]) for i, f in enumerate(names.FIELDS)],
    )
    chinese = _ChineseNames(pools)
    conn.executemany(
        "INSERT INTO venue VALUES (?, ?, ?)",
        [(i + 1, v, pr) for i, (v, pr) in enumerate(zip(vocab.venue_names, vocab.venue_prestige))],
    )
    for start, end in _chunks(p.n):
        conn.executemany(
            "INSERT INTO person VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _person_rows(seed, start, end, p, pools, vocab, orgs, chinese),
        )
        report("persons", end, p.n)
    person, rank = np.nonzero(p.interests >= 0)
    conn.executemany(
        "INSERT INTO person_interest VALUES (?, ?, ?, ?)",
        zip(
            (p.interests[person, rank] + 1).tolist(),
            (person + 1).tolist(),
            rank.tolist(),
            p.num_citation[person].tolist(),
        ),
    )
    students = np.flatnonzero(p.advisor >= 0)
    conn.executemany("INSERT INTO advising VALUES (?, ?)", zip((students + 1).tolist(), (p.advisor[students] + 1).tolist()))
    seen = np.zeros(0, dtype=np.uint64)
    for start, end in _chunks(papers.n):
        rows, seen = _publication_rows(seed, start, end, papers, vocab, seen)
        conn.executemany("INSERT INTO publication VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        report("publications", end, papers.n)
    paper, position, author = papers.flat()
    for start, end in _chunks(len(paper)):
        conn.executemany(
            "INSERT INTO authorship VALUES (?, ?, ?)",
            zip((paper[start:end] + 1).tolist(), position[start:end].tolist(), (author[start:end] + 1).tolist()),
        )
        report("authorships", end, len(paper))
    conn.commit()
    report("indexes", 0, 1)
    conn.executescript(_INDEXES)
    build_search_indexes(conn)  # title postings and name vocabulary for fast exact searches
    report("indexes", 1, 1)
