"""What the dataset-enlargement job knows on disk, and the one durable step of each batch.

Beside the dataset (`<dataset>/enlarge/`) live three append-only JSONL files: `review.jsonl`, every
rejected record with its reason (a plan below the trust bar is kept there whole, `low_confidence`,
until a verdict on it arrives), `feedback.jsonl`, every verdict the job has consumed (a verdict may
arrive before its request, and must outlive the commit of its offset), and `judged.jsonl`, the
planner's confidence of each logged question a person judged and whether it was right: what the
trust bar is calibrated on (soay/calibration.py). The tool-graph weights live in
`<dataset>/tool_weights.json`.

A batch becomes durable in this order, and only then are its offsets committed:

1. feedback and judged lines appended and fsync'd;
2. review lines appended and fsync'd;
3. the kept triplets written as a new dataset version (`soay.dataset.write_version`: shards,
   then the manifest replaced atomically — the commit point of the triplets);
4. the tool weights saved atomically, stamped with the manifest version and review line count.

A crash anywhere before the offset commit replays the batch, and the replay is idempotent: a
request whose triplet id is in the dataset, or whose id is in the review file, is skipped; a
feedback line already on file is not appended twice; weights whose stamp does not match the
dataset and review file are rebuilt from them (they are a pure function of both). A torn last
line (a crash mid-append) is cut off on load: its batch was never committed.

One writer per dataset: an exclusive lock file, released by the kernel if the writer dies.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from soay.dataset import MANIFEST, Manifest, ShardFormat, iter_triplets, load_manifest, write_version
from soay.graph import ApiGraph
from soay.log_triplets import LOG_SOURCE, dedupe_key, log_triplet_id
from soay.tool_weights import ToolWeights, load_tool_weights, weights_path
from soay.triplets import Triplet

STATE_DIR = "enlarge"
REVIEW_FILE = "review.jsonl"
FEEDBACK_FILE = "feedback.jsonl"
JUDGED_FILE = "judged.jsonl"
LOW_CONFIDENCE = "low_confidence"
"""The review reason of a plan nobody judged whose confidence is below the trust bar."""
LOCK_FILE = ".lock"

FAILED_PATH = {"exec_error", "empty_result", "mismatch", "path_mismatch", "logged_error", "negative_feedback", "negative_feedback_after_accept"}
"""Review reasons that count against the tools of the record's solution (node availability)."""
HELD_PATH = {"no_combination"}
"""Review reasons of records whose re-run verified: their path held up, though no triplet was made.
Not "held_out_entity": traffic about validation or test entities (a load test replaying them, say)
must not shape the ranking that the evaluation then measures."""


class DatasetLocked(RuntimeError):
    """Another enlargement job is writing this dataset."""


