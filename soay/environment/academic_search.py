"""Search structures derived from the academic corpus's full-text indexes, and the searches over
them that keep `searchPublication` and `searchPerson` fast at a million scholars with exactly
the results of the plain FTS5 queries they stand in for.

Why: at 2 million titles FTS5's `ORDER BY rank` (BM25) costs a pass over the whole doclist of
every query word, to count the documents it is in (the IDF), and a score for every matching
title: a title with "learning" in it took 10-40 ms, two common keywords up to a second. A name
prefix query ("wang"*) reads and merges the doclists of every word with that prefix before the
first row comes out, though the search only wants the first 2,000.

What is stored (written by `build_search_indexes` when the corpus is built):

* `publication_term(term, doc, maxtf, prefix_doc)`: every word of the title index (FTS5's own
  vocabulary) with the number of titles holding it, its largest count in one title, and the
  number of titles holding a word it is a prefix of. A few thousand rows.
* `publication_posting(term, tf, len, n, ids)`: for each word, the titles holding it, in cells of
  one (count in the title, title length in words), each cell the sorted title ids as a blob of
  little-endian int32. Every title is in one cell per distinct word of it.
* `person_term(term)`: the vocabulary of the name index, to spell a prefix out as its words.

BM25 is computed as FTS5's `bm25()` computes it, operation for operation (k1 = 1.2, b = 0.75,
IDF = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6), so the scores are the same doubles and the
order (score, then rowid, which is how FTS5 orders equal ranks) is the same. All titles of a
cell score the same for a word, so the best titles are found by visiting cells from the best
possible score down and stopping when the tenth best found beats what any unvisited cell could
score. A corpus built before these tables existed is searched with FTS5 as before.
"""

from __future__ import annotations

import bisect
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator

import numpy as np

K1 = 1.2
B = 0.75
PREFIX_EXPANSION_LIMIT = 256  # a name prefix with more words than this stays an FTS5 prefix query
BLOB_CACHE_BYTES = 48 * 2**20  # posting cells kept decoded, per environment
MERGED_CACHE_TITLES = 500_000  # a prefix's cells are kept for the next query up to this many titles
MAXSCORE_BUDGET = 30_000  # titles scored one by one before scoring all titles at once pays
_MARGIN = 1e-9  # stop only when the best found beats a bound by more than rounding could explain


# ------------------------------------------------------------------------------------ building


