"""Entity mentions: found in a question, masked for the models, restored in their code.

A small model trained from scratch learns the shape of a program quickly but copies an unseen
name or title into it badly (ENVIRONMENT.md). So the models never copy: the mentions of a
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
_LATIN_RUN = re.compile(r"[A-Za-z0-9À-ɏ][A-Za-z0-9À-ɏ .,'’&+-]*[A-Za-z0-9À-ɏ.]|[A-Za-z0-9À-ɏ]")
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
}


def find_mentions(question: str) -> list[str]:
    """The question's mentions in order of appearance, each once, at most MAX_MENTIONS."""
    quoted = _quoted(question)
    found: list[tuple[int, str]] = [(start, text) for start, _, text in quoted]
    taken = [(start, end) for start, end, _ in quoted]
    rest = "".join(" " if any(a <= i < b for a, b in taken) else ch for i, ch in enumerate(question))
    runs = _latin_runs(rest) if _CJK.search(question) else _capitalised_runs(rest)
    found += runs
    mentions: list[str] = []
    for _, text in sorted(found):
        if text and text not in mentions:
            mentions.append(text)
    return mentions[:MAX_MENTIONS]


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


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or (word[:1].isdigit() and any(c.isalpha() for c in word))


def mention_markers(question: str, vocabulary: frozenset[str] = frozenset()) -> dict[str, str]:
    """Each mention of the question (and each `vocabulary` term it contains, matched whole and
    case-insensitively) with its typed marker, numbered per family in order of appearance."""
    mentions = [(question.find(m), m) for m in find_mentions(question)]
    if vocabulary:
        for m in _vocabulary_pattern(vocabulary).finditer(question.casefold()):
            if not any(a <= m.start() < a + len(t) or m.start() <= a < m.end() for a, t in mentions):
                mentions.append((m.start(), question[m.start() : m.end()]))
    quoted = {text for _, _, text in _quoted(question)}
    counts = dict.fromkeys(FAMILIES, 0)
    markers: dict[str, str] = {}
    for _, text in sorted(mentions):
        # a quoted mention is a title, even one with "Systems" or "AI" in it
        family = "v" if text.casefold() in vocabulary else "o" if text not in quoted and _names_organisation(text) else "e"
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


def _names_organisation(text: str) -> bool:
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
