"""The default recipe: planner and coder heads on the frozen pretrained base (soay/heads.py).

Read top to bottom: resolve the base checkpoint -> the distinct masked training questions (and the
out-of-scope ones) -> their features from vLLM's pooling runner -> a multinomial logistic
regression over combinations -> heads.npz + run.json in `<out>/model`, beside a link to the base.
The same encoder reads questions in evaluation and serving, so what is fitted is what runs.
"""

from __future__ import annotations

import ast
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field

from soay.calibration import TRUST_PRECISION, trust_threshold
from soay.dataset import iter_triplets, load_manifest
from soay.domains import Domain, domain_for
from soay.heads import OUT_OF_SCOPE, TAGGER_FILE, Heads
from soay.lexical import LexicalHead
from soay.log_triplets import LOG_SOURCE
from soay.mentions import Lexicon, find_mentions, mask_code, names_organisation, titles
from soay.tagging.examples import keyword_questions, tagged_questions
from soay.tagging.tagger import MentionTagger, TaggedQuestion, train_tagger
from soay.prompts import question_text
from retriever.documents import language_of
from soay.settings import Settings
from soay.question_encoder import BASE_LINK
from training.base_model import copy_notice, resolve_base_model
from training.feature_cache import FeatureCache
from training.offline import encode, encoder, sentence_encoder
from training.recipes import read_recipe

OUT_OF_SCOPE_FILE = Path(__file__).resolve().parents[1] / "soay" / "intents" / "out_of_scope.yaml"
VALIDATION_EVERY = 5


class HeadsConfig(BaseModel):
    """A heads recipe (configs/heads.yaml); every key can be overridden as key=value."""

    model_config = ConfigDict(extra="forbid")

    kind: str = "heads"
    C: float = Field(1.0, gt=0)
    """Inverse L2 strength of the planner head: higher fits the training phrasings closer."""
    C_grid: list[float] = []
    """When given, the C with the best validation accuracy is chosen from these (C is then unused)."""
    max_false_refusals: float = Field(0.01, ge=0, le=1)
    """Out-of-scope threshold: one that refuses at most this share of in-scope validation questions."""
    min_correct_refusals: float = Field(0.95, ge=0, le=1)
    """... and at least this share of the out-of-scope validation questions; of those thresholds,
    the middle of the ones refusing the fewest in-scope questions (out_of_scope_threshold)."""
    out_of_scope: bool = True
    """Train the out-of-scope class on soay/intents/out_of_scope.yaml."""
    unsupported_questions: int = Field(240, ge=0)
    """... and on this many questions asking for a scholar's attribute that the API does not have
    (an h-index, a phone number, an age: soay/intents/unsupported_attributes.yaml, filled with
    open-world names, soay/unsupported.py), so that they are refused rather than answered with
    another attribute. Bounded beside the ~700 of out_of_scope.yaml, so that the class stays
    mostly off-domain questions; 0: none. Only with out_of_scope."""
    unsupported_share: float = Field(0.1, ge=0, le=1)
    """... and at most this share of the distinct in-scope training questions: they sit close to
    in-scope questions about a scholar, and a small dataset that learnt many of them refused its
    own held-out phrasings (15 % instead of 6 % with 156 questions and 240 of them)."""
    max_questions: int | None = Field(None, ge=1)
    """The training budget: at most this many distinct training questions are encoded (taken evenly
    over the combinations). Fitting costs one pass of the base per question (about 15 per second on
    2 cores), so this bounds `soay demo`'s training time; null: all."""
    lexical_C: float | None = Field(10.0, gt=0)
    """Inverse L2 strength of the planner's second head, on the masked question's character
    n-grams (soay/lexical.py); null: the features' head alone."""
    lexical_share: float = Field(0.7, ge=0, le=1)
    """Share of the planner's probabilities that comes from the n-gram head; the rest is the
    features' head's. 0.7 planned best on the validation questions (generated and open-world)."""
    sentence_encoder: str | None = "all-MiniLM-L6-v2"
    """A sentence-embedding model (the retriever's) whose vector of the question is read beside the
    base's features; null: the base alone. Serving takes it from the retriever, whose `model`
    setting must then be the same."""
    mention_tagger: bool = True
    """Find the questions' mentions with a tagger learnt here (soay/tagging: a CRF over word shapes
    trained on the training phrasings filled with open-world values) rather than the rules of
    soay/mentions.py; the tagger is saved in the model directory and serves with it."""
    tagger_per_template: int = Field(4, ge=1)
    """Open-world fillings of each training phrasing the tagger learns from."""
    trust_precision: float = Field(TRUST_PRECISION, gt=0, le=1)
    """The planner's trust bar (soay/calibration.py) is the lowest probability at which its readings
    of validation questions are right at least this share of the time."""
    user_weight: float = Field(3.0, ge=0)
    """Weight in the planner head's loss of a question people asked (a triplet the enlargement
    made from the request log) against one written from a template: a user's wording is rare
    beside the synthetic bulk, and it is the distribution the service is asked in
    (benchmarks/REPORT-loop.md measures 1 against higher weights)."""
    feature_cache: bool = True
    """Keep the questions' features in <base_model cache>/features.sqlite (training/feature_cache.py):
    a retraining then encodes only the questions it has not seen."""
    max_iter: int = Field(2000, ge=10)
    max_model_len: int = Field(256, ge=32)
    batch_size: int = Field(64, ge=1)


