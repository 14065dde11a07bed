"""A seeded synthetic movie corpus (movies, actors, directors, credits) in SQLite.

It exists to run the whole pipeline on a second, unrelated domain, so it carries the traits
that make API-using questions hard rather than just volume:

- a long tail: a few prolific actors and directors appear in dozens of movies, most people in one
  or two (weights fall off as a power of a person's rank);
- ambiguity: some people share a name, and some movies are remakes that share a title with an
  older one (so the year is what tells them apart), or sequels whose title extends another's;
- plausible careers: people only work in movies made between their 16th and 85th year;
- names with diacritics (José, Zoë), matched by the full-text index whether typed with them or not.

The same `size` and `seed` always give the same database, ids included. The file is written
next to its destination and renamed into place, so a reader never sees half a corpus.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soay.environment.text import normalize
from soay.files import atomic_path

Progress = Callable[[str, int, int], None]

SCHEMA_VERSION = "1"
ACTING, DIRECTING = "Acting", "Directing"
DIRECTOR_SHARE = 0.12
DUPLICATE_NAME_SHARE = 0.03
REMAKE_SHARE = 0.04
SEQUEL_SHARE = 0.03
CAMEO_SHARE = 0.05
FIRST_YEAR, LAST_YEAR = 1930, 2024
MIN_AGE, MAX_AGE = 16, 85

FIRST_NAMES = ["James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Daniel", "Nancy", "Matthew", "Lisa", "Anthony", "Betty", "Mark", "Margaret", "Paul", "Sandra", "Steven", "Ashley", "Andrew", "Emily", "Kenneth", "Donna", "Joshua", "Michelle", "Kevin", "Carol", "Brian", "Amanda", "Oliver", "Grace", "Henry", "Chloe", "Lucas", "Sophie", "Hugo", "Camille", "Louis", "Léa", "Émile", "Zoë", "Renée", "Chloé", "José", "María", "Lucía", "Sofía", "Diego", "Andrés", "Jürgen", "Björn", "Søren", "Åsa", "Anaïs", "François", "Hiroshi", "Yuki", "Kenji", "Aiko", "Min-jun", "Seo-yeon", "Wei", "Mei", "Priya", "Arjun", "Ravi", "Ananya", "Omar", "Leila", "Dmitri", "Olga", "Giulia", "Marco", "Luca", "Chiara", "Pedro", "Beatriz", "Niamh", "Siobhan", "Lars", "Ingrid", "Mateo", "Valentina", "Kwame", "Amara", "Tomás", "Inés"]
LAST_NAMES = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Hernandez", "Lopez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Thompson", "White", "Harris", "Clark", "Lewis", "Walker", "Hall", "Allen", "Young", "King", "Wright", "Scott", "Green", "Baker", "Adams", "Nelson", "Hill", "Campbell", "Mitchell", "Roberts", "Carter", "Phillips", "Evans", "Turner", "Parker", "Collins", "Edwards", "Stewart", "Morris", "Murphy", "Cook", "Rogers", "Morgan", "Cooper", "Peterson", "Reed", "Bailey", "Bell", "Kelly", "Howard", "Ward", "Cox", "Richardson", "Wood", "Watson", "Brooks", "Bennett", "Gray", "Hughes", "Price", "Sanders", "Dubois", "Moreau", "Lefèvre", "Fontaine", "Girard", "Müller", "Schröder", "Weber", "Becker", "Fischer", "Rossi", "Russo", "Bianchi", "Romano", "Esposito", "Fernández", "González", "Pérez", "Sánchez", "Núñez", "Peña", "Tanaka", "Suzuki", "Watanabe", "Yamamoto", "Nakamura", "Kim", "Park", "Choi", "Chen", "Wang", "Zhang", "Liu", "Patel", "Sharma", "Gupta", "Khan", "Hassan", "Ivanov", "Petrova", "Novak", "Kowalski", "Nielsen", "Andersson", "Lindqvist", "O'Brien", "O'Connor", "Gallagher", "Okafor", "Mensah", "Costa", "Silva", "Oliveira"]
COUNTRIES = (
    ("United States", 30), ("United Kingdom", 10), ("France", 7), ("Germany", 5), ("Italy", 5),
    ("Spain", 4), ("Japan", 5), ("South Korea", 4), ("China", 4), ("India", 6), ("Canada", 4),
    ("Australia", 3), ("Mexico", 3), ("Brazil", 2), ("Sweden", 2), ("Denmark", 1), ("Ireland", 2),
    ("New Zealand", 1), ("Argentina", 1), ("Nigeria", 1),
)
# Chosen so that no genre name contains another, since branch questions match by containment.
GENRES = (
    ("Drama", 22), ("Comedy", 16), ("Thriller", 9), ("Action", 9), ("Romance", 7), ("Crime", 6),
    ("Horror", 6), ("Adventure", 5), ("Science Fiction", 5), ("Fantasy", 4), ("Animation", 3),
    ("Documentary", 3), ("Mystery", 3), ("Western", 2), ("Musical", 2), ("War", 2),
)
ADJECTIVES = ["Silent", "Broken", "Golden", "Hidden", "Last", "Lost", "Crimson", "Eternal", "Frozen", "Savage", "Quiet", "Burning", "Hollow", "Secret", "Distant", "Wild", "Dark", "Bright", "Iron", "Glass", "Velvet", "Scarlet", "Endless", "Forgotten", "Midnight", "Northern", "Restless", "Shattered", "Sacred", "Wicked", "Gentle", "Bitter", "Hungry", "Lonely", "Fearless", "Electric", "Paper", "Stolen", "Sleeping", "Falling", "Rising", "Wandering", "Invisible", "Impossible", "Perfect", "Final", "Faraway", "Emerald", "Silver"]
NOUNS = ["Harbor", "River", "Kingdom", "Garden", "Promise", "Shadow", "Storm", "Horizon", "Empire", "Letter", "Mirror", "Station", "Voyage", "Winter", "Summer", "Island", "Forest", "Dream", "Witness", "Stranger", "Heart", "Road", "Frontier", "Tide", "Echo", "Signal", "Crown", "Orchard", "Lighthouse", "Circus", "Carnival", "Symphony", "Hunter", "Pilgrim", "Outlaw", "Detective", "Widow", "Prophet", "Orphan", "Soldier", "Dancer", "Machine", "Planet", "Comet", "Desert", "Valley", "Canyon", "Bridge", "Tower", "Castle", "Harvest", "Winds", "Night", "Dawn", "Fire", "Rain", "Silence", "Secret", "Legacy", "Sanctuary", "Paradise", "Labyrinth", "Compass", "Anchor"]
PLACES = ["Paris", "Tokyo", "Havana", "Berlin", "Vienna", "Marrakesh", "Lisbon", "Shanghai", "Bombay", "Cairo", "Rome", "Prague", "Istanbul", "Brooklyn", "Chinatown", "Manhattan", "Montana", "Texas", "Alaska", "Memphis", "Casablanca", "Venice", "Kyoto", "Seoul", "Dublin", "Oslo", "Naples", "Sicily", "Provence", "Bavaria"]
TITLE_PATTERNS = (
    "The {adj} {noun}", "{adj} {noun}", "The {noun} of {place}", "{noun} of the {noun2}",
    "The Last {noun}", "{first}'s {noun}", "Return to {place}", "{a_noun} in {place}",
    "The {adj} {noun} of {place}", "Midnight in {place}", "{adj} {place}", "The {noun} and the {noun2}",
)
CHARACTER_TITLES = ("Detective", "Dr.", "Captain", "Sergeant", "Professor", "Agent", "Father", "Sister", "Young")
SEQUEL_SUFFIXES = (" 2", " II", ": The Return", ": Part Two")


@dataclass
class _Person:
    public_id: str
    name: str
    birth_year: int
    country: str
    known_for: str
    popularity: int = 0

    def can_work_in(self, year: int) -> bool:
        return self.birth_year + MIN_AGE <= year <= self.birth_year + MAX_AGE


@dataclass
class _Movie:
    public_id: str
    title: str
    year: int
    genre: str
    rating: float
    runtime_min: int
    votes: int
    director: int = -1
    cast: list[tuple[int, str]] = field(default_factory=list)


class _PowerLawPicker:
    """Draws people with weight (rank + offset) ** -exponent: the first few are picked often."""

    def __init__(self, people: list[int], exponent: float, offset: float) -> None:
        self.people = people
        self.cum = list(itertools.accumulate((r + offset) ** -exponent for r in range(len(people))))

    def draw(self, rng: random.Random) -> int:
        return self.people[bisect.bisect_left(self.cum, rng.random() * self.cum[-1])]


def build_movie_corpus(
    db_path: Path, size: int = 2000, seed: int = 0, progress: Progress | None = None
) -> dict[str, Any]:
    """Build the corpus of `size` movies (and about twice as many people) at `db_path`.

    `progress(stage, done, total)` is called as each stage advances. Returns counts and timing.
    """
    if size < 10:
        raise ValueError(f"a movie corpus needs at least 10 movies, got {size}")
    started = time.perf_counter()
    report = progress or (lambda stage, done, total: None)
    rng = random.Random(f"movies/{seed}")
    ids = _IdMaker(rng)
    people = _make_people(rng, ids, 2 * size)
    report("people", len(people), len(people))
    movies = _make_movies(rng, ids, size)
    report("movies", len(movies), len(movies))
    _assign_credits(rng, movies, people, report)
    for movie in movies:
        for p in {movie.director, *(pid for pid, _ in movie.cast)}:
            people[p].popularity += movie.votes

    db_path = Path(db_path)
    with atomic_path(db_path) as tmp:  # a reader never sees a half-built corpus
        credits = _write(tmp, movies, people, size, seed, report)
    return {
        "domain": "movies",
        "path": str(db_path),
        "seed": seed,
        "movies": len(movies),
        "people": len(people),
        "credits": credits,
        "seconds": round(time.perf_counter() - started, 3),
    }


class _IdMaker:
    """24-hex-character public ids (like a MongoDB ObjectId), unique and drawn from the seed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.seen: set[str] = set()

    def new(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(96):024x}"
            if candidate not in self.seen:
                self.seen.add(candidate)
                return candidate