def build_search_indexes(conn: sqlite3.Connection) -> dict[str, int]:
    """Write person_term, publication_term and publication_posting from the built FTS indexes
    (again, when they exist: after entities are inserted)."""
    for table in ("person_term", "publication_term", "publication_posting"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("CREATE VIRTUAL TABLE temp.person_vocab USING fts5vocab(main, person_fts, 'row')")
    conn.execute("CREATE TABLE person_term(term TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute("INSERT INTO person_term SELECT term FROM temp.person_vocab")
    conn.execute("DROP TABLE temp.person_vocab")
    n_postings = _build_title_postings(conn)
    conn.commit()
    return {"title_postings": n_postings}


def _build_title_postings(conn: sqlite3.Connection) -> int:
    """The title word statistics and posting cells; none when Python's words of a title are not
    exactly FTS5's (then searchPublication keeps to FTS5)."""
    conn.execute("CREATE VIRTUAL TABLE temp.title_vocab USING fts5vocab(main, publication_fts, 'row')")
    fts_stats = {t: (doc, cnt) for t, doc, cnt in conn.execute("SELECT term, doc, cnt FROM temp.title_vocab")}
    conn.execute("DROP TABLE temp.title_vocab")
    vocab = sorted(fts_stats)
    term_id = {t: i for i, t in enumerate(vocab)}
    max_id = conn.execute("SELECT max(id) FROM publication").fetchone()[0] or 0
    title_length = np.zeros(max_id + 1, dtype=np.int64)
    tokens: list[np.ndarray] = []  # term << 32 | title, one per word of a title
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, title_norm FROM publication WHERE id > ? ORDER BY id LIMIT 200000", (last,)
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        # title_norm is words joined by single spaces (normalize): one split for the chunk.
        words = " ".join(r[1] for r in rows).split(" ")
        n_words = np.fromiter((r[1].count(" ") + 1 for r in rows), dtype=np.int64, count=len(rows))
        if int(n_words.sum()) != len(words):
            return 0
        title_length[ids] = n_words
        try:
            terms = np.fromiter(map(term_id.__getitem__, words), dtype=np.int64, count=len(words))
        except KeyError:  # a word FTS5 does not have (an empty one: a title without words)
            return 0
        tokens.append((terms << 32) | np.repeat(ids, n_words))
    if not tokens or max_id >= 2**31 or title_length.max() > 255:
        return 0
    key = np.sort(np.concatenate(tokens))
    del tokens
    first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))  # runs: one per (word, title)
    tf = np.diff(np.append(first, len(key)))
    key = key[first]
    term, doc = key >> 32, key & 0xFFFFFFFF
    # Python's words are FTS5's: same vocabulary, same titles per word, same occurrences.
    doc_count = np.bincount(term, minlength=len(vocab))
    occurrences = np.bincount(term, weights=tf, minlength=len(vocab))
    if any(fts_stats[t] != (int(doc_count[i]), int(occurrences[i])) for i, t in enumerate(vocab)):
        return 0
    max_tf = np.zeros(len(vocab), dtype=np.int64)
    np.maximum.at(max_tf, term, tf)
    # Titles holding a word a term is a prefix of ("data" -> data, database, datasets): the
    # vocabulary is sorted, so those words are a run of it, and so are their rows in `key`.
    prefix_doc = doc_count.copy()
    starts = np.searchsorted(term, np.arange(len(vocab) + 1))
    seen = np.zeros(max_id + 1, dtype=bool)
    for i, t in enumerate(vocab):
        j = bisect.bisect_left(vocab, _after_prefix(t))
        if j > i + 1:
            titles = doc[starts[i] : starts[j]]
            seen[titles] = True
            prefix_doc[i] = int(np.count_nonzero(seen))
            seen[titles] = False
    conn.execute(
        "CREATE TABLE publication_term(term TEXT PRIMARY KEY, doc INTEGER NOT NULL, maxtf INTEGER NOT NULL, "
        "prefix_doc INTEGER NOT NULL) WITHOUT ROWID"
    )
    conn.executemany(
        "INSERT INTO publication_term VALUES (?, ?, ?, ?)",
        zip(vocab, doc_count.tolist(), max_tf.tolist(), prefix_doc.tolist()),
    )
    # Cells: (term, count, length), title ids ascending inside: one sort of the four packed
    # (term < 2^16: more words than that and there are no postings).
    if len(vocab) >= 2**16 or tf.max(initial=0) > 255:
        return 0
    packed = np.sort((term << 47) | (tf << 39) | (title_length[doc] << 31) | doc)
    cell = packed >> 31
    doc = packed & 0x7FFFFFFF
    del packed
    bounds = np.flatnonzero(np.diff(cell)) + 1
    starts_list = [0, *bounds.tolist()]
    ends_list = [*bounds.tolist(), len(cell)]
    conn.execute(
        "CREATE TABLE publication_posting(term TEXT NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, "
        "n INTEGER NOT NULL, ids BLOB NOT NULL)"
    )
    doc32 = doc.astype("<i4")
    if len(cell):
        conn.executemany(
            "INSERT INTO publication_posting VALUES (?, ?, ?, ?, ?)",
            (
                (vocab[c >> 16], (c >> 8) & 255, c & 255, e - s, doc32[s:e].tobytes())
                for c, s, e in zip(cell[starts_list].tolist(), starts_list, ends_list)
            ),
        )
    conn.execute("CREATE INDEX publication_posting_term ON publication_posting(term, tf, len, n)")
    return len(doc)


def _after_prefix(prefix: str) -> str:
    """The least string greater than every string that starts with `prefix` (code point order,
    which is the UTF-8 byte order SQLite compares TEXT in)."""
    code = ord(prefix[-1]) + 1
    if 0xD800 <= code <= 0xDFFF:  # no surrogates in UTF-8
        code = 0xE000
    return prefix[:-1] + chr(code)


# --------------------------------------------------------------------------------- searching


