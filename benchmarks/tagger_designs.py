"""Mention tagger designs side by side on the same questions (validation only).

    SOAY_DATA__ROOT=/tmp/tagbench .venv/bin/python benchmarks/tagger_designs.py

Designs:
- rules: the rule-based mentions (soay/mentions.py `mention_markers(question)`, no Lexicon). They
  give untyped families, scored as compatible types: `e` is a name or a title (publication_info),
  `o` an organisation, `v` an interest;
- crf: the CRF over word shapes (soay/tagging, `train_tagger` + `MentionTagger`, default
  per_template=4, 60 iterations). `crf-small` is the same trained on the base head's smaller set
  (`--head-per-template`, default 1), a control that separates the design from the amount of data;
- base-head: a per-token multinomial logistic regression (BIO labels over soay.tagging.tagger's
  word tokens) on the pretrained base Gemma 3 270M's hidden states, read with HF transformers on CPU
  in float32. A word's feature is the mean of its subwords' last hidden states (mapped by character
  offsets) and of the layer before, beside the previous and next words' last-layer means (Gemma is
  causal: the next word's state is the only right context a word gets);
- span-head: span scoring on the same states (computed once, shared with base-head). Every span of
  at most `--span-max-words` (16) words is one example with the features: the word state before
  it, its first and last words' states (the last has read the whole span), their mean over the
  span, the word after it, and its length, each state the last layer reduced by PCA to
  `--span-dims` (128). A multinomial logistic regression gives a type or none; the spans kept are
  those whose best class is a type, most probable first, none overlapping an earlier one. It
  decides a span as a whole (no BIO chain to break) and trains on every boundary case: all
  negatives that overlap a gold span, and `--span-negative-rate` of the others (weighted back).
  (Not here: constrained extraction by the base's likelihood, scoring each candidate span per type
  as the continuation of a prompt ("Question: ... Name: <span>"). A question has ~100 to 300
  candidate spans of up to 16 words, times four types, each a forward pass over the continuation:
  hundreds of times base-head's one pass per question, hours for these ~800 questions on this
  2-CPU machine, and it still needs a learnt threshold for "no span of this type".)

The base designs run on CPU; `--head-limit N` trains them (and crf-small, so that it stays their
control) on N of `--head-per-template`'s questions drawn at random, to bound the forward passes,
and says so in the report. `--feature-cache DIR` keeps the base's features between runs (the
report then gives the forward time measured when they were computed and `features_cached`).

Data (validation only, never test):
1. validation phrasings: each combination's held-out validation phrasing per language
   (soay.splits.held_out_for(...) == VALIDATION) filled `--fills` times with open-world values
   (soay.tagging.values.value_for) drawn with a seed other than training's;
2. benchmarks/open_world/validation.jsonl, where it exists: each row with arguments, gold spans
   each argument value found in the question (str.find), typed by its key (affiliation ->
   organization, field -> interest). A value the question does not write verbatim is counted
   under data.open_world.values_not_found and left out.

Per design, data set and language: exact-set accuracy (every span of the question right, text and
type, nothing extra), span precision / recall / F1 (matched as (text, type), duplicates once),
recall per gold type, the errors by kind (wrong type, wrong boundary, missed, spurious), train time
and tagging time per question (the base designs': the batched forward pass plus the head, each
also alone, and one question at a time). A `summary` block gives each design's exact and F1 per
data set and language. Failures are kept as examples from the validation phrasings only.
Writes benchmarks/results/tagger_designs.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from soay.domains import get_domain  # noqa: E402
from soay.mentions import mention_markers  # noqa: E402
from soay.splits import VALIDATION, held_out_for  # noqa: E402
from soay.tagging.examples import fill, tagged_questions  # noqa: E402
from soay.tagging.tagger import MentionTagger, TaggedQuestion, bio_labels, decode, tokenize, train_tagger  # noqa: E402
from soay.tagging.values import span_type, value_for  # noqa: E402

OPEN_WORLD = ROOT / "benchmarks" / "open_world" / "validation.jsonl"
OUT = ROOT / "benchmarks" / "results" / "tagger_designs.json"
LANGUAGES = ("en", "zh")
RULE_FAMILIES = {"e": {"name", "publication_info"}, "o": {"organization"}, "v": {"interest"}}
FAILURE_EXAMPLES = 12


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Item:
    language: str
    text: str
    gold: list[tuple[str, str]]  # (span text, type)
    source: str = ""


@dataclass
class Design:
    name: str
    train_s: float = 0.0
    train_notes: dict = field(default_factory=dict)
    compatible: Callable[[str, str], bool] = lambda pred, gold: pred == gold
    results: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- data


def _written(template: str) -> list[str]:
    """The placeholders `template` writes, in order, each once."""
    return list(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(template) if f))


class _Written:
    """A combination whose `placeholders` are every placeholder its phrasings write, sorted: what
    soay.tagging.examples.tagged_questions fills. Sorted so that its draws do not depend on the
    hash seed (a set's order does), and complete where phrasings also write optional filters
    (an organisation, a field) beside the inputs."""

    def __init__(self, combination) -> None:
        self._combination = combination

    def __getattr__(self, name: str):
        return getattr(self._combination, name)

    @property
    def placeholders(self) -> list[str]:
        c = self._combination
        templates = [t for ts in c.phrasings.values() for t in ts] + [t for ts in (getattr(c, "informal", None) or {}).values() for t in ts]
        return sorted({p for t in templates for p in _written(t)})


def training_questions(per_template: int, seed: int) -> list[TaggedQuestion]:
    """What `soay train` teaches the tagger (training/fit_heads.py), less the triplets' own questions."""
    from training.fit_heads import tagger_extras

    domain = get_domain("aminer")
    return list(tagged_questions([_Written(c) for c in domain.combinations], per_template=per_template, seed=seed,
                                 extra=tagger_extras(domain)))


def validation_phrasings(fills: int, seed: int) -> list[Item]:
    rng = random.Random(seed)
    items = []
    for c in get_domain("aminer").combinations:
        for language, templates in c.phrasings.items():
            for i, template in enumerate(templates):
                if held_out_for(c, language, i) != VALIDATION:
                    continue
                for _ in range(fills):
                    values = {p: value_for(p, rng, language) for p in _written(template)}
                    q = fill(template, values)
                    items.append(Item(language, q.text, _unique([(q.text[a:b].strip(), kind) for a, b, kind in q.spans]), f"{c.id}/{language}/{i}"))
    return items


def open_world_items(path: Path) -> tuple[list[Item], dict]:
    items, not_found, skipped = [], 0, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        arguments = {k: v for k, v in (row.get("arguments") or {}).items() if isinstance(v, str) and v.strip()}
        if not arguments:
            skipped += 1
            continue
        question = row["question"]
        gold = []
        for key, value in arguments.items():
            if question.find(value) < 0:
                not_found += 1
                continue
            gold.append((value.strip(), span_type(key)))
        items.append(Item(row.get("language", "en"), question, _unique(gold), row.get("id", "")))
    return items, {"rows_without_arguments": skipped, "values_not_found": not_found}


def _unique(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(p for p in pairs if p[0]))


# ------------------------------------------------------------------------------------------- scoring


def score(items: list[Item], predictions: list[list[tuple[str, str]]], compatible: Callable[[str, str], bool], keep_failures: bool) -> dict:
    out: dict = {}
    for language in (*LANGUAGES, "all"):
        chosen = [(it, p) for it, p in zip(items, predictions) if language in ("all", it.language)]
        if not chosen:
            continue
        tp = n_pred = n_gold = exact = 0
        gold_by_type, hit_by_type, errors = Counter(), Counter(), Counter()
        failures = []
        for item, pred in chosen:
            pred = _unique(pred)
            used = [False] * len(pred)
            matched = 0
            missed = []
            for text, kind in item.gold:
                gold_by_type[kind] += 1
                j = next((j for j, (t, k) in enumerate(pred) if not used[j] and t == text and compatible(k, kind)), None)
                if j is None:
                    missed.append((text, kind))
                    continue
                used[j] = True
                matched += 1
                hit_by_type[kind] += 1
            extra = [p for j, p in enumerate(pred) if not used[j]]
            for text, kind in missed:
                if any(t == text for t, _ in extra):
                    errors["type"] += 1
                elif any(t and (t in text or text in t) for t, _ in extra):
                    errors["boundary"] += 1
                else:
                    errors["missed"] += 1
            for t, _ in extra:
                if not any(t == g or t in g or g in t for g, _ in missed):
                    errors["spurious"] += 1
            tp += matched
            n_pred += len(pred)
            n_gold += len(item.gold)
            right = matched == len(item.gold) == len(pred)
            exact += right
            if not right and keep_failures and len(failures) < FAILURE_EXAMPLES and language != "all":
                failures.append({"question": item.text, "gold": item.gold, "predicted": pred})
        p = tp / n_pred if n_pred else 0.0
        r = tp / n_gold if n_gold else 0.0
        out[language] = {
            "n": len(chosen), "exact": round(100 * exact / len(chosen), 1),
            "precision": round(100 * p, 1), "recall": round(100 * r, 1), "f1": round(100 * (2 * p * r / (p + r) if p + r else 0.0), 1),
            "spans_gold": n_gold, "spans_predicted": n_pred, "spans_right": tp,
            "recall_by_type": {k: round(100 * hit_by_type[k] / v, 1) for k, v in sorted(gold_by_type.items())},
            "errors": dict(errors),
        }
        if failures:
            out[language]["failures"] = failures
    return out


# ------------------------------------------------------------------------------------------- designs


def rules_predict(text: str) -> list[tuple[str, str]]:
    return [(mention, marker[2]) for mention, marker in mention_markers(text).items()]


def crf_design(name: str, per_template: int, seed: int, workdir: Path, limit: int = 0) -> tuple[Design, Callable[[str], list[tuple[str, str]]]]:
    start = time.perf_counter()
    examples = training_questions(per_template, seed)
    if limit:  # the base designs' sample (BaseStates draws it the same way)
        examples = [e for e in examples if tokenize(e.text)]
        examples = random.Random(seed).sample(examples, min(limit, len(examples)))
    log(f"{name}: {len(examples)} training questions (per_template={per_template}); training the CRF ...")
    tagger = MentionTagger(train_tagger(examples, workdir / f"{name}.crfsuite"))
    design = Design(name, time.perf_counter() - start, {"questions": len(examples), "per_template": per_template, "max_iterations": 60})

    def predict(text: str) -> list[tuple[str, str]]:
        return [(text[a:b].strip(), kind) for a, b, kind in tagger.spans(text)]

    return design, predict


class BaseFeatures:
    """Per-word features from the base model's hidden states (see the module docstring)."""

    def __init__(self, checkpoint: Path, batch_size: int, neighbours: bool) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(os.cpu_count() or 1)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        self.tokenizer.padding_side = "right"  # positions stay those of an unpadded question
        model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
        self.model = (model.model if hasattr(model, "model") else model).eval()
        self.batch_size = batch_size
        self.neighbours = neighbours
        self.width = model.config.hidden_size

    def __call__(self, texts: Sequence[str], progress: str = "") -> list[np.ndarray]:
        """One (words, features) array per text, in the order given."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[np.ndarray | None] = [None] * len(texts)
        batches = [order[k : k + self.batch_size] for k in range(0, len(order), self.batch_size)]
        started = time.perf_counter()
        for b, batch in enumerate(batches):
            chunk = [texts[i] for i in batch]
            enc = self.tokenizer(chunk, return_offsets_mapping=True, padding=True, return_tensors="pt")
            with self.torch.inference_mode():
                result = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True, use_cache=False)
            last = result.last_hidden_state.float().numpy()
            previous = result.hidden_states[-2].float().numpy()
            for row, i in enumerate(batch):
                out[i] = self._words(texts[i], enc["offset_mapping"][row].tolist(), enc["attention_mask"][row].tolist(), last[row], previous[row])
            if progress and (b + 1) % 20 == 0 or progress and b + 1 == len(batches):
                log(f"{progress}: {b + 1}/{len(batches)} batches, {time.perf_counter() - started:.0f} s")
        return out  # type: ignore[return-value]

    def _words(self, text: str, offsets: list, mask: list, last: np.ndarray, previous: np.ndarray) -> np.ndarray:
        words = tokenize(text)
        pieces = [(k, s, e) for k, ((s, e), m) in enumerate(zip(offsets, mask)) if m and e > s]
        own_last, own_prev = np.zeros((len(words), self.width), np.float32), np.zeros((len(words), self.width), np.float32)
        for w, (a, b) in enumerate(words):
            ks = [k for k, s, e in pieces if s < b and e > a]
            if not ks:  # no subword covers it (should not happen): the last one before it
                ks = [max([k for k, s, _ in pieces if s <= a] or [0])]
            own_last[w] = last[ks].mean(0)
            own_prev[w] = previous[ks].mean(0)
        parts = [own_last, own_prev]
        if self.neighbours:
            zero = np.zeros((1, self.width), np.float32)
            parts += [np.concatenate([zero, own_last[:-1]]), np.concatenate([own_last[1:], zero])]
        return np.concatenate(parts, axis=1)


class BaseStates:
    """The base model, the training questions and every text's per-word features, each computed once
    and shared by the designs on the base (base-head, span-head). With `cache` (a directory) the
    features are kept there between runs, keyed by the checkpoint, the options and the texts, with
    the forward seconds measured when they were computed (reported as such, `features_cached`)."""

    def __init__(self, per_template: int, seed: int, batch_size: int, neighbours: bool, limit: int, cache: Path | None) -> None:
        from soay.settings import Settings
        from training.base_model import resolve_base_model

        start = time.perf_counter()
        settings = Settings()
        log(f"base: resolving the base checkpoint under {settings.data.root} (converts the packaged GGUF the first time) ...")
        self.checkpoint = resolve_base_model(settings.base_model, settings.data)
        self.encode = BaseFeatures(self.checkpoint, batch_size, neighbours)
        self.neighbours, self.batch_size, self.cache = neighbours, batch_size, cache
        examples = [e for e in training_questions(per_template, seed) if tokenize(e.text)]
        self.all_training_questions = len(examples)
        if limit:
            examples = random.Random(seed).sample(examples, min(limit, len(examples)))
        self.examples, self.per_template = examples, per_template
        self.resolve_and_load_s = time.perf_counter() - start
        log(f"base: {len(examples)} training questions (per_template={per_template}); forward passes on CPU, batch {batch_size} ...")
        self.train, self.train_forward_s, self.train_cached = self.features([e.text for e in examples], "base train features")
        self.sets: dict[str, tuple[list[np.ndarray], float, bool]] = {}

    def notes(self) -> dict:
        return {"questions": len(self.examples), "per_template": self.per_template, "training_questions_available": self.all_training_questions,
                "checkpoint": str(self.checkpoint), "resolve_and_load_s": round(self.resolve_and_load_s, 1), "forward_s": round(self.train_forward_s, 1),
                "features_cached": self.train_cached, "neighbours": self.neighbours, "batch_size": self.batch_size,
                "torch_threads": self.encode.torch.get_num_threads(), "device": "cpu", "dtype": "float32"}

    def for_set(self, name: str, items: list[Item]) -> tuple[list[np.ndarray], float, bool]:
        if name not in self.sets:
            self.sets[name] = self.features([it.text for it in items], f"base {name} features")
        return self.sets[name]

    def features(self, texts: list[str], progress: str) -> tuple[list[np.ndarray], float, bool]:
        """(per-text features, forward seconds, whether they came from the cache)."""
        path = None
        if self.cache:
            key = hashlib.blake2b("\x00".join([str(self.checkpoint), str(self.neighbours), *texts]).encode(), digest_size=8).hexdigest()
            path = self.cache / f"features-{key}.npz"
            if path.is_file():
                with np.load(path) as z:
                    cuts = np.cumsum(z["lengths"])[:-1]
                    log(f"{progress}: {len(texts)} texts from the cache {path}")
                    return list(np.split(z["x"], cuts)), float(z["seconds"]), True
        start = time.perf_counter()
        out = self.encode(texts, progress=progress)
        seconds = time.perf_counter() - start
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, x=np.concatenate(out), lengths=np.array([len(f) for f in out]), seconds=seconds)
        return out, seconds, False


Head = Callable[[list[str], list[np.ndarray]], list[list[tuple[str, str]]]]
"""(texts, their per-word base features) -> each text's (span text, type) list."""


def base_head_design(base: BaseStates, c: float) -> tuple[Design, Head]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    start = time.perf_counter()
    x = np.concatenate(base.train)
    y = np.array([label for e in base.examples for label in bio_labels(tokenize(e.text), e.spans)])
    log(f"base-head: fitting a multinomial logistic regression on {x.shape[0]} words x {x.shape[1]} features, {len(set(y))} labels ...")
    scaler = StandardScaler().fit(x)
    head = LogisticRegression(C=c, max_iter=2000).fit(scaler.transform(x), y)
    fit_s = time.perf_counter() - start
    design = Design("base-head", base.train_forward_s + fit_s, {
        **base.notes(), "words": int(x.shape[0]), "features": int(x.shape[1]),
        "fit_s": round(fit_s, 1), "fit_iterations": int(np.max(head.n_iter_)), "C": c,
        "train_s_is": "forward passes over the training questions + the fit (loading the model not counted)",
    })

    def tag(texts: list[str], features: list[np.ndarray]) -> list[list[tuple[str, str]]]:
        out = []
        for text, f in zip(texts, features):
            words = tokenize(text)
            labels = head.predict(scaler.transform(f)) if words else []
            out.append([(text[a:b].strip(), kind) for a, b, kind in decode(text, words, list(labels))])
        return out

    return design, tag


def _candidates(n: int, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Every span of at most `max_len` words of an `n`-word question: (first words, last words)."""
    pairs = [(i, j) for i in range(n) for j in range(i, min(n, i + max_len))]
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)


def _span_vectors(reduced: np.ndarray, starts: np.ndarray, ends: np.ndarray, max_len: int) -> np.ndarray:
    """A candidate span's features from its words' reduced last-layer states: the state before it
    (the prefix, left context), its first word, its last word (which has read the whole span),
    the mean over its words, the word after it (right context), and its length one-hot."""
    n, d = reduced.shape
    padded = np.concatenate([np.zeros((1, d), np.float32), reduced, np.zeros((1, d), np.float32)])  # row k+1 is word k
    cumulative = np.concatenate([np.zeros((1, d), np.float32), np.cumsum(reduced, axis=0)])
    lengths = ends - starts + 1
    mean = (cumulative[ends + 1] - cumulative[starts]) / lengths[:, None]
    onehot = np.zeros((len(starts), max_len), np.float32)
    onehot[np.arange(len(starts)), lengths - 1] = 1.0
    return np.concatenate([padded[starts], padded[starts + 1], padded[ends + 1], mean, padded[ends + 2], onehot], axis=1)


def span_head_design(base: BaseStates, c: float, max_len: int, dims: int, negative_rate: float, seed: int) -> tuple[Design, Head]:
    """Span scoring on the base's states: every span of up to `max_len` words is one example,
    classified by a multinomial logistic regression into a type or none (`O`); the spans kept are
    those whose best class is a type, the most probable first, none overlapping one kept before.
    The last-layer word states are reduced by PCA (fitted on the training words) to `dims`. Every
    negative span that overlaps a gold span or shares its first or last word is kept (the boundary
    cases); the others are sampled at `negative_rate` and weighted by its inverse."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    width = base.encode.width
    start = time.perf_counter()
    pca = PCA(n_components=dims, random_state=seed).fit(np.concatenate([f[:, :width] for f in base.train]))
    rng = np.random.default_rng(seed)
    xs, ys, ws = [], [], []
    too_long = 0
    for example, f in zip(base.examples, base.train):
        words = tokenize(example.text)
        gold: dict[tuple[int, int], str] = {}
        for a, b, kind in example.spans:
            inside = [i for i, (s, e) in enumerate(words) if s >= a and e <= b]
            if inside:
                if inside[-1] - inside[0] + 1 > max_len:
                    too_long += 1
                gold[(inside[0], inside[-1])] = kind
        starts, ends = _candidates(len(words), max_len)
        labels = np.array([gold.get((i, j), "O") for i, j in zip(starts.tolist(), ends.tolist())])
        hard = np.zeros(len(starts), bool)
        for (gi, gj) in gold:
            hard |= (starts <= gj) & (ends >= gi)  # overlaps (shares a first or last word included)
        keep = (labels != "O") | hard | (rng.random(len(starts)) < negative_rate)
        weight = np.where((labels == "O") & ~hard, 1.0 / negative_rate, 1.0)
        reduced = pca.transform(f[:, :width]).astype(np.float32)
        xs.append(_span_vectors(reduced, starts[keep], ends[keep], max_len))
        ys.append(labels[keep])
        ws.append(weight[keep])
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    log(f"span-head: fitting a multinomial logistic regression on {x.shape[0]} spans x {x.shape[1]} features ({int((y != 'O').sum())} gold spans) ...")
    scaler = StandardScaler().fit(x)
    head = LogisticRegression(C=c, max_iter=2000).fit(scaler.transform(x), y, sample_weight=w)
    fit_s = time.perf_counter() - start
    o = list(head.classes_).index("O")
    design = Design("span-head", base.train_forward_s + fit_s, {
        **base.notes(), "spans": int(x.shape[0]), "gold_spans": int((y != "O").sum()), "gold_spans_longer_than_max": too_long,
        "features": int(x.shape[1]), "pca_dims": dims, "pca_variance_kept": round(float(pca.explained_variance_ratio_.sum()), 3),
        "max_span_words": max_len, "negative_rate": negative_rate, "fit_s": round(fit_s, 1), "fit_iterations": int(np.max(head.n_iter_)), "C": c,
        "train_s_is": "forward passes over the training questions (the same as base-head's) + PCA, span features and the fit",
    })

    def tag(texts: list[str], features: list[np.ndarray]) -> list[list[tuple[str, str]]]:
        out = []
        for text, f in zip(texts, features):
            words = tokenize(text)
            if not words:
                out.append([])
                continue
            starts, ends = _candidates(len(words), max_len)
            proba = head.predict_proba(scaler.transform(_span_vectors(pca.transform(f[:, :width]).astype(np.float32), starts, ends, max_len)))
            best = proba.argmax(1)
            chosen: list[tuple[int, int, str]] = []
            taken = np.zeros(len(words), bool)
            for k in sorted(np.flatnonzero(best != o), key=lambda k: -proba[k, best[k]]):
                i, j = int(starts[k]), int(ends[k])
                if not taken[i : j + 1].any():
                    taken[i : j + 1] = True
                    chosen.append((i, j, str(head.classes_[best[k]])))
            chosen.sort()
            out.append([(text[words[i][0] : words[j][1]].strip(), kind) for i, j, kind in chosen])
        return out

    return design, tag


# ---------------------------------------------------------------------------------------------- main


def run_sequential(design: Design, predict: Callable[[str], list[tuple[str, str]]], sets: dict[str, list[Item]]) -> None:
    for name, items in sets.items():
        start = time.perf_counter()
        predictions = [predict(it.text) for it in items]
        elapsed = time.perf_counter() - start
        design.results[name] = score(items, predictions, design.compatible, keep_failures=name == "validation_phrasings")
        design.results[name]["ms_per_question"] = round(1000 * elapsed / max(1, len(items)), 3)
        log(f"{design.name}: {name} tagged ({len(items)} questions, {elapsed:.2f} s)")


def run_base(design: Design, head: Head, base: BaseStates, sets: dict[str, list[Item]]) -> None:
    """Tag each set from the base's features (computed once for all base designs): the time per
    question is the batched forward pass plus the head's own time, each also given alone."""
    for name, items in sets.items():
        features, forward_s, cached = base.for_set(name, items)
        start = time.perf_counter()
        predictions = head([it.text for it in items], features)
        head_s = time.perf_counter() - start
        n = max(1, len(items))
        design.results[name] = score(items, predictions, design.compatible, keep_failures=name == "validation_phrasings")
        design.results[name].update({"ms_per_question": round(1000 * (forward_s + head_s) / n, 3), "forward_ms_per_question": round(1000 * forward_s / n, 3),
                                     "head_ms_per_question": round(1000 * head_s / n, 3), "batched": base.batch_size, "features_cached": cached})
        log(f"{design.name}: {name} tagged ({len(items)} questions, forward {forward_s:.1f} s, head {head_s:.2f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--designs", default="rules,crf,crf-small,base-head,span-head", help="comma-separated (rules, crf, crf-small, base-head, span-head)")
    parser.add_argument("--fills", type=int, default=5, help="fillings of each validation phrasing")
    parser.add_argument("--seed", type=int, default=20250, help="seed of the validation fillings (training's is --train-seed)")
    parser.add_argument("--train-seed", type=int, default=0)
    parser.add_argument("--crf-per-template", type=int, default=4)
    parser.add_argument("--head-per-template", type=int, default=1, help="base head's training fillings per phrasing (and crf-small's)")
    parser.add_argument("--quick", type=int, default=0, help="smoke test: at most this many training questions for the base head and this many validation questions")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--head-c", type=float, default=1.0, help="inverse regularisation of the base head's logistic regression")
    parser.add_argument("--head-limit", type=int, default=0, help="at most this many training questions for the base designs (0: all of --head-per-template's)")
    parser.add_argument("--span-c", type=float, default=1.0, help="inverse regularisation of the span head's logistic regression")
    parser.add_argument("--span-max-words", type=int, default=16, help="span head: the longest candidate span, in tagger words")
    parser.add_argument("--span-dims", type=int, default=128, help="span head: PCA dimensions of a word's last-layer state")
    parser.add_argument("--span-negative-rate", type=float, default=0.1, help="span head: the share of non-overlapping negative spans trained on")
    parser.add_argument("--feature-cache", type=Path, default=None, help="keep the base's per-word features in this directory between runs")
    parser.add_argument("--no-neighbours", action="store_true", help="base head: the word's own states only")
    parser.add_argument("--latency-sample", type=int, default=20, help="base head: questions tagged one at a time for the latency")
    parser.add_argument("--open-world", type=Path, default=OPEN_WORLD)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    began = time.perf_counter()

    sets: dict[str, list[Item]] = {"validation_phrasings": validation_phrasings(args.fills, args.seed)}
    if args.quick:
        sets["validation_phrasings"] = sets["validation_phrasings"][:: max(1, len(sets["validation_phrasings"]) // args.quick)]
    data: dict = {"validation_phrasings": {
        **{lang: sum(it.language == lang for it in sets["validation_phrasings"]) for lang in LANGUAGES},
        "spans": sum(len(it.gold) for it in sets["validation_phrasings"]), "fills": args.fills, "seed": args.seed}}
    if args.open_world.is_file():
        items, notes = open_world_items(args.open_world)
        sets["open_world_validation"] = items[:: max(1, len(items) // args.quick)] if args.quick else items
        scored = sets["open_world_validation"]
        data["open_world_validation"] = {**{lang: sum(it.language == lang for it in scored) for lang in LANGUAGES},
                                         "spans": sum(len(it.gold) for it in scored), "path": str(args.open_world.relative_to(ROOT) if args.open_world.is_relative_to(ROOT) else args.open_world), **notes}
    else:
        data["open_world_validation"] = None
        log(f"{args.open_world} not found: validation phrasings only")
    log("data: " + json.dumps(data))

    results: dict[str, Design] = {}
    base: BaseStates | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in designs:
            if name == "rules":
                design = Design("rules", 0.0, {"note": "no training; soay/mentions.py without a Lexicon"},
                                compatible=lambda pred, gold: gold in RULE_FAMILIES.get(pred, set()))
                run_sequential(design, rules_predict, sets)
            elif name in ("crf", "crf-small"):
                small = name == "crf-small"
                design, predict = crf_design(name, args.head_per_template if small else args.crf_per_template, args.train_seed, Path(tmp), (args.head_limit or args.quick) if small else 0)
                if small and (args.head_limit or args.quick):
                    design.train_notes["limit"] = args.head_limit or args.quick
                log(f"{name}: trained in {design.train_s:.1f} s")
                run_sequential(design, predict, sets)
            elif name in ("base-head", "span-head"):
                if base is None:
                    cache = args.feature_cache or None
                    base = BaseStates(args.head_per_template, args.train_seed, args.batch_size, not args.no_neighbours, args.head_limit or args.quick, cache)
                if name == "base-head":
                    design, head = base_head_design(base, args.head_c)
                else:
                    if args.no_neighbours:
                        parser.error("span-head reads the last-layer states only; --no-neighbours does not apply")
                    design, head = span_head_design(base, args.span_c, args.span_max_words, args.span_dims, args.span_negative_rate, args.train_seed)
                if args.head_limit:
                    design.train_notes["reduced_training_set"] = f"{len(base.examples)} of {base.all_training_questions} training questions (--head-limit {args.head_limit}), to bound the CPU forward passes"
                log(f"{name}: trained in {design.train_s:.1f} s ({json.dumps(design.train_notes)})")
                run_base(design, head, base, sets)
                sample = sets["validation_phrasings"][: args.latency_sample]
                start = time.perf_counter()
                for it in sample:
                    head([it.text], base.encode([it.text]))
                design.train_notes["ms_per_question_unbatched"] = round(1000 * (time.perf_counter() - start) / max(1, len(sample)), 2)
                log(f"{name}: one question at a time (forward pass included) {design.train_notes['ms_per_question_unbatched']} ms")
            else:
                parser.error(f"unknown design {name!r}")
            results[name] = design
            write_report(args, argv, results, sets, data, time.perf_counter() - began, partial=name != designs[-1])

    print(render(results, list(sets)))
    log(f"wrote {args.out} in {time.perf_counter() - began:.0f} s")
    return 0


def write_report(args: argparse.Namespace, argv: list[str] | None, results: dict[str, Design], sets: dict, data: dict, total: float, partial: bool) -> None:
    """The report so far (after each design, so a failure later keeps what was measured)."""
    given = argv if argv is not None else sys.argv[1:]
    command = f"SOAY_DATA__ROOT={os.environ.get('SOAY_DATA__ROOT', 'data')} .venv/bin/python benchmarks/tagger_designs.py" + "".join(f" {a}" for a in given)
    report = {
        "command": command,
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({platform.processor() or 'cpu'}), Python {platform.python_version()}, CPU only"
                   f"; load average at the end {os.getloadavg()[0]:.1f} (shared with other work: timings are contended)",
        "total_s": round(total, 1),
        "partial": partial,
        "data": data,
        "summary": summary(results, list(sets)),
        "designs": {name: {"train_s": round(d.train_s, 2), "train": d.train_notes, **d.results} for name, d in results.items()},
        "table": render(results, list(sets)).splitlines(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def summary(results: dict[str, Design], set_names: list[str]) -> dict:
    """Each design's exact-set accuracy and span F1 per data set and language (the full figures are under `designs`)."""
    return {name: {"train_s": round(d.train_s, 1), **{set_name: {lang: {"exact": m["exact"], "f1": m["f1"]} for lang in (*LANGUAGES, "all") if (m := d.results.get(set_name, {}).get(lang))}
                                                    for set_name in set_names}} for name, d in results.items()}


def render(results: dict[str, Design], set_names: list[str]) -> str:
    header = f"{'design':<10} {'data':<22} {'lang':<4} {'n':>5} {'exact%':>7} {'P%':>6} {'R%':>6} {'F1%':>6} {'train s':>8} {'ms/q':>8}"
    lines = [header, "-" * len(header)]
    for name, d in results.items():
        for set_name in set_names:
            entry = d.results.get(set_name, {})
            for lang in (*LANGUAGES, "all"):
                m = entry.get(lang)
                if not m:
                    continue
                lines.append(f"{name:<10} {set_name:<22} {lang:<4} {m['n']:>5} {m['exact']:>7} {m['precision']:>6} {m['recall']:>6} {m['f1']:>6} "
                             f"{d.train_s:>8.1f} {entry['ms_per_question']:>8.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