def _weighted(rng: random.Random, table: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def _make_people(rng: random.Random, ids: _IdMaker, n: int) -> list[_Person]:
    """Directors first (a fixed share), then actors; a few reuse an earlier person's name."""
    n_directors = max(2, round(n * DIRECTOR_SHARE))
    names = [f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES]
    rng.shuffle(names)
    if n > len(names):  # large corpora: add middle initials rather than repeat names
        middle = [f"{first} {m}. {last}" for first in FIRST_NAMES for m in "ABCDEFGHJKLMNPRSTW" for last in LAST_NAMES]
        rng.shuffle(middle)
        names += middle[: n - len(names)]
    people: list[_Person] = []
    for i in range(n):
        name = names[i]
        if people and rng.random() < DUPLICATE_NAME_SHARE:
            name = rng.choice(people).name
        directing = i < n_directors
        birth = rng.randint(1895, 1985) if directing else rng.randint(1900, 2004)
        people.append(_Person(ids.new(), name, birth, _weighted(rng, COUNTRIES), DIRECTING if directing else ACTING))
    return people


def _make_movies(rng: random.Random, ids: _IdMaker, n: int) -> list[_Movie]:
    """Movies in release order; more of them in recent decades; some remakes and sequels."""
    years = list(range(FIRST_YEAR, LAST_YEAR + 1))
    year_weights = [1 + (y - FIRST_YEAR) / 8 for y in years]
    released = sorted(rng.choices(years, weights=year_weights, k=n))
    used: set[str] = set()
    movies: list[_Movie] = []
    for year in released:
        genre = _weighted(rng, GENRES)
        older = bisect.bisect_right(released, year - 8)  # movies[:older] came out 8+ years before
        title = _derived_title(rng, movies, older, used) or _fresh_title(rng, used)
        used.add(title)
        rating = round(min(9.6, max(1.5, rng.gauss(6.4, 1.0))), 1)
        mean_runtime = 88 if genre == "Animation" else 112
        runtime = int(min(215, max(70, rng.gauss(mean_runtime, 17))))
        votes = int(math.exp(rng.gauss(8.0, 1.6) + (rating - 6.4) * 0.4))
        movies.append(_Movie(ids.new(), title, year, genre, rating, runtime, votes))
    return movies


def _derived_title(rng: random.Random, movies: list[_Movie], older: int, used: set[str]) -> str | None:
    """A remake's title (that of one of the `older` first movies) or a sequel's; None for an original."""
    roll = rng.random()
    if older and roll < REMAKE_SHARE:
        return movies[rng.randrange(older)].title
    if movies and roll < REMAKE_SHARE + SEQUEL_SHARE:
        source = rng.choice(movies[-60:]).title
        sequel = source + rng.choice(SEQUEL_SUFFIXES)
        is_sequel = any(source.endswith(s) for s in SEQUEL_SUFFIXES)
        return None if is_sequel or sequel in used else sequel
    return None


def _fresh_title(rng: random.Random, used: set[str]) -> str:
    while True:
        noun, noun2 = rng.sample(NOUNS, 2)
        a_noun = f"{'An' if noun[0] in 'AEIOU' else 'A'} {noun}"
        title = rng.choice(TITLE_PATTERNS).format(
            adj=rng.choice(ADJECTIVES),
            noun=noun,
            noun2=noun2,
            a_noun=a_noun,
            place=rng.choice(PLACES),
            first=rng.choice(FIRST_NAMES),
        )
        if title not in used:
            return title


def _assign_credits(rng: random.Random, movies: list[_Movie], people: list[_Person], report: Progress) -> None:
    """Directors and casts by power-law picks; then everyone still uncredited gets one credit."""
    directors = [i for i, p in enumerate(people) if p.known_for == DIRECTING]
    actors = [i for i, p in enumerate(people) if p.known_for == ACTING]
    rng.shuffle(directors)
    rng.shuffle(actors)
    director_pick = _PowerLawPicker(directors, exponent=0.8, offset=5)
    actor_pick = _PowerLawPicker(actors, exponent=0.8, offset=10)

    def eligible(picker: _PowerLawPicker, year: int, taken: set[int]) -> int | None:
        for _ in range(40):
            p = picker.draw(rng)
            if p not in taken and people[p].can_work_in(year):
                return p
        return None

    for k, movie in enumerate(movies):
        director = eligible(director_pick, movie.year, set())
        movie.director = director if director is not None else _anyone(rng, directors, people, movie.year)
        taken: set[int] = set()
        for _ in range(rng.randint(3, 8)):
            actor = eligible(actor_pick, movie.year, taken)
            if actor is not None:
                taken.add(actor)
                movie.cast.append((actor, _character(rng)))
        if k % 500 == 0:
            report("credits", k, len(movies))

    # Movies are in release order, so a career window is a slice of them.
    years = [m.year for m in movies]

    def window(p: int) -> list[_Movie]:
        born = people[p].birth_year
        fitting = movies[bisect.bisect_left(years, born + MIN_AGE) : bisect.bisect_right(years, born + MAX_AGE)]
        return fitting or movies

    directed = Counter(m.director for m in movies)
    for p in directors:
        if directed[p]:
            continue
        # Take over a movie from a director who has others, so every director directed something;
        # failing that, a cameo, so that nobody is left without a credit.
        career = window(p)
        for _ in range(50):
            movie = rng.choice(career)
            if directed[movie.director] > 1:
                directed[movie.director] -= 1
                directed[p] += 1
                movie.director = p
                break
        else:
            rng.choice(career).cast.append((p, _character(rng)))
    acted = {a for m in movies for a, _ in m.cast}
    for p in actors:
        if p not in acted:
            rng.choice(window(p)).cast.append((p, _character(rng)))
    for movie in movies:
        if rng.random() < CAMEO_SHARE and movie.director not in {a for a, _ in movie.cast}:
            movie.cast.append((movie.director, _character(rng)))
    report("credits", len(movies), len(movies))


def _anyone(rng: random.Random, pool: list[int], people: list[_Person], year: int) -> int:
    """Someone from `pool` who could have worked in `year`, or anyone if nobody could."""
    fitting = [p for p in pool if people[p].can_work_in(year)]
    return rng.choice(fitting or pool)


def _character(rng: random.Random) -> str:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    form = rng.random()
    if form < 0.5:
        return f"{first} {last}"
    if form < 0.75:
        return f"{rng.choice(CHARACTER_TITLES)} {last}"
    return first


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE person(
    id INTEGER PRIMARY KEY,
    person_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    norm_name TEXT NOT NULL,
    birth_year INTEGER NOT NULL,
    country TEXT NOT NULL,
    known_for TEXT NOT NULL,
    popularity INTEGER NOT NULL
);
CREATE TABLE movie(
    id INTEGER PRIMARY KEY,
    movie_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    norm_title TEXT NOT NULL,
    year INTEGER NOT NULL,
    genre TEXT NOT NULL,
    rating REAL NOT NULL,
    runtime_min INTEGER NOT NULL,
    votes INTEGER NOT NULL
);
CREATE TABLE credit(
    movie INTEGER NOT NULL REFERENCES movie(id),
    person INTEGER NOT NULL REFERENCES person(id),
    role TEXT NOT NULL CHECK (role IN ('actor', 'director')),
    billing INTEGER NOT NULL,
    character TEXT,
    PRIMARY KEY (movie, role, billing)
);
CREATE INDEX credit_person ON credit(person);
CREATE VIRTUAL TABLE movie_fts USING fts5(
    title, content='movie', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE person_fts USING fts5(
    name, content='person', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
"""


def _write(path: Path, movies: list[_Movie], people: list[_Person], size: int, seed: int, report: Progress) -> int:
    """Write everything in one transaction; rows get ids 1..n in list order. Returns credit count."""
    person_rows = [
        (i, p.public_id, p.name, normalize(p.name, cjk_words=False), p.birth_year, p.country, p.known_for, p.popularity)
        for i, p in enumerate(people, start=1)
    ]
    movie_rows = [
        (i, m.public_id, m.title, normalize(m.title, cjk_words=False), m.year, m.genre, m.rating, m.runtime_min, m.votes)
        for i, m in enumerate(movies, start=1)
    ]
    credit_rows = [(i, m.director + 1, "director", 0, None) for i, m in enumerate(movies, start=1)]
    credit_rows += [
        (i, p + 1, "actor", billing, character)
        for i, m in enumerate(movies, start=1)
        for billing, (p, character) in enumerate(m.cast)
    ]
    meta = {"domain": "movies", "schema_version": SCHEMA_VERSION, "size": str(size), "seed": str(seed)}
    conn = sqlite3.connect(path)
    try:
        conn.executescript(_SCHEMA)
        with conn:
            conn.executemany("INSERT INTO person VALUES (?, ?, ?, ?, ?, ?, ?, ?)", person_rows)
            conn.executemany("INSERT INTO movie VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", movie_rows)
            conn.executemany("INSERT INTO credit VALUES (?, ?, ?, ?, ?)", credit_rows)
            conn.execute("INSERT INTO movie_fts(movie_fts) VALUES ('rebuild')")
            conn.execute("INSERT INTO person_fts(person_fts) VALUES ('rebuild')")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        report("index", 1, 1)
        return len(credit_rows)
    finally:
        conn.close()