def load_heads_config(path: str | Path | None = None, overrides: list[str] | None = None) -> HeadsConfig:
    return HeadsConfig.model_validate(read_recipe(path, overrides))


def is_heads_recipe(path: str | Path) -> bool:
    return (yaml.safe_load(Path(path).read_text()) or {}).get("kind") == "heads"


UNSUPPORTED_TAGGED = 600
"""Questions for an attribute the API lacks that the mention tagger also learns from (their names
tagged, "h-index" or "电话" not): without them it took "h-index of" for an organisation."""
KEYWORD_TAGGED = 1500
"""Keyword questions ("Dmitri Volkov Skoltech email") the mention tagger also learns from."""


def tagger_extras(domain: Domain) -> list[TaggedQuestion]:
    """The academic domain's tagger questions beyond its phrasings: what the API cannot answer
    and keyword strings (soay/unsupported.py, soay/tagging/examples.py); none for other domains,
    whose span types these do not carry."""
    from soay.unsupported import catalogue, tagged_examples

    if catalogue().domain != domain.name:
        return []
    return [*tagged_examples(UNSUPPORTED_TAGGED), *keyword_questions(KEYWORD_TAGGED)]


def fit_mention_tagger(domain: Domain, triplets: list[Any], path: Path, per_template: int) -> MentionTagger:
    """The mention tagger of this model, learnt from the domain's training phrasings filled with
    open-world values and from the training triplets' own questions (soay/tagging/examples.py)."""
    started = time.perf_counter()
    examples = list(tagged_questions(domain.combinations, triplets, per_template, extra=tagger_extras(domain)))
    print(f"mention tagger: {len(examples)} tagged questions ...", flush=True)
    train_tagger(examples, path)
    print(f"mention tagger: trained in {time.perf_counter() - started:.0f} s -> {path.name}", flush=True)
    return MentionTagger(path)


def literal_vocabulary(triplets: list[Any]) -> frozenset[str]:
    """Input values of the training questions that mention detection alone gets wrong, masked
    like mentions so that a program never carries another question's value (soay/mentions.py
    split_vocabulary): lower-case research fields, which it does not see, and organisation names,
    which it runs into a name written against them ("Peking UniversityPengdong Ding")."""
    values = [(v, t.query) for t in triplets for v in t.inputs.values() if isinstance(v, str) and v]
    fields = {v for v, q in values if v == v.lower() and v in q.casefold() and v not in find_mentions(q)}
    organisations = {v for v, q in values if v != v.lower() and v in q and names_organisation(v) and v not in titles(q)}
    return frozenset(fields | organisations)


def out_of_scope_split(unsupported: int = 0) -> tuple[list[str], list[str]]:
    """The out-of-scope questions for training, and every VALIDATION_EVERY-th one of
    soay/intents/out_of_scope.yaml, which tunes the threshold instead; `unsupported` questions
    asking for an attribute the API does not have (soay/unsupported.py training_questions) are
    trained on only. Tuned on, they pulled the threshold down to 0.12 to refuse 96 % of a set they
    made harder (they sit next to in-scope questions by design), and the model then refused 11 % of
    the test paraphrases."""
    from soay.unsupported import training_questions

    data = yaml.safe_load(OUT_OF_SCOPE_FILE.read_text())
    questions = [q for language in ("en", "zh") for q in data.get(language, [])]
    train = [q for i, q in enumerate(questions) if i % VALIDATION_EVERY]
    return train + (training_questions(unsupported) if unsupported else []), [q for i, q in enumerate(questions) if not i % VALIDATION_EVERY]


