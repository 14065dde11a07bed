"""Solutions (SoAy Definition 2) and the solution library L_S.

A solution is a path of at most H hops through the API graph starting at a head (zero
in-degree). SoAy keeps only *concise* solutions and asks ChatGPT whether a shorter one already
gets the same information; here that check is a deterministic rule over the spec:

  Every hop either stays on the same entity (relation `self`) or moves to a related one
  (coauthor, authored, the authors of a publication, ...). The chain of those moves is the
  solution's *signature*; the attributes it can report are those returned since its last move.
  A solution is redundant when a shorter kept solution has the same head and the same signature
  and already returns every attribute the longer one's tail returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from soay.graph import ApiGraph, Coupling
from soay.spec import ApiSpec

SEPARATOR = " -> "
_NO_MOVE = {"self", "search"}


@dataclass(frozen=True)
class Solution:
    """A calling sequence of APIs together with the couplings that link them."""

    apis: tuple[str, ...]
    couplings: tuple[Coupling, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        return SEPARATOR.join(self.apis)

    @property
    def hops(self) -> int:
        return len(self.apis)

    @property
    def head(self) -> str:
        return self.apis[0]

    @property
    def tail(self) -> str:
        return self.apis[-1]


def parse_solution(text: str) -> tuple[str, ...]:
    """Split a solution string (`a -> b -> c`) into API names, tolerating spacing and arrows."""
    parts = [p.strip() for p in text.replace("→", "->").split("->")]
    if not parts or any(not p for p in parts):
        raise ValueError(f"malformed solution {text!r}: expected API names joined by ' -> '")
    return tuple(parts)


class SolutionLibrary:
    """The concise solutions of a spec up to `max_hops`, shortest first."""

    def __init__(self, spec: ApiSpec, max_hops: int = 3) -> None:
        if max_hops < 1:
            raise ValueError("max_hops must be at least 1")
        self.spec = spec
        self.graph = ApiGraph(spec)
        self.max_hops = max_hops
        self.solutions: list[Solution] = []
        self.rejected: list[tuple[Solution, Solution]] = []
        self._kept: dict[tuple[str, tuple[str, ...]], list[Solution]] = {}
        """Kept solutions by head and signature, shortest first: what a candidate is compared with
        (an imported API with thousands of solutions would otherwise compare every pair)."""
        for candidate in sorted(self._paths(), key=lambda s: (s.hops, s.apis)):
            shorter = self._covered_by(candidate)
            if shorter is None:
                self.solutions.append(candidate)
                self._kept.setdefault((candidate.head, self.signature(candidate)), []).append(candidate)
            else:
                self.rejected.append((candidate, shorter))

    def __iter__(self):
        return iter(self.solutions)

    def __len__(self) -> int:
        return len(self.solutions)

    def __contains__(self, apis: object) -> bool:
        return apis in self._by_apis

    @cached_property
    def _by_apis(self) -> dict[tuple[str, ...], Solution]:
        return {s.apis: s for s in self.solutions}

    def get(self, apis: tuple[str, ...] | str) -> Solution:
        key = parse_solution(apis) if isinstance(apis, str) else apis
        try:
            return self._by_apis[key]
        except KeyError:
            raise KeyError(f"{SEPARATOR.join(key)} is not in the solution library") from None

    def signature(self, solution: Solution) -> tuple[str, ...]:
        """The chain of entity moves the solution makes (relations other than `self`)."""
        moves: list[str] = []
        for i, api_name in enumerate(solution.apis):
            relation = self.spec.api(api_name).relation
            if relation not in _NO_MOVE:
                moves.append(relation)
            if i < len(solution.couplings) and solution.couplings[i].relation:
                moves.append(solution.couplings[i].relation)
        return tuple(moves)

    def final_attributes(self, solution: Solution) -> set[str]:
        """Attributes available about the entity the solution ends on."""
        attrs: set[str] = set()
        for i in range(solution.hops - 1, -1, -1):
            api = self.spec.api(solution.apis[i])
            attrs.update(api.attribute_names)
            moved_in = api.relation not in _NO_MOVE or (
                i > 0 and solution.couplings[i - 1].relation is not None
            )
            if moved_in:
                break
        return attrs

    def shorter_equivalent(self, solution: Solution, needed: set[str]) -> Solution | None:
        """A kept solution shorter than `solution` that reaches the same entity with `needed`."""
        for kept in self._kept.get((solution.head, self.signature(solution)), ()):
            if kept.hops >= solution.hops:
                break
            if needed <= self.final_attributes(kept):
                return kept
        return None

    def _covered_by(self, candidate: Solution) -> Solution | None:
        needed = set(self.spec.api(candidate.tail).attribute_names)
        return self.shorter_equivalent(candidate, needed)

    def _paths(self) -> list[Solution]:
        paths: list[Solution] = []

        def extend(apis: tuple[str, ...], couplings: tuple[Coupling, ...]) -> None:
            paths.append(Solution(apis, couplings))
            if len(apis) == self.max_hops:
                return
            seen: set[str] = set()
            for c in self.graph.successors(apis[-1]):
                if c.dst not in seen:
                    seen.add(c.dst)
                    extend(apis + (c.dst,), couplings + (c,))

        for head in self.graph.heads:
            extend((head,), ())
        return paths

    def to_dict(self) -> list[dict[str, object]]:
        return [
            {"solution": str(s), "hops": s.hops, "signature": list(self.signature(s))}
            for s in self.solutions
        ]