class EnlargeState:
    """The dataset index, review and feedback files and weights of one dataset, for one writer."""

    def __init__(self, dataset: Path, domain: str, graph: ApiGraph, shard_size: int = 5000, fmt: ShardFormat = "jsonl") -> None:
        self.dataset = Path(dataset)
        self.shard_size, self.fmt = shard_size, fmt
        self.domain = domain
        self.graph = graph
        self.dir = self.dataset / STATE_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.dir / LOCK_FILE, "a")  # noqa: SIM115 - held for the life of the state
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise DatasetLocked(f"another enlargement job is writing {self.dataset}") from None
        self.manifest: Manifest | None = load_manifest(self.dataset) if (self.dataset / MANIFEST).is_file() else None
        self.triplet_ids: set[str] = set()
        self.keys: set[str] = set()
        self.log_solutions: dict[str, str] = {}
        """Triplet id -> solution of the log triplets (for feedback that arrives after acceptance)."""
        if self.manifest is not None:
            for t in iter_triplets(self.dataset):
                self.triplet_ids.add(t.id)
                self.keys.add(dedupe_key(t.query, t.solution))
                if t.code_source == LOG_SOURCE:
                    self.log_solutions[t.id] = t.solution
        self.reviews = _read_jsonl(self.dir / REVIEW_FILE)
        self.reviewed: set[tuple[str, str]] = {(r["request_id"], r["reason"]) for r in self.reviews}
        self.reviewed_ids: set[str] = {r["request_id"] for r in self.reviews}
        feedback = _read_jsonl(self.dir / FEEDBACK_FILE)
        self.feedback_seen: set[tuple] = {_feedback_identity(f) for f in feedback}
        self.negative: set[str] = {f["request_id"] for f in feedback if f["verdict"] == "bad"}
        self.positive: set[str] = {f["request_id"] for f in feedback if f["verdict"] == "good"}
        self.picks: dict[str, str] = {f["request_id"]: f["choice"] for f in feedback if f.get("choice")}
        self.held: dict[str, dict[str, Any]] = {r["request_id"]: r for r in self.reviews if r["reason"] == LOW_CONFIDENCE}
        """Request id -> its low_confidence review row (the whole record): what a late verdict acts on."""
        self.judged: list[dict[str, Any]] = _read_jsonl(self.dir / JUDGED_FILE)
        self.weights = self._current_weights()

    # --- what is known ----------------------------------------------------------------------

    @property
    def version(self) -> int:
        return self.manifest.version if self.manifest else 0

    def done(self, request_id: str) -> bool:
        """Whether a request was decided before: its triplet is in the dataset or it was reviewed."""
        return log_triplet_id(request_id) in self.triplet_ids or request_id in self.reviewed_ids

    def new_feedback(self, line: dict[str, Any]) -> bool:
        return _feedback_identity(line) not in self.feedback_seen

    # --- the durable step -------------------------------------------------------------------

    def commit(
        self, triplets: list[Triplet], reviews: list[dict[str, Any]], feedback: list[dict[str, Any]], source: dict[str, Any],
        judged: list[dict[str, Any]] = (),
    ) -> Manifest | None:
        """Make one batch's decisions durable (see the module docstring for the order). Returns the
        new manifest when triplets were written."""
        # a record may come twice in one batch too: a broker that lost its log gets the outbox's
        # shipped records again, beside copies the enlargement had not yet read
        feedback = [f for f in {_feedback_identity(f): f for f in feedback}.values() if self.new_feedback(f)]
        _append_jsonl(self.dir / FEEDBACK_FILE, feedback)
        known = {j["request_id"] for j in self.judged}
        judged = [j for j in {j["request_id"]: j for j in judged}.values() if j["request_id"] not in known]
        _append_jsonl(self.dir / JUDGED_FILE, judged)
        reviews = [r for r in {(r["request_id"], r["reason"]): r for r in reviews}.values() if (r["request_id"], r["reason"]) not in self.reviewed]
        _append_jsonl(self.dir / REVIEW_FILE, reviews)
        manifest = None
        if triplets:
            manifest = write_version(self.dataset, self.domain, triplets, source, self.shard_size, self.fmt)
            self.manifest = manifest
        for t in triplets:
            self.weights.observe(t.solution, ok=True)
        for r in reviews:
            _observe_review(self.weights, r)
        self.weights.dataset_version = self.version
        self.weights.review_lines = len(self.reviews) + len(reviews)
        self.weights.save(weights_path(self.dataset))
        # the in-memory view follows the disk
        for f in feedback:
            self.feedback_seen.add(_feedback_identity(f))
            if f["verdict"] == "bad":
                self.negative.add(f["request_id"])
            else:
                self.positive.add(f["request_id"])
            if f.get("choice"):
                self.picks[f["request_id"]] = f["choice"]
        self.judged.extend(judged)
        for r in reviews:
            self.reviews.append(r)
            self.reviewed.add((r["request_id"], r["reason"]))
            self.reviewed_ids.add(r["request_id"])
            if r["reason"] == LOW_CONFIDENCE:
                self.held[r["request_id"]] = r
        for t in triplets:
            self.triplet_ids.add(t.id)
            self.keys.add(dedupe_key(t.query, t.solution))
            self.log_solutions[t.id] = t.solution
        return manifest

    def close(self) -> None:
        if not self._lock.closed:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

    # --- weights ----------------------------------------------------------------------------

    def _current_weights(self) -> ToolWeights:
        """The saved weights if they reflect this dataset version and review file, else rebuilt."""
        saved = load_tool_weights(weights_path(self.dataset), self.graph)
        if saved is not None and saved.dataset_version == self.version and saved.review_lines == len(self.reviews):
            return saved
        weights = rebuild_weights(self.graph, (s for s in self.log_solutions.values()), self.reviews)
        weights.dataset_version, weights.review_lines = self.version, len(self.reviews)
        weights.save(weights_path(self.dataset))
        return weights


def rebuild_weights(graph: ApiGraph, kept_solutions: Iterable[str], reviews: Iterable[dict[str, Any]]) -> ToolWeights:
    """The weights from scratch: every kept log triplet's path, then every reviewed record's."""
    weights = ToolWeights(graph)
    for solution in kept_solutions:
        weights.observe(solution, ok=True)
    for r in reviews:
        _observe_review(weights, r)
    return weights


def _observe_review(weights: ToolWeights, review: dict[str, Any]) -> None:
    solution = review.get("solution") or ""
    if review["reason"] in FAILED_PATH and solution:
        try:
            weights.observe(solution, ok=False)
        except ValueError:
            pass  # not a path of this graph (the record's solution was never valid)
    elif review["reason"] in HELD_PATH and solution:
        weights.observe(solution, ok=True)


def _feedback_identity(line: dict[str, Any]) -> tuple:
    """A verdict is the same verdict when request, verdict and time agree (not the offset: an
    in-memory broker restarts its offsets at 0)."""
    return (line["request_id"], line["verdict"], line.get("time"), line.get("comment"), line.get("choice"))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of an append-only file; a torn last line is cut off the file."""
    if not path.is_file():
        return []
    rows: list[dict[str, Any]] = []
    good = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            try:
                rows.append(json.loads(line))
            except ValueError:
                break
            good += len(line)
    if good != path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good)
    return rows


def _append_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
        f.flush()
        os.fsync(f.fileno())