class _Reader:
    """Queries on the environment's connection, under its lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock):
        self._conn, self._lock = conn, lock

    def rows(self, sql: str, *params: object) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()


def _has_table(reader: _Reader, name: str) -> bool:
    return bool(reader.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name))


class NameTerms:
    """A name query's prefix words spelled out as the words of the name index they stand for.

    FTS5 answers `"wang"*` by merging the doclists of every word starting with "wang" before it
    returns a row; `("wang" OR "wangari")` is the same set of rows in the same (rowid) order,
    read lazily, so a LIMIT stops it early.
    """

    def __init__(self, reader: _Reader):
        self._reader = reader
        self._cache: OrderedDict[str, list[str]] = OrderedDict()

    @classmethod
    def open(cls, conn: sqlite3.Connection, lock: threading.Lock) -> NameTerms | None:
        reader = _Reader(conn, lock)
        return cls(reader) if _has_table(reader, "person_term") else None

    def expand(self, prefix: str) -> list[str]:
        """The words of the name index starting with `prefix` (at most PREFIX_EXPANSION_LIMIT + 1)."""
        words = self._cache.get(prefix)
        if words is None:
            words = [
                r[0]
                for r in self._reader.rows(
                    "SELECT term FROM person_term WHERE term >= ? AND term < ? ORDER BY term LIMIT ?",
                    prefix,
                    _after_prefix(prefix),
                    PREFIX_EXPANSION_LIMIT + 1,
                )
            ]
            self._cache[prefix] = words
            if len(self._cache) > 4096:
                self._cache.popitem(last=False)
        return words

    def query(self, tokens: list[str], any_word: bool) -> str | None:
        """The FTS5 query matching what `"t1"* "t2"*` (or `"t1"* OR "t2"*`) matches; None when
        nothing can match."""
        groups = []
        for token in tokens:
            words = self.expand(token)
            if not words:
                if any_word:
                    continue
                return None
            if len(words) > PREFIX_EXPANSION_LIMIT:
                groups.append(f'"{token}"*')
            else:
                groups.append("(" + " OR ".join(f'"{w}"' for w in words) + ")")
        if not groups:
            return None
        return (" OR " if any_word else " AND ").join(groups)


class TitleSearch:
    """Exact BM25 top-k over the title posting cells (see the module docstring)."""

    def __init__(self, reader: _Reader):
        self._reader = reader
        self._terms: dict[str, tuple[int, int, int]] = {
            t: (doc, maxtf, pdoc)
            for t, doc, maxtf, pdoc in reader.rows("SELECT term, doc, maxtf, prefix_doc FROM publication_term")
        }
        self._sorted = sorted(self._terms)
        self._n_rows, total_tokens = _fts_averages(reader, "publication_fts")
        self._avgdl = float(total_tokens) / float(self._n_rows) if self._n_rows else 0.0
        self._max_id = reader.rows("SELECT max(id) FROM publication")[0][0] or 0
        self._cells: dict[str, list[tuple[int, int, int, int]]] = {}  # term -> (tf, len, n, rowid)
        self._blobs: OrderedDict[int, np.ndarray] = OrderedDict()
        self._blob_bytes = 0
        self._prefix_df: dict[str, int] = {}
        self._merged: OrderedDict[str, list[tuple[int, int, np.ndarray]]] = OrderedDict()
        self._scores: np.ndarray | None = None  # one score per title, for _top_any_dense
        self._lock = threading.Lock()  # the caches; the connection has its own lock

    @classmethod
    def open(cls, conn: sqlite3.Connection, lock: threading.Lock) -> TitleSearch | None:
        reader = _Reader(conn, lock)
        if not _has_table(reader, "publication_posting"):
            return None
        return cls(reader)

    # ------------------------------------------------------------------------- the two queries

    def top_all(self, words: list[str], limit: int) -> list[int] | None:
        """Rowids of `"w1" "w2" ... "wn"*` ORDER BY rank LIMIT `limit`, as FTS5 gives them; None
        when the words are not plain enough to be sure of FTS5's reading of them."""
        if not self._plain(words):
            return None
        phrases = [[w] if w in self._terms else [] for w in words[:-1]] + [self._expand(words[-1])]
        if any(not p for p in phrases):
            return []
        keys = [("", w) for w in words[:-1]] + [("*", words[-1])]
        with self._lock:
            return self._top_all(phrases, keys, limit)

    def top_any(self, words: list[str], limit: int) -> list[int] | None:
        """Rowids of `"w1" OR "w2" ...` ORDER BY rank LIMIT `limit`, as FTS5 gives them."""
        if not self._plain(words):
            return None
        with self._lock:
            return self._top_any(words, limit)

    # -------------------------------------------------------------------------------- scoring

    def _idf(self, n_hit: int) -> float:
        idf = math.log((self._n_rows - n_hit + 0.5) / (n_hit + 0.5))
        return idf if idf > 0.0 else 1e-6

    def _weight(self, idf: float, freq: float | np.ndarray, length: int) -> float | np.ndarray:
        """One phrase's share of a title's BM25 score, as fts5Bm25Function computes it."""
        return idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * float(length) / self._avgdl)))

    def _top_all(self, phrases: list[list[str]], keys: list[tuple[str, str]], limit: int) -> list[int]:
        dfs = [self._df(p, k) for p, k in zip(phrases, keys)]
        idfs = [self._idf(n) for n in dfs]
        driver = min(range(len(phrases)), key=lambda i: (dfs[i], i))
        # The most a phrase can count in a title of each length (a bound: a prefix's words may
        # not all be in one title).
        max_tf = [self._max_tf_by_length(p) for p in phrases]
        lengths = set.intersection(*(set(m) for m in max_tf))
        cells = []
        for tf, length, ids in self._phrase_cells(phrases[driver], keys[driver]):
            if length not in lengths:
                continue
            bound = 0.0
            for i, idf in enumerate(idfs):
                bound += self._weight(idf, float(tf if i == driver else max_tf[i][length]), length)
            cells.append((bound, tf, length, ids))
        cells.sort(key=lambda c: -c[0])
        best_scores = np.zeros(0)
        best_ids = np.zeros(0, dtype=np.int64)
        for bound, tf, length, ids in cells:
            if len(best_ids) >= limit and best_scores[limit - 1] > bound + _MARGIN:
                break
            ids = self._load(ids)
            freqs: list[np.ndarray | None] = [None] * len(phrases)
            freqs[driver] = np.full(len(ids), float(tf))
            for i, phrase in enumerate(phrases):
                if i == driver or not len(ids):
                    continue
                f = self._freq_at(phrase, length, ids)
                keep = f > 0
                ids, f = ids[keep], f[keep]
                freqs = [x[keep] if x is not None else None for x in freqs]
                freqs[i] = f
            if not len(ids):
                continue
            score = np.zeros(len(ids))
            for i, idf in enumerate(idfs):
                score += self._weight(idf, freqs[i], length)
            best_scores, best_ids = _merge_top(best_scores, best_ids, score, ids.astype(np.int64), limit)
        return best_ids[:limit].tolist()

    def _top_any(self, words: list[str], limit: int) -> list[int]:
        """MaxScore: the words' titles are scored (exactly, all words) from the word that can add
        the most to a score down; once the words left could not add up to the `limit`-th best
        score found, no title holding only them can be among the best, and the search stops."""
        known = [w for w in words if w in self._terms]  # an unknown word adds 0 to every score
        if not known:
            return []
        idf = {w: self._idf(self._terms[w][0]) for w in known}
        most = {w: max(self._weight(idf[w], float(tf), length) for tf, length, _, _ in self._cells_of(w)) for w in known}
        order = sorted(dict.fromkeys(known), key=lambda w: (-most[w], w))
        left = [sum(most[w] for w in known if w in order[k:]) for k in range(len(order) + 1)]
        scored: dict[int, np.ndarray] = {}  # title length -> ids scored (sorted)
        all_ids: list[np.ndarray] = []
        all_scores: list[np.ndarray] = []
        kth = 0.0
        n_scored = 0
        for k, word in enumerate(order):
            if n_scored >= limit and left[k] + _MARGIN < kth:
                break
            if n_scored + self._terms[word][0] > MAXSCORE_BUDGET:
                # Common words only: scoring every title of the words at once is cheaper.
                return self._top_any_dense(words, idf, limit)
            by_length: dict[int, list[np.ndarray]] = {}
            for _, length, _, rowid in self._cells_of(word):
                by_length.setdefault(length, []).append(self._load(rowid))
            for length, parts in by_length.items():
                ids = np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0]
                done = scored.get(length)
                if done is not None:
                    ids = ids[~_contains(done, ids)]
                if not len(ids):
                    continue
                # Every phrase in the query's order (how bm25() sums). These titles hold none of
                # the words visited before this one (those titles are scored): their shares are
                # 0, and adding 0.0 changes no sum, so those words are not looked up.
                score = np.zeros(len(ids))
                absent = set(order[:k])
                for w in words:
                    if w in self._terms and w not in absent:
                        score += self._weight(idf[w], self._freq_at([w], length, ids), length)
                scored[length] = ids if done is None else np.union1d(done, ids)
                all_ids.append(ids)
                all_scores.append(score)
                n_scored += len(ids)
            if n_scored >= limit:
                scores = np.concatenate(all_scores)
                kth = float(np.partition(scores, len(scores) - limit)[len(scores) - limit])
        if not all_ids:
            return []
        ids = np.concatenate(all_ids)
        scores = np.concatenate(all_scores)
        order_ = np.lexsort((ids, -scores))[:limit]
        return ids[order_].tolist()

    def _top_any_dense(self, words: list[str], idf: dict[str, float], limit: int) -> list[int]:
        """Every title of the words scored: each word's share added cell by cell into one
        array over all titles (in the query's order of words, as bm25() sums)."""
        if self._scores is None:
            self._scores = np.zeros(self._max_id + 1)
        scores = self._scores
        touched: list[np.ndarray] = []
        for w in words:
            if w not in idf:
                continue
            for tf, length, _, rowid in self._cells_of(w):
                ids = self._load(rowid)
                scores[ids] += self._weight(idf[w], float(tf), length)
                touched.append(ids)
        ids = np.concatenate(touched)
        values = scores[ids]
        if len(ids) > limit:
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            best_ids, best_values = ids[keep], values[keep]
        else:
            best_ids, best_values = ids, values
        best_ids, first = np.unique(best_ids, return_index=True)  # a title is in each of its words
        best_values = best_values[first]
        scores[ids] = 0.0
        order = np.lexsort((best_ids, -best_values))[:limit]
        return best_ids[order].tolist()

    # ------------------------------------------------------------------------------- postings

    @staticmethod
    def _plain(words: list[str]) -> bool:
        """Words FTS5 reads as the same single token: lowercase ASCII letters and digits (what
        `normalize` gives for Latin text). Anything else goes to FTS5 itself."""
        return bool(words) and all(w.isascii() and w.isalnum() and w == w.lower() for w in words)

    def _expand(self, prefix: str) -> list[str]:
        lo = bisect.bisect_left(self._sorted, prefix)
        hi = bisect.bisect_left(self._sorted, _after_prefix(prefix), lo)
        return self._sorted[lo:hi]

    def _df(self, phrase: list[str], key: tuple[str, str]) -> int:
        """Titles holding the phrase (FTS5's n for the IDF)."""
        if len(phrase) == 1:
            return self._terms[phrase[0]][0]
        word = key[1]
        if word in self._terms:
            return self._terms[word][2]
        n = self._prefix_df.get(word)
        if n is None:
            n = self._reader.rows("SELECT count(*) FROM publication_fts WHERE publication_fts MATCH ?", f'"{word}"*')[0][0]
            self._prefix_df[word] = n
        return n

    def _cells_of(self, term: str) -> list[tuple[int, int, int, int]]:
        cells = self._cells.get(term)
        if cells is None:
            cells = self._cells[term] = self._reader.rows(
                "SELECT tf, len, n, rowid FROM publication_posting WHERE term = ? ORDER BY tf, len", term
            )
        return cells

    def _max_tf_by_length(self, phrase: list[str]) -> dict[int, int]:
        out: dict[int, int] = {}
        for term in phrase:
            best: dict[int, int] = {}
            for tf, length, _, _ in self._cells_of(term):
                best[length] = max(best.get(length, 0), tf)
            for length, tf in best.items():
                out[length] = out.get(length, 0) + tf
        return out

    def _phrase_cells(self, phrase: list[str], key: tuple[str, str]) -> Iterator[tuple[int, int, int | np.ndarray]]:
        """(tf, length, ids or the rowid of their blob) of a phrase: a word's stored cells, or a
        prefix's, computed from its words' (cached)."""
        if len(phrase) == 1:
            for tf, length, _, rowid in self._cells_of(phrase[0]):
                yield tf, length, rowid
            return
        merged = self._merged.get(key[1])
        if merged is None:
            parts = [(self._load(rowid), tf, length) for term in phrase for tf, length, _, rowid in self._cells_of(term)]
            ids = np.concatenate([p[0] for p in parts]).astype(np.int64)
            tfs = np.concatenate([np.full(len(p[0]), p[1]) for p in parts])
            lens = np.concatenate([np.full(len(p[0]), p[2]) for p in parts])
            uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
            tf_sum = np.bincount(inverse, weights=tfs).astype(np.int64)
            length = lens[first]
            cell = (tf_sum << 16) | length
            order = np.lexsort((uniq, cell))
            cell, uniq = cell[order], uniq[order]
            bounds = np.flatnonzero(np.diff(cell)) + 1
            merged = [
                (int(c >> 16), int(c & 65535), part)
                for c, part in zip(cell[np.concatenate([[0], bounds]).astype(np.int64)].tolist(), np.split(uniq, bounds))
            ] if len(uniq) else []
            if len(uniq) <= MERGED_CACHE_TITLES:  # a short prefix ("a") holds most titles: not kept
                self._merged[key[1]] = merged
                if len(self._merged) > 64:
                    self._merged.popitem(last=False)
        yield from merged

    def _freq_at(self, phrase: list[str], length: int, ids: np.ndarray) -> np.ndarray:
        """The phrase's count in each of the titles `ids` (all of `length` words; 0 if absent)."""
        freq = np.zeros(len(ids))
        for term in phrase:
            for tf, cell_length, _, rowid in self._cells_of(term):
                if cell_length != length:
                    continue
                freq[_contains(self._load(rowid), ids)] += tf
        return freq

    def _load(self, ids: int | np.ndarray) -> np.ndarray:
        """The title ids of a cell by the rowid of its blob, decoded and kept in an LRU cache."""
        if isinstance(ids, np.ndarray):
            return ids
        cached = self._blobs.get(ids)
        if cached is not None:
            self._blobs.move_to_end(ids)
            return cached
        blob = self._reader.rows("SELECT ids FROM publication_posting WHERE rowid = ?", ids)[0][0]
        array = np.frombuffer(blob, dtype="<i4").astype(np.int64)
        self._blobs[ids] = array
        self._blob_bytes += array.nbytes
        while self._blob_bytes > BLOB_CACHE_BYTES and len(self._blobs) > 1:
            _, old = self._blobs.popitem(last=False)
            self._blob_bytes -= old.nbytes
        return array