def distinct_questions(triplets: list[Any], vocabulary: frozenset[str], max_questions: int | None = None) -> list[Any]:
    """One triplet per distinct masked question: entities differ, the wording is what is learnt.
    Taken round-robin over combinations, so that a budget keeps every combination's share."""
    first: dict[str, Any] = {}
    for t in triplets:
        first.setdefault(question_text(t.query, vocabulary), t)
    return _round_robin(list(first.values()))[:max_questions]


def fit_heads(config: HeadsConfig, settings: Settings, dataset_root: Path, out_dir: Path, base_dir: Path | None = None) -> dict[str, Any]:
    """Fit the heads on the dataset's train split, choosing C and the out-of-scope threshold on
    the validation split (never test); returns the run record (also run.json)."""
    started = time.perf_counter()
    base_dir = (base_dir or resolve_base_model(settings.base_model, settings.data)).resolve()
    manifest = load_manifest(dataset_root)
    triplets = list(iter_triplets(dataset_root, split="train"))
    if not triplets:
        raise ValueError(f"dataset at {dataset_root} has no training triplets")
    validation = list(iter_triplets(dataset_root, split="validation"))
    model_dir = Path(out_dir).resolve() / "model"
    vocabulary = Lexicon(
        literal_vocabulary(triplets),
        fit_mention_tagger(domain_for(settings), triplets, model_dir / TAGGER_FILE, config.tagger_per_template) if config.mention_tagger else None,
    )
    kept = distinct_questions(triplets, vocabulary, config.max_questions)
    questions = [t.query for t in kept]
    labels = [t.combination.id for t in kept]
    weights = [config.user_weight if t.code_source == LOG_SOURCE else 1.0 for t in kept]
    programs = [mask_code(t.code, t.query, vocabulary).strip() for t in kept]
    unsupported = min(config.unsupported_questions, math.ceil(config.unsupported_share * len(questions)))
    refusals_train, refusals_val = out_of_scope_split(unsupported) if config.out_of_scope else ([], [])
    texts = questions + refusals_train + [t.query for t in validation] + refusals_val
    cache = feature_cache(settings, base_dir, config) if config.feature_cache else None
    try:
        with encoder(base_dir, config.max_model_len) as llm:
            features = encode(llm, texts, config.batch_size, desc="features", vocabulary=vocabulary,
                              sentences=sentence_encoder(config.sentence_encoder), cache=cache)
    finally:
        if cache is not None:
            cache.close()
    encoded_s = time.perf_counter() - started
    n_train = len(questions) + len(refusals_train)
    x, x_val = features[:n_train], features[n_train:]
    masked = [question_text(text, vocabulary) for text in texts]
    texts_train, texts_val = masked[:n_train], masked[n_train:]
    y = labels + [OUT_OF_SCOPE] * len(refusals_train)
    w = np.array(weights + [1.0] * len(refusals_train))
    y_val = [t.combination.id for t in validation] + [OUT_OF_SCOPE] * len(refusals_val)
    languages = [t.language for t in validation] + [language_of(q) for q in refusals_val]
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    clean = reusable_programs(kept, programs)
    exemplars = (x[: len(questions)][clean] - mean) / scale
    exemplars /= np.linalg.norm(exemplars, axis=1, keepdims=True) + 1e-9
    exemplar_labels, exemplar_programs = [labels[i] for i in np.flatnonzero(clean)], [programs[i] for i in np.flatnonzero(clean)]
    lexical = LexicalHead.fit(texts_train, y, w, config.lexical_C, config.max_iter) if config.lexical_C else None
    tried = []
    for c in config.C_grid or [config.C]:
        heads = _fit(x, y, w, mean, scale, c, config.max_iter, exemplars, exemplar_labels, exemplar_programs, vocabulary)
        heads.lexical, heads.lexical_share = lexical, config.lexical_share if lexical else 0.0
        tried.append((_validate(heads, x_val, texts_val, y_val, config.max_false_refusals, config.min_correct_refusals, languages), c, heads))
    # the best accuracy, then the fewest false refusals, then the likeliest truth: the log-loss
    # separates Cs that decide every validation question alike (small datasets), by how sure they are
    (chosen, c, heads) = max(tried, key=lambda r: (r[0]["combination_accuracy"] or 0, -(r[0]["false_refusals"] or 0), -r[0]["log_loss"]))
    heads.out_of_scope_threshold = chosen["threshold"]
    trust = calibrate(heads, x_val, texts_val, y_val, config.trust_precision)
    heads.sentence_encoder = config.sentence_encoder
    heads.save(model_dir)
    link = model_dir / BASE_LINK
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(base_dir, target_is_directory=True)
    copy_notice(base_dir, model_dir)
    record = {
        "recipe": "heads",
        "config": config.model_dump(mode="json"),
        "base": str(base_dir),
        "dataset": {"root": str(dataset_root), "version": manifest.version, "train_triplets": len(triplets)},
        "examples": {"questions": len(questions), "user_questions": sum(t.code_source == LOG_SOURCE for t in kept), "out_of_scope": len(refusals_train), "unsupported": unsupported if config.out_of_scope else 0,
                     "classes": len(heads.labels), "vocabulary": len(vocabulary),
                     "exemplars": int(clean.sum())},
        "validation": {"chosen": {"C": c, **chosen}, "trust": trust, "tried": [{"C": c, **v} for v, c, _ in tried],
                       "questions": len(validation), "out_of_scope": len(refusals_val)},
        "metrics": {"encode_seconds": round(encoded_s, 1), "questions_per_s": round(len(texts) / max(encoded_s, 1e-9), 1),
                    "train_accuracy": round(float(np.mean([label == truth for (label, _), truth in zip(heads.plan(x, texts_train), y)])), 4)},
        "wall_seconds": round(time.perf_counter() - started, 1),
        "checkpoint": str(model_dir),
    }
    (model_dir / "run.json").write_text(json.dumps(record, indent=2))
    return record


