"""Supervised examples for the two roles, made from triplets.

Each training triplet gives a planner example (question -> solution) and a coder example
(exemplar program + question + solution -> code). The loss is on the answer tokens only, so the
model learns to write solutions and code, not to reproduce questions.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

import torch
from transformers import PreTrainedTokenizerBase

from soay.prompts import coder_prompt, coder_target, planner_prompt, target
from soay.triplets import Triplet

IGNORE = -100


def role_pairs(triplets: Iterable[Triplet], coder_per_combination: int | None = None) -> list[tuple[str, str]]:
    """Distinct (prompt, target) pairs for planner and coder.

    Every triplet teaches the planner, whose hard part is the variety of phrasings. The coder's
    code differs within a combination only in its literals, so `coder_per_combination` caps its
    examples: past a few dozen entities per combination they cost training time and teach
    nothing new. The coder's exemplar is the previous triplet (question and code) of the same
    combination (another entity), standing in for what the retriever supplies when serving.
    """
    pairs: list[tuple[str, str]] = []
    last: dict[str, tuple[str, str]] = {}
    coded: Counter[str] = Counter()
    for t in triplets:
        pairs.append((planner_prompt(t.query), target(t.solution)))
        combination = t.combination.id
        if coder_per_combination is None or coded[combination] < coder_per_combination:
            pairs.append((coder_prompt(t.query, t.solution, last.get(combination)), coder_target(t.code, t.query)))
            coded[combination] += 1
        last[combination] = (t.query, t.code)
    return list(dict.fromkeys(pairs))  # masked, many triplets teach the same pair: keep it once


def encode(pairs: list[tuple[str, str]], tokenizer: PreTrainedTokenizerBase, max_length: int) -> list[dict[str, list[int]]]:
    """Token ids with labels masked on the prompt; over-long examples are dropped, not cut."""
    out: list[dict[str, list[int]]] = []
    for prompt, answer in pairs:
        p = tokenizer(prompt)["input_ids"]
        a = tokenizer(answer, add_special_tokens=False)["input_ids"]
        if len(p) + len(a) > max_length:
            continue
        out.append({"input_ids": p + a, "labels": [IGNORE] * len(p) + a})
    return out


def length_grouped_batches(
    examples: list[dict[str, list[int]]], batch_size: int, seed: int, world: int = 1
) -> list[list[dict[str, list[int]]]]:
    """Batches of examples of similar length, in random order, a multiple of `world` long.

    Planner examples are a tenth as long as coder examples; batching them together would spend
    most of the compute on padding. Every rank must run the same number of steps (DDP and ZeRO
    all-reduce each step), hence the multiple of `world`.
    """
    rng = random.Random(seed)
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i]["input_ids"]), rng.random()))
    batches = [[examples[i] for i in order[j : j + batch_size]] for j in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    steps = max(world, len(batches) - len(batches) % world)
    return [batches[i % len(batches)] for i in range(steps)]


def collate(batch: list[dict[str, list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(b["input_ids"]) for b in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, b in enumerate(batch):
        n = len(b["input_ids"])
        ids[i, :n] = torch.tensor(b["input_ids"])
        labels[i, :n] = torch.tensor(b["labels"])
        mask[i, :n] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}