def _contains(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Which of `ids` are in `sorted_ids` (ascending), as a boolean mask."""
    if not len(sorted_ids):
        return np.zeros(len(ids), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return sorted_ids[pos] == ids


def _merge_top(
    scores: np.ndarray, ids: np.ndarray, new_scores: np.ndarray, new_ids: np.ndarray, limit: int
) -> tuple[np.ndarray, np.ndarray]:
    """The `limit` best of both, best first: score descending, then id ascending (FTS5's order)."""
    all_scores = np.concatenate([scores, new_scores])
    all_ids = np.concatenate([ids, new_ids])
    order = np.lexsort((all_ids, -all_scores))[:limit]
    return all_scores[order], all_ids[order]


def _fts_averages(reader: _Reader, table: str) -> tuple[int, int]:
    """(rows, total tokens) of an FTS5 table, from its averages record (what bm25() reads)."""
    block = reader.rows(f"SELECT block FROM {table}_data WHERE id = 1")[0][0]
    n_rows, i = _varint(block, 0)
    total, _ = _varint(block, i)
    return n_rows, total


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """SQLite's variable-length integer at data[i:]: (value, index after it)."""
    value = 0
    for _ in range(8):
        byte = data[i]
        i += 1
        if byte < 0x80:
            return (value << 7) | byte, i
        value = (value << 7) | (byte & 0x7F)
    return (value << 8) | data[i], i + 1
