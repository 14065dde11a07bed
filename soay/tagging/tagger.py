"""A CRF over word shapes that finds typed spans in a question.

Why a CRF (python-crfsuite) rather than rules or the base model: the rules it replaces
(capitalised runs, word lists, a gazetteer of the corpus) cannot know the world's organisations,
fields and name shapes, and failed on "Who at Spotify…", "…Wong in Stream Mining field" and
"Research interests of…". A linear-chain CRF over per-token features (the word, its shape,
affixes, its neighbours; each CJK character its own token) learns from the generated questions
where a span starts and ends and what type it is, trains in seconds on a CPU and tags a question
in well under a millisecond. benchmarks/REPORT-model.md ("Open-world questions") compares it with
a head on the base model's per-token hidden states.

Labels are BIO over span types: the spec's parameter names (`name`, `organization`,
`interest`, `publication_info`, or an imported spec's own), so any domain gets spans of its
parameters' types.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pycrfsuite

from soay.tagging.values import open_world

_CJK = "\u3400-\u9fff"
_L = rf"[^\W_{_CJK}]"
TOKEN = re.compile(rf"[{_CJK}]|{_L}\.(?:{_L}\.)+|{_L}\.(?=\s)|{_L}(?:(?:{_L}|['’](?!s\b)|[*&.\-])*{_L})?|\S")
"""Tokens: one CJK character; initials with their dots ("K.L.", "J."); a word with inner
apostrophes, hyphens, dots ("O'Brien", "Soo-jin", "Booking.com") but not a possessive's
("Cambridge's" is "Cambridge", "'", "s": the name ends before it); any other single character."""

Span = tuple[int, int, str]
"""(start, end, type) character offsets into the question."""


_GLUED = re.compile(r"(?<=[a-z]{3})(?=[A-Z][a-z])")
"""Where two words were typed without a space ("Peking UniversityPengdong Ding", "University
Yu Feng" typed as "UniversityYu Feng"): a lower-case run of three, then a capitalised word.
"McGill" and "OpenAI" stay whole; "DeepMind" splits, which costs nothing, as adjacent tokens of
one span are joined again."""


def tokenize(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in TOKEN.finditer(text):
        start = m.start()
        for cut in _GLUED.finditer(m.group(0)):
            spans.append((start, m.start() + cut.start()))
            start = m.start() + cut.start()
        spans.append((start, m.end()))
    return spans


_ZH_FUNCTION = frozenset("的之为是在于和与及或由从向对把被给跟同以将了过着吗呢吧啊呀哪谁什么个位篇有")
"""Chinese function characters: a name, organisation or field neither starts nor ends with one
("研究方向为量子计算的王伟": the field is 量子计算, not 为量子计算). A feature of their own lets what
the tagger learns of 的 or 是 in one phrasing carry to 为 or 于 in another."""


def _is_cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff"


def _shape(word: str) -> str:
    out = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else "C" if _is_cjk(ch) else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def _word_features(word: str, prefix: str, hidden: bool = False) -> list[str]:
    lower = word.lower()
    features = [f"{prefix}shape={_shape(word)}"]
    if not hidden:
        features.append(f"{prefix}w={lower}")
    if prefix == "":
        if not hidden:
            features += [f"p2={lower[:2]}", f"p3={lower[:3]}", f"s2={lower[-2:]}", f"s3={lower[-3:]}"]
        features.append(f"len={min(len(word), 8)}")
        if any(unicodedata.decomposition(ch) for ch in word if ch.isalpha() and not _is_cjk(ch)):
            features.append("diacritic")
    if word in _ZH_FUNCTION:
        features.append(f"{prefix}zhfunction")
    return features


RUN_MAX = 5
"""Capitalised runs of this many words or more share one feature value: past four words a run is
a title (or a long organisation), whatever its exact length."""


@cache
def _connectors() -> frozenset[str]:
    """Words that join a title's capitalised words: open_world.yaml's title connectors ("with",
    "on", "from", ...), articles, a dash and a colon."""
    return frozenset(open_world()["publication_info"]["connector"]) | {"the", "a", "an", "-", ":"}


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() or (word[:1].isdigit() and len(word) > 1)


def _run_lengths(words: Sequence[str], glued: Sequence[bool], joined: bool = True) -> list[int]:
    """Per word, the length of the capitalised run it lies in (0: none): capitalised words and,
    when `joined`, the connectors between them ("Data Lake Discovery with Joinable Table Search"
    is one run of 7). A word sees only its neighbours; the run's length is what tells a
    seven-word title from a two-word name followed by an organisation. Both lengths are
    features, as "Wei Zhang at Tsinghua University" is a joined run of five too. A run ends where
    two words were typed without a space ("Carnegie Mellon UniversityYu Feng": `glued`), which is
    where an organisation meets a name."""
    connectors = _connectors() if joined else frozenset()
    lengths = [0] * len(words)
    i = 0
    while i < len(words):
        if not _is_capitalised(words[i]):
            i += 1
            continue
        end = i + 1
        while end < len(words) and not (glued[end] and words[end - 1][-1:].isalpha() and words[end][:1].isalpha()):
            if _is_capitalised(words[end]):
                end += 1
            elif words[end].lower() in connectors and end + 1 < len(words) and _is_capitalised(words[end + 1]):
                end += 2
            else:
                break
        lengths[i:end] = [end - i] * (end - i)
        i = end
    return lengths


_QUOTED = [re.compile(re.escape(opener) + r"(.+?)" + re.escape(closer))
           for opener, closer in {'"': '"', "“": "”", "《": "》", "「": "」", "‘": "’"}.items()]
_QUOTED.append(re.compile(r"(?:^|(?<=[\s(:]))'(.+?)'(?=$|[\s?.,;:!)])"))
"""What a pair of quotes holds. A straight single quote opens only after a space or the start and
closes only before a space, punctuation or the end, so that "O'Brien" and "Cambridge's" quote
nothing."""


def _quoted(text: str, tokens: Sequence[tuple[int, int]]) -> list[bool]:
    """Per token, whether it lies between a pair of quotes: a quoted run is almost always a title."""
    inside = [False] * len(tokens)
    for pattern in _QUOTED:
        for m in pattern.finditer(text):
            a, b = m.start(1), m.end(1)
            for i, (start, end) in enumerate(tokens):
                if start >= a and end <= b:
                    inside[i] = True
    return inside


def features(text: str, tokens: Sequence[tuple[int, int]], hidden: frozenset[int] = frozenset()) -> list[list[str]]:
    """Each token's features. `hidden` tokens show only their shape, not which word they are:
    what an unseen word looks like to the trained CRF (see `train_tagger`)."""
    words = [text[a:b] for a, b in tokens]
    glued = [i > 0 and tokens[i][0] == tokens[i - 1][1] for i in range(len(tokens))]
    runs, caps = _run_lengths(words, glued), _run_lengths(words, glued, joined=False)
    quoted = _quoted(text, tokens)
    out = []
    for i, word in enumerate(words):
        f = ["bias", *_word_features(word, "", i in hidden)]
        if runs[i]:
            f += [f"run={min(runs[i], RUN_MAX)}", f"caps={min(caps[i], RUN_MAX)}"]
        if quoted[i]:
            f.append("quoted")
        if i == 0:
            f.append("BOS")
        if i == len(words) - 1:
            f.append("EOS")
        if glued[i]:
            f.append("glued")  # no space before: "清华大学的王伟", "K.L.Wong"
        for k in (-2, -1, 1, 2):
            j = i + k
            if 0 <= j < len(words):
                f += _word_features(words[j], f"{k}:", j in hidden)
        if i > 0 and not {i - 1, i} & hidden:
            f.append(f"bi-1={words[i - 1].lower()}|{word.lower()}")
        if i + 1 < len(words) and not {i, i + 1} & hidden:
            f.append(f"bi+1={word.lower()}|{words[i + 1].lower()}")
        out.append(f)
    return out


def bio_labels(tokens: Sequence[tuple[int, int]], spans: Iterable[Span]) -> list[str]:
    """Each token's label: B-type / I-type where it lies in a span, O elsewhere."""
    labels = ["O"] * len(tokens)
    for start, end, kind in spans:
        inside = [i for i, (a, b) in enumerate(tokens) if a >= start and b <= end]
        for n, i in enumerate(inside):
            labels[i] = f"{'B' if n == 0 else 'I'}-{kind}"
    return labels


def decode(text: str, tokens: Sequence[tuple[int, int]], labels: Sequence[str]) -> list[Span]:
    spans: list[Span] = []
    for (a, b), label in zip(tokens, labels):
        if label == "O":
            continue
        tag, kind = label.split("-", 1)
        if tag == "I" and spans and spans[-1][2] == kind and spans[-1][1] <= a:
            spans[-1] = (spans[-1][0], b, kind)
        else:
            spans.append((a, b, kind))
    return [trimmed for a, b, k in spans if (trimmed := _trim(text, a, b, k))]


_CLOSER = {"'": "'", '"': '"', "‘": "’", "“": "”", "「": "」", "《": "》"}
_OPENER = {closer: opener for opener, closer in _CLOSER.items()}


def _trim(text: str, start: int, end: int, kind: str) -> Span | None:
    """A span without what is not its own: quotes around all of it, a quote at an edge whose
    partner it does not hold ("'State Estimation for…" opened by the question), and the question
    mark that ends the question ("…for Legged Locomotion: A Benchmark?": a title's own would be
    followed by more)."""
    if text[start:end].endswith("?") and not text[end:].strip():
        end -= 1
    while end - start > 1 and text[start] in _CLOSER and text[end - 1] == _CLOSER[text[start]]:  # 《…》 around it all
        start, end = start + 1, end - 1
    while end > start and text[start] in _CLOSER and _CLOSER[text[start]] not in text[start + 1 : end]:
        start += 1
    while end > start and text[end - 1] in _OPENER and _OPENER[text[end - 1]] not in text[start : end - 1]:
        end -= 1
    while end > start and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end, kind) if end > start else None