def feature_cache(settings: Settings, base_dir: Path, config: HeadsConfig) -> FeatureCache:
    """The features of this base and sentence model, for questions of at most max_model_len tokens."""
    namespace = f"{Path(base_dir).resolve()}|{config.sentence_encoder}|{config.max_model_len}"
    return FeatureCache(settings.base_model.cache_path(settings.data) / "features.sqlite", namespace)


def reusable_programs(triplets: list[Any], programs: list[str]) -> np.ndarray:
    """Which masked programs may be copied for another question: those that kept none of their
    own question's entities as a literal. A mention the masking missed (an unquoted title, a
    name run into its organisation) would otherwise be copied into every nearby question's
    program, answering about the wrong scholar. A combination with no clean program keeps all."""
    clean = np.array([not _literals(p) & {v for v in t.inputs.values() if isinstance(v, str)} for t, p in zip(triplets, programs)], dtype=bool)
    combinations = np.array([t.combination.id for t in triplets])
    for c in set(combinations[~clean]) - set(combinations[clean]):
        clean[combinations == c] = True
    return clean


def _literals(program: str) -> set[str]:
    try:
        return {n.value for n in ast.walk(ast.parse(program)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    except SyntaxError:
        return set()


def _round_robin(triplets: list[Any]) -> list[Any]:
    """One question of each combination in turn, so that any prefix covers them all evenly."""
    by_combination: dict[str, list[Any]] = {}
    for t in triplets:
        by_combination.setdefault(t.combination.id, []).append(t)
    groups = list(by_combination.values())
    return [g[i] for i in range(max(map(len, groups), default=0)) for g in groups if i < len(g)]


def _fit(
    x: np.ndarray, y: list[str], w: np.ndarray, mean: np.ndarray, scale: np.ndarray, c: float, max_iter: int,
    exemplars: np.ndarray, labels: list[str], programs: list[str], vocabulary: frozenset[str],
) -> Heads:
    from sklearn.linear_model import LogisticRegression

    head = LogisticRegression(C=c, max_iter=max_iter).fit((x - mean) / scale, y, sample_weight=w)
    return Heads(mean, scale, head.coef_.astype(np.float32), head.intercept_.astype(np.float32), [str(k) for k in head.classes_],
                 exemplars.astype(np.float32), labels, programs, vocabulary)


def calibrate(heads: Heads, x: np.ndarray, texts: list[str], y: list[str], precision: float) -> dict[str, Any]:
    """Set the planner's trust bar from the validation questions it does not refuse (a refused
    question runs nothing and is never a label), and say what it keeps and how right that is."""
    plans = heads.plan(x, texts)
    answered = [(p, label == truth) for (label, p), truth in zip(plans, y) if label != OUT_OF_SCOPE]
    confidence, right = [p for p, _ in answered], [ok for _, ok in answered]
    heads.trust_threshold = trust_threshold(confidence, right, precision)
    trusted = [ok for p, ok in answered if heads.trust_threshold is not None and p >= heads.trust_threshold]
    return {"threshold": heads.trust_threshold, "precision_target": precision, "questions": len(answered),
            "trusted_share": round(len(trusted) / len(answered), 4) if answered else None,
            "trusted_precision": round(float(np.mean(trusted)), 4) if trusted else None}


THRESHOLDS = np.round(np.linspace(0.05, 1.0, 96), 2)


def out_of_scope_threshold(in_scope: np.ndarray, out_of_scope: np.ndarray, max_false_refusals: float,
                           min_correct_refusals: float) -> float:
    """The out-of-scope threshold from the validation questions' out-of-scope probabilities.

    Of the thresholds that meet both targets, refusing at most `max_false_refusals` of the in-scope
    questions and at least `min_correct_refusals` of the out-of-scope ones, those refusing the
    fewest in-scope questions are taken, and the middle one of them: as far as the data allow from
    the most doubtful in-scope question and from the out-of-scope one that would get through next.
    A false refusal tells a person their question cannot be asked at all, and unseen wordings
    sit nearer the threshold than the split's own: taking the most correct refusals the budget
    allowed (the earlier rule, still the fallback when no threshold meets both targets) refused
    every scholar of one colloquial validation paraphrase (benchmarks/REPORT-model.md, design N).
    Without out-of-scope validation questions the lowest threshold within the budget is taken."""
    false = np.array([np.mean(in_scope >= t) for t in THRESHOLDS])
    feasible = np.flatnonzero(false <= max_false_refusals)
    if not feasible.size:
        return 1.0
    if not out_of_scope.size:
        return float(THRESHOLDS[feasible[0]])
    correct = np.array([np.mean(out_of_scope >= t) for t in THRESHOLDS])
    both = feasible[correct[feasible] >= min_correct_refusals]
    if both.size:
        best = both[false[both] == false[both].min()]
    else:
        best = feasible[correct[feasible] == correct[feasible].max()]
        best = best[false[best] == false[best].min()]
    return float(THRESHOLDS[best[len(best) // 2]])


def _validate(heads: Heads, x: np.ndarray, texts: list[str], y: list[str], max_false_refusals: float, min_correct_refusals: float,
              languages: list[str]) -> dict[str, Any]:
    """The head on the validation split: its out-of-scope threshold (out_of_scope_threshold) and
    the accuracies it gives (per language, beside retrieval alone: the nearest training question's
    combination by the same features)."""
    in_scope = np.array([label != OUT_OF_SCOPE for label in y])
    oos_probability = heads.out_of_scope_probability(x, texts) if OUT_OF_SCOPE in heads.labels else np.zeros(len(y))
    if in_scope.any():  # without in-scope questions there is nothing to tune: the default stays
        heads.out_of_scope_threshold = out_of_scope_threshold(oos_probability[in_scope], oos_probability[~in_scope], max_false_refusals,
                                                             min_correct_refusals)
    threshold = heads.out_of_scope_threshold
    predicted = np.array([label for label, _ in heads.plan(x, texts)])
    truth = np.array(y)
    columns = {label: i for i, label in enumerate(heads.labels)}
    probs = heads.probabilities(x, texts)
    truth_probability = np.array([probs[row, columns[label]] if label in columns else 0.0 for row, label in enumerate(y)])

    def share(mask: np.ndarray) -> float | None:
        return round(float(np.mean(predicted[mask] == truth[mask])), 4) if mask.any() else None

    z = heads.standardize(x)
    z /= np.linalg.norm(z, axis=1, keepdims=True) + 1e-9
    nearest = np.array(heads.exemplar_labels)[(z @ heads.exemplars.T).argmax(axis=1)]
    lang = np.array(languages)
    return {
        "threshold": round(threshold, 3),
        "combination_accuracy": share(in_scope),
        "by_language": {
            code: {"planner": share(in_scope & (lang == code)),
                   "nearest_exemplar": round(float(np.mean(nearest[in_scope & (lang == code)] == truth[in_scope & (lang == code)])), 4)}
            for code in ("en", "zh") if (in_scope & (lang == code)).any()
        },
        "false_refusals": round(float(np.mean(predicted[in_scope] == OUT_OF_SCOPE)), 4) if in_scope.any() else None,
        "correct_refusals": share(~in_scope),
        "log_loss": round(float(-np.log(np.maximum(truth_probability, 1e-12)).mean()), 4) if len(y) else 0.0,
    }
