"""Recall@k and NDCG@k of the right solution.

The retriever proposes solutions: its hits are read as a ranking of distinct solutions (five
exemplars of the same solution are one proposal, ranked where the first of them is). A query has
exactly one relevant item, its gold solution, so Recall@k is whether that solution is among the
first k proposals and NDCG@k is 1/log2(1 + rank) when it is (the ideal DCG is 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def solution_ranking(solutions: Iterable[str | None]) -> list[str]:
    """Distinct solutions in order of first appearance among ranked hits (hits without one skipped)."""
    return list(dict.fromkeys(s for s in solutions if s))


def rank_of(gold: str, ranking: list[str]) -> int | None:
    """1-based rank of the gold solution, or None when it was not proposed."""
    return ranking.index(gold) + 1 if gold in ranking else None


def recall_at_k(rank: int | None, k: int) -> float:
    return float(rank is not None and rank <= k)


def ndcg_at_k(rank: int | None, k: int) -> float:
    return 1.0 / math.log2(1 + rank) if rank is not None and rank <= k else 0.0


def summarize(ranks: list[int | None], ks: tuple[int, ...] = (1, 5)) -> dict[str, float]:
    """Mean Recall@k for each k and NDCG@max(k) over queries (an empty list gives zeros)."""
    n = len(ranks) or 1
    out = {f"recall@{k}": sum(recall_at_k(r, k) for r in ranks) / n for k in ks}
    out[f"ndcg@{max(ks)}"] = sum(ndcg_at_k(r, max(ks)) for r in ranks) / n
    out["queries"] = len(ranks)
    return out