@dataclass
class TaggedQuestion:
    text: str
    spans: list[Span]


def train_tagger(
    examples: Iterable[TaggedQuestion], path: Path, c1: float = 0.05, c2: float = 0.01, max_iterations: int = 60,
    hide_rate: float = 0.3, seed: int = 0,
) -> Path:
    """Fit the CRF on `examples` and write it to `path` (crfsuite's own binary format).

    An example is learnt as written and, where any of its Latin-script span words is drawn (each
    with `hide_rate`), again with those words shown by their shape only. Without the second copy the CRF leans on knowing the words of its
    training values; a question's own names, fields and titles are mostly words it never saw, and
    the copy teaches it to find them by their shape and their place in the question
    (benchmarks/REPORT-model.md: open-world validation spans exact 87.3 -> 88.8 %). Chinese
    characters stay shown: a Chinese name is found by its surname character."""
    rng = random.Random(seed)
    trainer = pycrfsuite.Trainer(verbose=False)
    for example in examples:
        tokens = tokenize(example.text)
        if tokens:
            labels = bio_labels(tokens, example.spans)
            trainer.append(features(example.text, tokens), labels)
            hidden = frozenset(i for i, label in enumerate(labels) if label != "O" and rng.random() < hide_rate
                               and not _is_cjk(example.text[tokens[i][0]]))
            if hidden:
                trainer.append(features(example.text, tokens, hidden), labels)
    trainer.set_params({"c1": c1, "c2": c2, "max_iterations": max_iterations, "feature.possible_transitions": True})
    path.parent.mkdir(parents=True, exist_ok=True)
    trainer.train(str(path))
    return path


class MentionTagger:
    """A trained tagger, loaded once per process and shared by every question it masks."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._tagger = pycrfsuite.Tagger()
        self._tagger.open(str(self.path))

    def spans(self, text: str) -> list[Span]:
        """The typed spans of `text`, in order."""
        tokens = tokenize(text)
        if not tokens:
            return []
        return decode(text, tokens, self._tagger.tag(features(text, tokens)))

    def __reduce__(self):  # a Ray task or a Serve replica receives the file's path, not the C object
        return (MentionTagger, (self.path,))
