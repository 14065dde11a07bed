"""Snap the literal arguments of generated code to spans of the question (RESTful-Llama §4.4).

A small model often writes a name or a title almost right ("Wei Zang" for "Wei Zhang"). The
words a fuzzy search needs are in the question, so each string a search API receives is
replaced by the question's span it most resembles, when the resemblance is clear. Only
arguments of fuzzy APIs are touched: an id or a value the code computed is never rewritten.
"""

from __future__ import annotations

import ast
import re
from difflib import SequenceMatcher

from soay.spec import ApiSpec

_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\s\u4e00-\u9fff\"“”《》「」?？,，。!！:：;；()（）]+")
_QUOTED = re.compile(r"[\"“《「](.+?)[\"”》」]")
MIN_SIMILARITY = 0.75
MAX_SPAN_TOKENS = 24


def spans(question: str) -> list[str]:
    """Candidate spans: quoted passages and every run of up to MAX_SPAN_TOKENS tokens."""
    found = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    tokens = list(_TOKEN.finditer(question))
    for i in range(len(tokens)):
        for j in range(i, min(len(tokens), i + MAX_SPAN_TOKENS)):
            found.append(question[tokens[i].start() : tokens[j].end()].strip(" .'’"))
    return [s for s in dict.fromkeys(found) if s]


def best_span(literal: str, question: str) -> str | None:
    """The question's span closest to `literal`, if it is close enough to be meant by it."""
    if re.search(rf"(?<![A-Za-z0-9]){re.escape(literal)}(?![A-Za-z0-9])", question, re.IGNORECASE):
        return None  # already a whole span of the question (a cut-off word is not)
    target = literal.casefold()
    best, best_score = None, MIN_SIMILARITY
    for span in spans(question):
        if abs(len(span) - len(literal)) > max(4, len(literal) // 2):
            continue
        score = SequenceMatcher(None, target, span.casefold()).ratio()
        if score > best_score:
            best, best_score = span, score
    return best


def snap_literals(code: str, question: str, spec: ApiSpec) -> str:
    """`code` with each fuzzy-API string argument replaced by its best question span."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    fuzzy = {a.name for a in spec.apis if a.kind == "fuzzy"}
    edits: list[tuple[int, int, str]] = []
    lines = code.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = code.encode("utf-8")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in fuzzy):
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.end_lineno == arg.lineno:
                snapped = best_span(arg.value, question)
                if snapped is not None:
                    start = offsets[arg.lineno - 1] + arg.col_offset
                    end = offsets[arg.end_lineno - 1] + arg.end_col_offset
                    edits.append((start, end, repr(snapped)))
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode("utf-8") + data[end:]
    return data.decode("utf-8")
