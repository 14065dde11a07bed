"""What a word is to the corpora's full-text search, on the Python side.

Both packaged corpora index their names and titles with SQLite FTS5's `unicode61
remove_diacritics 2` tokenizer and keep, beside each name, a normalised copy for exact-match
ranking. `normalize` is the one rule for that copy and for the words of a query, so that a
Python-side exact comparison and an FTS match agree on what a word is.
"""

from __future__ import annotations

import re
import unicodedata

FTS_TOKENIZER = "unicode61 remove_diacritics 2"
CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
"""A Chinese character (CJK unified ideographs, extension A, compatibility ideographs)."""
_CJK_GROUP = re.compile(f"({CJK_CHAR.pattern})")
_SEPARATORS = re.compile(r"[\W_]+")


def normalize(text: str, cjk_words: bool = True) -> str:
    """Case- and diacritics-folded words joined by single spaces: letters and digits only,
    accents dropped, casefolded, so "Zoë Müller" and "zoe  MULLER" are one name. Letters that are
    not accented forms of another (ø in Søren) stay as they are.

    With `cjk_words` a Chinese character is a word by itself ("清华大学" -> "清 华 大 学"), as the
    academic corpus writes Chinese text into its full-text indexes (`fts_words`), so that "清华"
    matches "清华大学". The movie corpus indexes its columns as written (no Chinese in them), where
    a run of characters is one token, so it normalises with `cjk_words=False`.
    """
    if text.isascii():  # the common case, 10x faster
        return " ".join(filter(None, _SEPARATORS.split(text.lower())))
    if cjk_words:
        text = _CJK_GROUP.sub(r" \1 ", text)
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(filter(None, _SEPARATORS.split(stripped.casefold())))


def fts_words(text: str | None) -> str:
    """What the academic corpus's full-text indexes hold for a name: Chinese characters as words
    of their own ("清华大学" -> "清 华 大 学"), so that any part of a Chinese name matches, as
    `normalize` splits a query. Latin text passes through (the tokenizer folds it itself)."""
    return _CJK_GROUP.sub(r" \1 ", text).strip() if text else ""
