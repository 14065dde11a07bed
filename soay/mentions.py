"""Entity mentions: found in a question, masked for the models, restored in their code.

A small model trained from scratch learns the shape of a program quickly but copies an unseen
name or title into it badly. So the models never copy: the mentions of a
question (quoted titles, runs of capitalised words, Latin-script runs inside Chinese text) are
replaced by numbered markers, the planner and the coder read and write the markers, and the
markers in the generated code are turned back into the mentions' text as Python literals. This
is the delexicalisation long used in semantic parsing; it also strips entity noise from what
the planner and the exemplar search compare.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soay.tagging.tagger import MentionTagger

MAX_MENTIONS = 8
FAMILIES = ("e", "o", "v")
"""Marker families: `o` a mention that names an organisation, `v` a term of the literal vocabulary
(values such as research fields that questions write in lower case), `e` any other mention. Typed
markers keep "who is the name, which is the organisation" in the masked text, so a program's
binding does not depend on the order a phrasing puts them in."""
MARKERS = tuple(f"<|{family}{i}|>" for family in FAMILIES for i in range(1, MAX_MENTIONS + 1))

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|《([^》]+)》|「([^」]+)」")
_CJK = re.compile(r"[\u3400-\u9fff]")
_WORD = re.compile(r"[^\W_][\w.'’&+-]*")
_LATIN_RUN = re.compile(r"[A-Za-z0-9À-ɏ][A-Za-z0-9À-ɏ .,:'’&+-]*[A-Za-z0-9À-ɏ.]|[A-Za-z0-9À-ɏ]")
# Words that join capitalised words into one organisation name ("University of X, Y") or into
# a person's name ("Mohamed bin Zayed", "Ludwig van Beethoven").
_ORG_HEADS = {
    "university", "institute", "institut", "college", "school", "academy", "laboratory", "lab", "labs",
    "center", "centre", "research", "technologies", "corporation", "foundation", "hospital", "polytechnic",
}
_ORG_JOINERS = {"of", "for", "and", "&", "on", "in", "at"}
_NAME_PARTICLES = {"bin", "van", "von", "der", "de", "da", "di", "du", "la", "le", "al"}
# Capitalised only because they open a sentence or are common abbreviations, not names.
_NOT_NAMES = {
    "a", "an", "the", "what", "which", "who", "whom", "whose", "how", "when", "where", "why", "list", "give",
    "tell", "show", "find", "name", "is", "are", "does", "do", "did", "can", "could", "please", "i", "in", "on",
    "of", "for", "among", "with", "by", "from", "at", "to", "and", "or", "pdf", "url", "email", "if", "any",
    "all", "each", "every", "roughly", "someone", "somebody", "get", "fetch", "return", "look", "count",
    "my", "me", "was", "were", "has", "have", "had", "there", "this", "that", "these", "those", "it",
    # sentence openers of the domains' own phrasings (soay/intents/*.yaml)
    "what's", "who's", "i'd", "i'm", "identify", "should", "summarise", "summarize", "take", "compare", "they", "enumerate",
    "under", "check", "describe", "introduce", "just", "since", "explain", "point", "merge", "go", "link", "beyond",
    "phd", "provide", "report", "display", "locate", "retrieve", "search", "quick", "hey", "so", "now", "then",
    "hi", "hello", "i've", "i'll", "anyone", "anybody",
}


def find_mentions(question: str, organisations: frozenset[str] = frozenset()) -> list[str]:
    """The question's mentions in order of appearance, each once, at most MAX_MENTIONS. Quoted
    titles and the known `organisations` (written exactly) are taken first, so a name written
    against an organisation ("Peking UniversityPengdong Ding", "Han Han Georgia Institute of
    Technology advisor") is still a mention of its own."""
    quoted = _quoted(question)
    blanked = _blank(question, quoted)
    known = _known(blanked, organisations)
    found: list[tuple[int, str]] = [(start, text) for start, _, text in quoted + known]
    rest = _blank(blanked, known)
    runs = _latin_runs(rest) if _CJK.search(question) else _unquoted_titles(rest, _capitalised_runs(rest))
    found += runs
    mentions: list[str] = []
    for _, text in sorted(found):
        if text and text not in mentions:
            mentions.append(text)
    return mentions[:MAX_MENTIONS]


def _blank(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with the spans' characters replaced by spaces (offsets kept)."""
    return "".join(" " if any(a <= i < b for a, b, _ in spans) else ch for i, ch in enumerate(text))


def _known(text: str, organisations: frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, name) of each known organisation written in `text`, longest first. A name
    may touch it without a space ("…UniversityPengdong", "CarterUniversity…"): a match is only
    stopped by what would carry its word on, an upper-case letter or digit just before it or a
    lower-case letter or digit just after it."""
    if not organisations:
        return []
    return [(m.start(), m.end(), m.group(0)) for m in _organisation_pattern(organisations).finditer(text)]


@lru_cache(maxsize=8)
def _organisation_pattern(organisations: frozenset[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(o) for o in sorted(organisations, key=len, reverse=True))
    return re.compile(rf"(?<![A-Z0-9])(?:{names})(?![a-z0-9])")


@lru_cache(maxsize=8)
def split_vocabulary(vocabulary: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(fields, organisations) of a literal vocabulary (training/fit_heads.py literal_vocabulary):
    its lower-case terms are values mention detection does not see, matched whole and in any
    case; its cased terms are organisation names, matched exactly before mention detection.
    Cached: every question a served model masks and unmasks splits the same vocabulary."""
    fields = frozenset(t for t in vocabulary if t == t.lower())
    return fields, vocabulary - fields


def titles(question: str) -> list[str]:
    """The quoted spans of the question (titles)."""
    return [text for _, _, text in _quoted(question)]


def _quoted(question: str) -> list[tuple[int, int, str]]:
    """(start, end, text inside the quotes) of each quoted span: titles."""
    return [(m.start(), m.end(), next(g for g in m.groups() if g is not None).strip()) for m in _QUOTED.finditer(question)]


def _latin_runs(text: str) -> list[tuple[int, str]]:
    """In Chinese text every Latin-script run is a mention (names, organisations, fields)."""
    out = []
    for m in _LATIN_RUN.finditer(text):
        run = m.group(0).strip(" ,")
        if run and not run.isdigit():
            out.append((m.start(), run))
    return out


def _capitalised_runs(text: str) -> list[tuple[int, str]]:
    """In English text, maximal runs of capitalised words, joined through organisation joiners
    (only once the run names an organisation) and name particles."""
    words = list(_WORD.finditer(text))
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(words):
        if not _capitalised(words[i].group(0)) or words[i].group(0).lower() in _NOT_NAMES:
            i += 1
            continue
        start, j = i, i + 1
        while j < len(words):
            word = words[j].group(0)
            between = text[words[j - 1].end() : words[j].start()]
            if between not in (" ", ", ") or words[j - 1].group(0).endswith(("'s", "’s")):
                break  # a possessive ends a name: "X University's Y Z" is two mentions
            if _capitalised(word) and between == " ":
                j += 1
                continue
            is_org = any(w.group(0).lower().strip(",") in _ORG_HEADS for w in words[start:j])
            if j + 1 < len(words) and _capitalised(words[j + 1].group(0)) and text[words[j].end() : words[j + 1].start()] == " ":
                if (is_org and (word.lower() in _ORG_JOINERS or between == ", ")) or (between == " " and word in _NAME_PARTICLES):
                    j += 2
                    continue
            if is_org and between == ", " and _capitalised(word):
                j += 1
                continue
            break
        first = words[start].start()
        if start > 0 and words[start - 1].group(0) == "The" and any(w.group(0).lower().strip(",") in _ORG_HEADS for w in words[start:j]):
            first = words[start - 1].start()  # "The University of Hong Kong" is the name
        run = text[first : words[j - 1].end()]
        out.append((first, re.sub(r"['’]s$", "", run).rstrip(".,")))
        i = j
    return out


# What may stand between two capitalised runs of one title ("X of the Y", "X: Y"), and the
# capitalised openers ("On", "When", "Beyond") that belong to a title they stand right before.
_TITLE_GAP = re.compile(r"(?::|\s+-)?\s+(?:(?:of|for|with|in|on|the|to|via|a|an|under|over|through|without)\s+){0,3}")
_TITLE_OPENER = re.compile(r"(?:On|When|Beyond|Towards|Toward|Rethinking|Revisiting|Improving|Learning|Understanding)(?:\s+the)?\s+$")
TITLE_WORDS = (6, 4)
"""Words, and capitalised words, from which joined runs read as one unquoted title rather than a
name and a place ("Paul Jones of Carnegie Mellon" stays two mentions)."""


def _unquoted_titles(text: str, runs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """`runs` with consecutive runs that read as one unquoted paper title merged: separated only
    by a colon or title-case function words, long enough (TITLE_WORDS), and no
    organisation head (which "Jun Wu of Tsinghua University" has). Capitalised runs alone cut
    "Revisiting the Expressive Power of Contrastive Graph Embedding" into three mentions, and the
    coder searched for the first piece."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(runs):
        j = i
        while j + 1 < len(runs) and _TITLE_GAP.fullmatch(text[runs[j][0] + len(runs[j][1]) : runs[j + 1][0]]):
            j += 1
        start, end = runs[i][0], runs[j][0] + len(runs[j][1])
        opener = _TITLE_OPENER.search(text[:start])
        if opener and (opener.start() == 0 or not text[opener.start() - 1].isalnum()):
            start = opener.start()
        span = text[start:end]
        words = _WORD.findall(span)
        long_enough = len(words) >= TITLE_WORDS[0] and sum(map(_capitalised, words)) >= TITLE_WORDS[1]
        if j > i and long_enough and not {w.lower() for w in words} & _ORG_HEADS:
            out.append((start, span))
        else:
            out.extend(runs[i : j + 1])
        i = j + 1
    return out


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or (word[:1].isdigit() and any(c.isalpha() for c in word))


class Lexicon(frozenset):
    """What a trained model knows about the words of its questions: its literal vocabulary (the
    frozenset's terms, see split_vocabulary) and its mention tagger (soay/tagging), which, when
    there is one, finds the mentions instead of the rules above. A frozenset, so it travels
    through every function that takes a model's vocabulary, into Ray workers too."""

    tagger: MentionTagger | None

    def __new__(cls, terms: frozenset[str] = frozenset(), tagger: MentionTagger | None = None) -> Lexicon:
        lexicon = super().__new__(cls, terms)
        lexicon.tagger = tagger
        return lexicon

    def __reduce__(self):
        return (Lexicon, (frozenset(self), self.tagger))


SPAN_FAMILIES = {"organization": "o", "interest": "v"}
"""Marker family of a tagged span type; every other type (a name, a title, an imported spec's
parameter) is an `e` mention."""


def _tagged_markers(question: str, tagger: MentionTagger) -> dict[str, str]:
    counts = dict.fromkeys(FAMILIES, 0)
    markers: dict[str, str] = {}
    for start, end, kind in tagger.spans(question):
        text = question[start:end].strip()
        family = SPAN_FAMILIES.get(kind, "e")
        if not text or text in markers or counts[family] >= MAX_MENTIONS:
            continue
        counts[family] += 1
        markers[text] = f"<|{family}{counts[family]}|>"
    return markers


def mention_markers(question: str, vocabulary: frozenset[str] = frozenset()) -> dict[str, str]:
    """Each mention of the question (and each lower-case `vocabulary` term it contains, matched
    whole and case-insensitively) with its typed marker, numbered per family in order of appearance.
    A Lexicon with a tagger finds them with it instead."""
    tagger = getattr(vocabulary, "tagger", None)
    if tagger is not None:
        return _tagged_markers(question, tagger)
    fields, organisations = split_vocabulary(vocabulary)
    mentions = [(question.find(m), m) for m in find_mentions(question, organisations)]
    if fields:
        for m in _vocabulary_pattern(fields).finditer(question.casefold()):
            if not any(a <= m.start() < a + len(t) or m.start() <= a < m.end() for a, t in mentions):
                mentions.append((m.start(), question[m.start() : m.end()]))
    quoted = {text for _, _, text in _quoted(question)}
    counts = dict.fromkeys(FAMILIES, 0)
    markers: dict[str, str] = {}
    for _, text in sorted(mentions):
        # a quoted mention is a title, even one with "Systems" or "AI" in it
        family = "v" if text.casefold() in fields else "o" if text not in quoted and names_organisation(text) else "e"
        if text in markers or counts[family] >= MAX_MENTIONS:
            continue
        counts[family] += 1
        markers[text] = f"<|{family}{counts[family]}|>"
    return markers


@lru_cache(maxsize=8)
def _vocabulary_pattern(vocabulary: frozenset[str]) -> re.Pattern[str]:
    """One alternation over the terms, longest first, matched as whole words."""
    terms = "|".join(re.escape(t.casefold()) for t in sorted(vocabulary, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{terms})(?![\w-])")


_ORG_WORDS = _ORG_HEADS | {
    "universität", "université", "universitat", "universidad", "universidade", "università", "école", "politecnico",
    "tech", "group", "ai", "systems", "analytics", "science", "cloud", "deepmind", "inc", "ltd", "gmbh",
}
"""Words that make a mention an organisation's name (beyond the heads that join runs)."""


def names_organisation(text: str) -> bool:
    words = re.findall(r"[^\W\d_]+", text)
    acronym = len(words) == 1 and len(words[0]) >= 3 and words[0].isupper()  # CNRS, KAIST
    return acronym or any(w.lower() in _ORG_WORDS for w in words)


def mask_question(question: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """The question with each mention replaced by its marker (longest mentions first)."""
    masked = question
    for mention, marker in sorted(mention_markers(question, vocabulary).items(), key=lambda x: -len(x[0])):
        masked = masked.replace(mention, marker)
    return masked


def mask_code(code: str, question: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """`code` with every string literal that is one of the question's mentions written as its
    marker; literals that are not mentions stay as they are."""
    markers = mention_markers(question, vocabulary)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    edits = [
        (node.lineno, node.col_offset, node.end_col_offset, markers[node.value])
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in markers and node.lineno == node.end_lineno
    ]
    lines = code.splitlines(keepends=True)
    for lineno, start, end, marker in sorted(edits, reverse=True):
        raw = lines[lineno - 1].encode("utf-8")
        lines[lineno - 1] = (raw[:start] + marker.encode("utf-8") + raw[end:]).decode("utf-8")
    return "".join(lines)


_MARKER = r"<\|[eov]\d+\|>"
_UNFILLED_ARGUMENT = [  # (pattern, replacement): a keyword argument whose value is a marker, in any place of the call
    (re.compile(rf",\s*\w+\s*=\s*{_MARKER}(?=\s*[,)])"), ""),
    (re.compile(rf"\(\s*\w+\s*=\s*{_MARKER}\s*,\s*"), "("),
    (re.compile(rf"\(\s*\w+\s*=\s*{_MARKER}\s*\)"), "()"),
]


def unmask_code(code: str, question: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """Generated code with its markers replaced by the mentions' text as string literals. A keyword
    argument whose marker the question has no mention for is left out: "Who are the coauthors of
    Yang Wang?" names no organisation, so the program searches by name alone (and the answer can
    say that several scholars carry it) instead of failing on an unfilled marker."""
    for mention, marker in mention_markers(question, vocabulary).items():
        code = code.replace(marker, repr(mention))
    for pattern, replacement in _UNFILLED_ARGUMENT:
        code = pattern.sub(replacement, code)
    return code
