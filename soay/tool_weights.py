"""Node and edge weights of the API graph, learnt from the call paths that served requests took.

Cai's thesis (README, References) §3.5 gives a tool graph two kinds of weight: an edge's
*transfer weight* (how likely a call of tool A is followed by a call of tool B) and a node's
*availability weight* (how reliably a tool does its part). Here both are learnt from the
dataset-enlargement job's verdicts on logged requests: every kept record's solution is an
observed path that held up, every record whose re-execution failed (or that a person marked
wrong) is a path that did not.

- edge weight P(b | a): the share of kept paths at `a` that went on to `b` (or stopped, END),
  Laplace-smoothed over `a`'s successors in the API graph so unseen moves keep some mass;
- node weight: the smoothed share of observed paths through an API that held up, (kept + 1) /
  (kept + failed + 2).

`path_prior` turns them into one number per solution for the planner's retrieval
(`soay.agent.candidate_solutions`): how much better supported a path is than chance, 1.0 for
every path before anything was observed, so an empty model never changes a ranking.

The weights are a pure function of what the enlargement job kept and reviewed, so they can
always be rebuilt from the dataset and the review file; the JSON on disk records which dataset
version and how many review lines it reflects, which is how the job knows it is current.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from soay.files import atomic_write_text
from soay.graph import ApiGraph
from soay.solutions import parse_solution

START, END = "<start>", "<end>"
WEIGHTS_FILE = "tool_weights.json"
SMOOTHING = 1.0
"""Laplace pseudo-count per possible move: with few observations the weights stay near uniform."""


def weights_path(dataset_dir: Path) -> Path:
    """Where the weights of a dataset live: beside its manifest."""
    return Path(dataset_dir) / WEIGHTS_FILE


class ToolWeights:
    """Observed-path statistics over one API graph, and the weights derived from them."""

    def __init__(self, graph: ApiGraph) -> None:
        self.successors: dict[str, list[str]] = {START: list(graph.heads)}
        for api, couplings in graph.edges.items():
            self.successors[api] = sorted({c.dst for c in couplings}) + [END]
        self.edge_counts: dict[str, dict[str, int]] = {src: {} for src in self.successors}
        self.kept: dict[str, int] = {api: 0 for api in graph.edges}
        self.failed: dict[str, int] = {api: 0 for api in graph.edges}
        self.paths = 0
        self.dataset_version = 0
        self.review_lines = 0

    # --- learning ---------------------------------------------------------------------------

    def observe(self, solution: str, ok: bool) -> None:
        """Count one observed path: `ok` when its record was kept, else a failure on its tools."""
        apis = parse_solution(solution)
        for api in apis:
            if api not in self.kept:
                raise ValueError(f"{solution!r}: {api} is not an API of this graph")
        if not ok:
            for api in set(apis):
                self.failed[api] += 1
            return
        for api in set(apis):
            self.kept[api] += 1
        steps = (START, *apis, END)
        for src, dst in zip(steps, steps[1:]):
            if dst not in self.successors[src]:
                raise ValueError(f"{solution!r}: {src} -> {dst} is not an edge of the API graph")
            self.edge_counts[src][dst] = self.edge_counts[src].get(dst, 0) + 1
        self.paths += 1

    # --- weights ----------------------------------------------------------------------------

    def edge_weight(self, src: str, dst: str) -> float:
        """Transfer weight P(dst | src), smoothed over src's successors in the graph (and END)."""
        options = self.successors[src]
        if dst not in options:
            return 0.0
        counts = self.edge_counts[src]
        return (counts.get(dst, 0) + SMOOTHING) / (sum(counts.values()) + SMOOTHING * len(options))

    def node_weight(self, api: str) -> float:
        """Availability weight: the smoothed share of observed paths through `api` that held up."""
        return (self.kept[api] + 1) / (self.kept[api] + self.failed[api] + 2)

    def path_prior(self, solution: str) -> float:
        """How much better supported `solution` is than chance: the geometric mean of its moves'
        transfer weights relative to uniform, times that of its tools' availability relative to
        the uninformed 1/2. Exactly 1.0 for every path while nothing has been observed; geometric
        means keep one- and three-hop paths comparable."""
        try:
            apis = parse_solution(solution)
        except ValueError:
            return 1.0
        if any(api not in self.kept for api in apis):
            return 1.0
        steps = (START, *apis, END)
        lifts = [self.edge_weight(a, b) * len(self.successors[a]) for a, b in zip(steps, steps[1:])]
        if any(lift <= 0.0 for lift in lifts):
            return 0.0  # a move the graph does not have: not a path of this library
        moves = math.exp(sum(math.log(x) for x in lifts) / len(lifts))
        tools = math.exp(sum(math.log(2 * self.node_weight(api)) for api in apis) / len(apis))
        return moves * tools

    # --- persistence ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset_version": self.dataset_version,
            "review_lines": self.review_lines,
            "paths": self.paths,
            "nodes": {api: {"kept": self.kept[api], "failed": self.failed[api], "weight": round(self.node_weight(api), 6)} for api in self.kept},
            "edges": {
                src: {dst: {"count": self.edge_counts[src].get(dst, 0), "weight": round(self.edge_weight(src, dst), 6)} for dst in dsts}
                for src, dsts in self.successors.items()
            },
        }

    @classmethod
    def from_dict(cls, graph: ApiGraph, data: dict[str, Any]) -> ToolWeights:
        weights = cls(graph)
        weights.dataset_version = int(data.get("dataset_version", 0))
        weights.review_lines = int(data.get("review_lines", 0))
        weights.paths = int(data.get("paths", 0))
        for api, node in data.get("nodes", {}).items():
            if api in weights.kept:
                weights.kept[api], weights.failed[api] = int(node["kept"]), int(node["failed"])
        for src, dsts in data.get("edges", {}).items():
            for dst, edge in dsts.items():
                if src in weights.successors and dst in weights.successors[src] and edge["count"]:
                    weights.edge_counts[src][dst] = int(edge["count"])
        return weights

    def save(self, path: Path) -> None:
        """Write atomically (temp file, fsync, rename): a reader sees the old or the new weights."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, sort_keys=True))


def load_tool_weights(path: Path, graph: ApiGraph) -> ToolWeights | None:
    """The weights saved at `path` (a dataset directory or the JSON file), or None if there are none."""
    path = Path(path)
    if path.is_dir():
        path = weights_path(path)
    if not path.is_file():
        return None
    return ToolWeights.from_dict(graph, json.loads(path.read_text(encoding="utf-8")))
