"""Dataset enlargement from the request log (the `soay enlarge` job; SoAy §8: enlarge the dataset
from real-world user logs).

A consumer in the group `kafka.consumer_group` reads the requests and feedback topics in batches.
A logged request is a candidate label only when its reading is known right: a person said "good";
a person said "bad" and picked one of the planner's alternative readings (Feedback.choice: the
alternative's program, logged with the request, is the label); or nobody judged it and the
planner's confidence clears the trust bar, calibrated on validation and on the judged logged
plans (soay/calibration.py). A verified program proves the code does what it does, not that it is
what was asked: before the bar, every verified plan was kept and the model's own mistakes became
labels. A candidate's program is re-run in the sandbox (Ray workers, see enlarge_verify.py) and
kept as a training triplet when the re-run verifies (soay/log_triplets.py: it succeeds,
reproduces the logged non-empty result, walks the logged solution, and is an instance of a
combination of the library). Each batch is then made durable
(enlarge_state.py: review and feedback files, a new dataset version, the tool-graph weights) and
only after that are its offsets committed, so a crash replays the batch and the replay finds its
work done: the effect is exactly once.

Outcomes, one per consumed record (the `outcome` label of soay_enlarge_records_total):

- kept: a new training triplet from a plan nobody judged, above the trust bar (split train,
  code_source log, id log-<hash of the request id>); confirmed: one a person said was good;
  corrected: the alternative a person picked after saying bad (its re-run must succeed and be
  an instance of the picked combination: `choice_mismatch` or `unknown_choice` otherwise);
- reading_tried: a request answered with a reading the client chose (a person trying an
  alternative), not judged: counted, not kept, not reviewed;
- kept_ambiguous / kept_not_found: a clarification triplet (soay/clarifications.py) made from a
  request the service answered with "several scholars carry this name" or "nobody carries it":
  its program is re-run and kept when the re-run's outcome is the logged kind; the answer stored
  is the clarification the re-run gives (`outcome_answer`: the candidates' ids come from the
  re-run, the log holds none), as the triplet factory verifies its own. An ambiguous one must
  list training entities only (`group_split` of its candidates, else held_out_candidates); a
  not-found one names nobody, so it is always filed as train (its question, if the factory made
  it for an evaluation split, is already in the dataset and the record is a duplicate);
- duplicate: its normalised query and solution are already in the dataset (any split) or kept
  earlier in the batch; dropped without a re-run (nothing to learn, nothing wrong);
- already_processed: its request id was decided before (a replay, or a producer's retry);
- feedback: a verdict, recorded in the feedback file;
- review reasons (the record goes to `<dataset>/enlarge/review.jsonl` with the reason):
  malformed (not a valid record), no_code, logged_error (the service's own run failed),
  unknown_solution, negative_feedback, exec_error, empty_result, mismatch, path_mismatch,
  no_combination (a verified program of no library combination: a new intent for a person to
  label), outcome_mismatch (the re-run's outcome, soay/outcomes.py, is not the kind the service
  logged: an answer, ambiguous or not found), held_out_candidates (an ambiguous request some of
  whose namesakes are validation or test entities), held_out_entity (about a validation or test entity: kept out of training and out of the
  tool weights, so the evaluation stays unseen),
  negative_feedback_after_accept (on the feedback record), and low_confidence (nobody judged it and
  the planner was less sure than the bar: the whole record waits there, and a later "good" or a
  pick makes it a triplet).

Feedback: a "bad" verdict, whenever it arrives, keeps its request out of the dataset; one that
arrives before or with its request sends the request to review without a re-run. A "bad" verdict
for a request already accepted cannot remove the triplet — versions are immutable, so a model
trained on version N can be reproduced — it adds a review line `negative_feedback_after_accept`
with the triplet id, for a person to act on, and counts against the path's tools in the weights.
A "good" verdict is recorded; it is not required (verification is the bar) and it never rescues
a record that fails verification.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata, TopicPartition
from prometheus_client import CollectorRegistry, Counter as PromCounter, Gauge, Histogram, start_http_server
from pydantic import ValidationError

from cluster.broker import ensure_topics
from soay.calibration import bar, trust_threshold
from soay.clarifications import AMBIGUOUS, CLARIFICATION_KINDS
from soay.domains import get_domain
from soay.log_triplets import Match, dedupe_key, is_empty, log_triplet, log_triplet_id, rerun_problem
from soay.logs import Feedback, RequestLog, consumed_records, consumed_topic, utc_now
from soay.settings import Settings
from soay.solutions import parse_solution
from soay.splits import HELD_OUT_SPLITS, TRAIN, entity_split, group_split, logged_split
from soay.triplets import Triplet
from training.corpus import ensure_corpus
from training.enlarge_state import LOW_CONFIDENCE, EnlargeState
from training.enlarge_verify import VerifierPool

KEPT = ("kept", "confirmed", "corrected", "kept_ambiguous", "kept_not_found")
"""The outcomes that made a triplet."""
REVIEW_TEXT_CHARS = 4000
"""Bound on a raw value or error copied into a review line."""
LAG_EVERY_S = 1.0
"""How often the lag is measured while no records arrive."""


class EnlargeMetrics:
    """The job's Prometheus metrics, in a registry of their own (one job per process)."""

    def __init__(self, port: int | None, host: str, log: Callable[[str], None]) -> None:
        self.registry = CollectorRegistry()
        self.records = PromCounter("soay_enlarge_records", "Consumed records by outcome.", ["outcome"], registry=self.registry)
        self.lag = Gauge("soay_enlarge_lag", "Records on the topics not yet committed by the group (end offsets minus committed).", registry=self.registry)
        self.batch_seconds = Histogram(
            "soay_enlarge_batch_seconds", "Seconds to decide and durably write one batch.", registry=self.registry,
            buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
        )
        self.triplets = PromCounter("soay_enlarge_triplets_written", "Triplets appended to the dataset.", registry=self.registry)
        self.server = None
        if port is not None:
            try:
                self.server, _ = start_http_server(port, addr=host, registry=self.registry)
            except OSError as e:
                log(f"enlarge: metrics not served on {host}:{port} ({e}); going on without them")

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@dataclass
class Decision:
    """One batch's decisions, before they are made durable."""

    triplets: list[Triplet] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    feedback: list[dict[str, Any]] = field(default_factory=list)
    judged: list[dict[str, Any]] = field(default_factory=list)
    """The planner's confidence of each judged logged plan and whether it was right."""
    outcomes: Counter = field(default_factory=Counter)


@dataclass
class Verdicts:
    """What people said about requests, from the feedback file and this batch."""

    negative: set[str]
    positive: set[str]
    picks: dict[str, str]

    def add(self, fb: Feedback) -> None:
        (self.negative if fb.verdict == "bad" else self.positive).add(fb.request_id)
        if fb.choice:
            self.picks[fb.request_id] = fb.choice

    def judged(self, request_id: str) -> bool:
        return request_id in self.negative or request_id in self.positive

    def right(self, request_id: str) -> bool:
        """A plan is right when someone said good and nobody said bad."""
        return request_id in self.positive and request_id not in self.negative


@dataclass
class Candidate:
    """A record on its way to a triplet, once its program (`code`) verifies."""

    message: Any
    record: RequestLog
    solution: str
    key: str
    code: str
    outcome: str
    """kept (trusted without a verdict), confirmed (a "good"), corrected (a person's pick)."""
    choice: str | None = None


@dataclass
class EnlargeReport:
    records: int
    seconds: float
    outcomes: dict[str, int]
    triplets_written: int
    versions: list[int]
    reruns: int
    lag: int | None
    dataset: str

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "records_per_second": round(self.records_per_second, 1)}


class Enlarger:
    """One consumer, one writer: poll a batch, decide, make it durable, commit its offsets."""

    def __init__(self, settings: Settings, dataset: Path | None = None, group: str | None = None, log: Callable[[str], None] = print) -> None:
        self.settings = settings
        self.cfg = settings.enlarge
        self.kafka = settings.kafka
        self.log = log
        self.domain = get_domain(settings.data.domain)
        self.library = {str(s) for s in self.domain.library}
        self.dataset = Path(dataset or settings.data.dataset_path())
        self.state = EnlargeState(self.dataset, self.domain.name, self.domain.library.graph, settings.data.shard_size, settings.data.shard_format)
        self.metrics: EnlargeMetrics | None = None
        self.pool: VerifierPool | None = None
        self.consumer: KafkaConsumer | None = None
        self.acks: KafkaProducer | None = None
        try:
            self.metrics = EnlargeMetrics(self.cfg.metrics_port, self.cfg.metrics_host, log)
            db = settings.data.corpus_path()
            if settings.sandbox.api_backend == "inprocess":
                db = ensure_corpus(self.domain.name, db, settings.data.corpus_size, settings.data.seed, show_progress=False)
            if self.cfg.workers:
                from cluster.ray_runtime import init_ray

                init_ray(settings.ray)
            self.pool = VerifierPool(
                self.domain.name, Path(db), settings.sandbox, self.cfg.workers, self.cfg.worker_cpus, self.cfg.verify_chunk, self.cfg.memo_size
            )
            ensure_topics(self.kafka.bootstrap_servers, [self.kafka.requests_topic, self.kafka.feedback_topic], self.kafka.partitions)
            ensure_topics(self.kafka.bootstrap_servers, [consumed_topic(self.kafka.requests_topic)], 1)
            self.consumer = KafkaConsumer(
                bootstrap_servers=self.kafka.bootstrap_servers.split(","),
                group_id=group or self.kafka.consumer_group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                # a restarted in-memory broker would otherwise make the topics on this consumer's
                # metadata request, with its own partition count; the producers make them as configured
                allow_auto_create_topics=False,
                session_timeout_ms=self.cfg.session_timeout_ms,
                heartbeat_interval_ms=self.cfg.heartbeat_interval_ms,
                max_poll_interval_ms=self.cfg.max_poll_interval_ms,
                max_poll_records=self.cfg.batch_records,
            )
            self.consumer.subscribe([self.kafka.requests_topic, self.kafka.feedback_topic])
        except BaseException:
            self.close()
            raise
        self.committed: dict[TopicPartition, int] = {}
        self.outcomes: Counter = Counter()
        self.records = 0
        self.versions: list[int] = []
        self.written = 0
        self.lag: int | None = None

    # --- the loop ---------------------------------------------------------------------------

    def run(self, until_idle: float | None = None, max_records: int | None = None, stop: threading.Event | None = None) -> EnlargeReport:
        """Consume until `stop` is set, `max_records` records are done, or (with `until_idle`) the
        group is caught up and nothing arrived for that many seconds."""
        assert self.consumer is not None
        stop = stop or threading.Event()
        started = time.monotonic()
        last_record: float | None = None
        last_lag = last_line = started
        line_records = 0
        while not stop.is_set():
            limit = self.cfg.batch_records if max_records is None else min(self.cfg.batch_records, max_records - self.records)
            if limit <= 0:
                break
            batch = self._poll(limit)
            now = time.monotonic()
            if batch:
                self.process(batch)
                last_record = now = time.monotonic()
                last_lag = now
            elif now - last_lag >= LAG_EVERY_S:
                self._measure_lag()
                last_lag = now
            if last_record is None and self.consumer.assignment():
                last_record = now  # the idle clock starts once the group has given us partitions
            if now - last_line >= self.cfg.progress_seconds:
                self._progress(now - started, (self.records - line_records) / (now - last_line))
                last_line, line_records = now, self.records
            if until_idle is not None and last_record is not None and now - last_record >= until_idle and self.lag == 0:
                break
        seconds = time.monotonic() - started
        self._progress(seconds, None)
        return EnlargeReport(self.records, seconds, dict(self.outcomes), self.written, self.versions,
                             self.pool.reruns if self.pool else 0, self.lag, str(self.dataset))

    def _poll(self, limit: int) -> list[Any]:
        """Up to `limit` records: polls until the batch is full, the wait is over or none come."""
        assert self.consumer is not None
        records: list[Any] = []
        deadline = time.monotonic() + self.cfg.batch_wait_ms / 1000
        while len(records) < limit:
            remaining = deadline - time.monotonic()
            got = self.consumer.poll(timeout_ms=max(0, int(remaining * 1000)), max_records=limit - len(records))
            if not got:
                break
            for messages in got.values():
                records.extend(messages)
            if remaining <= 0:
                break
        return records

    # --- one batch --------------------------------------------------------------------------

    def process(self, batch: list[Any]) -> Decision:
        """Decide a batch, make it durable, then commit its offsets."""
        started = time.perf_counter()
        decision = self.decide(batch)
        source = {
            "job": "enlarge",
            "group": self.consumer.config["group_id"] if self.consumer else None,
            "records": len(batch),
            "outcomes": dict(decision.outcomes),
            "offsets": {f"{m.topic}/{m.partition}": m.offset + 1 for m in sorted(batch, key=lambda m: m.offset)},
            "time": utc_now(),
        }
        manifest = self.state.commit(decision.triplets, decision.reviews, decision.feedback, source, decision.judged)
        if manifest is not None:
            self.versions.append(manifest.version)
        self._acknowledge(batch)
        self._commit_offsets(batch)
        self.records += len(batch)
        self.written += len(decision.triplets)
        self.outcomes.update(decision.outcomes)
        if self.metrics:
            for outcome, n in decision.outcomes.items():
                self.metrics.records.labels(outcome).inc(n)
            self.metrics.triplets.inc(len(decision.triplets))
            self.metrics.batch_seconds.observe(time.perf_counter() - started)
        self._measure_lag()
        return decision

    def decide(self, batch: list[Any]) -> Decision:
        """What to keep, review and record for a batch (nothing is written here).

        A record becomes a triplet only when its reading is known right: a person said "good", a
        person picked it instead ("bad" with a `choice`: the chosen alternative's program), or
        nobody judged it and the planner's confidence clears the trust bar (soay/calibration.py),
        which the verdicts of this batch and earlier ones calibrate before the unjudged records are
        decided. Whatever the label, the program must verify by its re-run."""
        d = Decision()
        requests: list[tuple[Any, RequestLog]] = []
        verdicts = Verdicts(set(self.state.negative), set(self.state.positive), dict(self.state.picks))
        late: list[tuple[Any, RequestLog]] = []
        flagged: set[str] = set()
        for m in sorted(batch, key=lambda m: (m.topic, m.partition, m.offset)):
            try:
                if m.topic == self.kafka.feedback_topic:
                    fb = Feedback.decode(m.value)
                else:
                    requests.append((m, RequestLog.decode(m.value)))
                    continue
            except (ValidationError, ValueError, TypeError) as e:
                self._review(d, m, f"{m.topic}/{m.partition}/{m.offset}", "malformed", None, detail=str(e)[:REVIEW_TEXT_CHARS],
                             key=m.key.decode("utf-8", "replace") if m.key else None,
                             value=(m.value or b"").decode("utf-8", "replace")[:REVIEW_TEXT_CHARS])
                continue
            line = {**fb.model_dump(), **_coordinates(m)}
            d.feedback.append(line)
            d.outcomes[self._late_verdict(d, m, fb, flagged) if fb.verdict == "bad" else "feedback"] += 1
            verdicts.add(fb)
            held = self.state.held.get(fb.request_id)
            if held is not None and self.state.new_feedback(line) and log_triplet_id(fb.request_id) not in self.state.triplet_ids:
                late.append((m, RequestLog.model_validate(held["record"])))  # a verdict on a plan that waited for one
        labelled: list[Candidate] = []
        unjudged: list[tuple[Any, RequestLog, str, str]] = []
        seen: set[str] = set()
        for m, r in requests:
            if r.request_id in seen or self.state.done(r.request_id):
                d.outcomes["already_processed"] += 1
                continue
            seen.add(r.request_id)
            self._sort(d, m, r, verdicts, labelled, unjudged)
        for m, r in late:
            if r.request_id not in seen:
                seen.add(r.request_id)
                self._sort(d, m, r, verdicts, labelled, unjudged)
        needed = self._trust_bar(d)
        candidates = list(labelled)
        for m, r, solution, key in unjudged:
            bar_r = bar(r.confidence_needed, needed[0], needed[1], self.cfg.min_judged)
            if r.confidence is not None and bar_r is not None and r.confidence >= bar_r:
                candidates.append(Candidate(m, r, solution, key, r.code, "kept"))
            else:
                self._review(d, m, r.request_id, LOW_CONFIDENCE, r, detail=f"confidence {r.confidence} below the trust bar {bar_r}",
                             confidence=r.confidence, bar=bar_r, record=r.model_dump())
        assert self.pool is not None
        checks = self.pool.check([(c.code, c.solution) for c in candidates]) if candidates else {}
        kept_keys: set[str] = set()
        for c in candidates:
            check = checks[(c.code, c.solution)]
            if c.record.kind in CLARIFICATION_KINDS and c.outcome != "corrected":
                self._clarification(d, c.message, c.record, c.solution, c.key, check, kept_keys)
                continue
            self._verified(d, c, check, kept_keys)
        return d

    def _sort(self, d: Decision, m: Any, r: RequestLog, verdicts: Verdicts, labelled: list[Candidate],
              unjudged: list[tuple[Any, RequestLog, str, str]]) -> None:
        """Review what cannot be a triplet; put a record with a person's label in `labelled` and
        one nobody judged in `unjudged` (and note a judged plan's confidence for the trust bar)."""
        if r.confidence is not None and r.reading is None and verdicts.judged(r.request_id):
            d.judged.append({"request_id": r.request_id, "confidence": r.confidence, "right": verdicts.right(r.request_id),
                             "models": r.models, "time": r.time})
        choice = verdicts.picks.get(r.request_id) if r.request_id in verdicts.negative else None
        if choice is not None:
            alternative = next((a for a in r.alternatives if a.combination == choice), None)
            if alternative is None:
                self._review(d, m, r.request_id, "unknown_choice", r, detail=f"{choice!r} is none of the record's alternatives")
            else:
                solution = _canonical(alternative.solution)
                labelled.append(Candidate(m, r, solution, dedupe_key(r.query, solution), alternative.code, "corrected", choice))
        elif not r.code.strip():
            self._review(d, m, r.request_id, "no_code", r, detail=r.error)
        elif r.status != "ok" and not (r.kind in CLARIFICATION_KINDS and r.status == "execution_error"):
            # a not-found program may fail on its empty search: its error is the logged outcome
            self._review(d, m, r.request_id, "logged_error", r, detail=r.error)
        elif (solution := _canonical(r.solution)) not in self.library:
            self._review(d, m, r.request_id, "unknown_solution", r)
        elif r.request_id in verdicts.negative:
            self._review(d, m, r.request_id, "negative_feedback", r)
        elif (key := dedupe_key(r.query, solution)) in self.state.keys:
            d.outcomes["duplicate"] += 1
        elif r.request_id in verdicts.positive:
            labelled.append(Candidate(m, r, solution, key, r.code, "confirmed"))
        elif r.reading is not None:
            d.outcomes["reading_tried"] += 1  # a person trying an alternative: a label only with a verdict
        else:
            unjudged.append((m, r, solution, key))

    def _trust_bar(self, d: Decision) -> tuple[float | None, int]:
        """The traffic's trust bar from the last `judged_window` judged logged plans (this batch's
        included), and how many there were."""
        judged = (self.state.judged + d.judged)[-self.cfg.judged_window:]
        threshold = trust_threshold([j["confidence"] for j in judged], [j["right"] for j in judged], self.cfg.trust_precision)
        return threshold, len(judged)

    def _verified(self, d: Decision, c: Candidate, check: Any, kept_keys: set[str]) -> None:
        """Keep a candidate whose re-run verifies, or review it with why not. A corrected record's
        program never ran for the service, so its re-run is checked against the person's choice
        instead of a logged result."""
        r = c.record
        if c.outcome == "corrected":
            problem = ("exec_error" if not check.ok else "empty_result" if is_empty(check.result) else None) or check.problem
            if not problem and check.combination_id != c.choice:
                problem = "choice_mismatch"
        else:
            problem = rerun_problem(check.ok, r.result, check.result) or check.problem
        if problem:
            self._review(d, c.message, r.request_id, problem, r, detail=check.error, rerun_result=check.result, label=c.outcome)
        elif check.kind != ("answer" if c.outcome == "corrected" else r.kind):
            self._review(d, c.message, r.request_id, "outcome_mismatch", r, detail=f"the re-run's outcome is {check.kind}",
                         rerun_result=check.clarification, label=c.outcome)
        elif self.cfg.hold_out_test_entities and check.entity_id and (split := self._split(check.entity_id)) in HELD_OUT_SPLITS:
            self._review(d, c.message, r.request_id, "held_out_entity", r, detail=f"entity {check.entity_id} is in the {split} split")
        elif c.key in kept_keys or c.key in self.state.keys:
            d.outcomes["duplicate"] += 1
        else:
            kept_keys.add(c.key)
            assert check.combination_id is not None and check.values is not None
            match = Match(self.domain.combinations.by_id[check.combination_id], check.values)
            # a person's label may be held out for the promotion gate; a trusted plan is no label to measure by
            split = TRAIN if c.outcome == "kept" else logged_split(r.request_id, self.cfg.logged_holdout)
            d.triplets.append(log_triplet(r.request_id, self.domain.name, r.query, r.language, c.solution, c.code, check.result, match,
                                          check.entity_id, split))
            d.outcomes[c.outcome] += 1

    def _clarification(self, d: Decision, m: Any, r: RequestLog, solution: str, key: str, check: Any, kept_keys: set[str]) -> None:
        """Keep a served ambiguous or not-found request as its clarification triplet, or review it."""
        if check.problem:
            self._review(d, m, r.request_id, check.problem, r, detail=check.error, rerun_result=check.result)
            return
        if check.kind != r.kind or check.clarification is None:
            self._review(d, m, r.request_id, "outcome_mismatch", r, detail=f"logged {r.kind}, the re-run's outcome is {check.kind}",
                         rerun_result=check.clarification if check.clarification is not None else check.result)
            return
        answer = check.clarification
        if r.kind == AMBIGUOUS and self.cfg.hold_out_test_entities:
            candidates = [str(c) for c in answer.get("candidates") or []]
            split = group_split(candidates, self.settings.data.test_fraction, self.settings.data.validation_fraction)
            if split in HELD_OUT_SPLITS:
                self._review(d, m, r.request_id, "held_out_candidates", r, detail=f"a namesake is in the {split} split",
                             rerun_result=answer)
                return
        if key in kept_keys:
            d.outcomes["duplicate"] += 1
            return
        kept_keys.add(key)
        assert check.combination_id is not None and check.values is not None
        match = Match(self.domain.combinations.by_id[check.combination_id], check.values)
        d.triplets.append(log_triplet(r.request_id, self.domain.name, r.query, r.language, solution, r.code, answer, match, check.entity_id))
        d.outcomes[f"kept_{r.kind}"] += 1

    def _split(self, entity_id: str) -> str:
        return entity_split(entity_id, self.settings.data.test_fraction, self.settings.data.validation_fraction)

    def _late_verdict(self, d: Decision, m: Any, fb: Feedback, flagged: set[str]) -> str:
        """The outcome of a bad verdict: noted for review when its request is already a triplet."""
        triplet_id = log_triplet_id(fb.request_id)
        if triplet_id not in self.state.triplet_ids or fb.request_id in flagged or (
            (fb.request_id, "negative_feedback_after_accept") in self.state.reviewed
        ):
            return "feedback"
        flagged.add(fb.request_id)
        d.reviews.append({"request_id": fb.request_id, "reason": "negative_feedback_after_accept", "triplet_id": triplet_id,
                          "solution": self.state.log_solutions.get(triplet_id, ""), "comment": fb.comment,
                          "detail": "the triplet stays in its dataset version; decide whether to drop it from training",
                          **_coordinates(m), "reviewed": utc_now()})
        return "negative_feedback_after_accept"

    def _review(self, d: Decision, m: Any, request_id: str, reason: str, r: RequestLog | None, **extra: Any) -> None:
        d.outcomes[reason] += 1
        row: dict[str, Any] = {"request_id": request_id, "reason": reason}
        if r is not None:
            row.update(query=r.query, solution=_canonical(r.solution) if r.solution else "", code=r.code, logged_result=r.result, status=r.status)
        row.update({k: v for k, v in extra.items() if v is not None})
        row.update(_coordinates(m), reviewed=utc_now())
        d.reviews.append(row)

    # --- offsets and lag --------------------------------------------------------------------

    def _acknowledge(self, batch: list[Any]) -> None:
        """Tell the request log's outboxes which of their records are now in the dataset (they may
        forget them, serving/outbox.py). A lost acknowledgement only means a record is sent again."""
        try:
            if self.acks is None:
                self.acks = KafkaProducer(bootstrap_servers=self.kafka.bootstrap_servers.split(","), acks="all",
                                          allow_auto_create_topics=False, max_block_ms=5000)
            for ack in consumed_records(batch):
                self.acks.send(consumed_topic(self.kafka.requests_topic), value=ack.encode())
            self.acks.flush(timeout=10)
        except Exception as e:  # noqa: BLE001 - the records are durable; the outbox sends them again later
            self.log(f"enlarge: acknowledgements not sent ({e!r}); the outboxes will send those records again")
            if self.acks is not None:
                try:
                    self.acks.close(timeout=0)
                except KafkaError:
                    pass
            self.acks = None

    def _commit_offsets(self, batch: list[Any]) -> None:
        assert self.consumer is not None
        offsets: dict[TopicPartition, int] = {}
        for m in batch:
            tp = TopicPartition(m.topic, m.partition)
            offsets[tp] = max(offsets.get(tp, 0), m.offset + 1)
        try:
            self.consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
        except KafkaError as e:
            # the group rebalanced under the batch (CommitFailed, RebalanceInProgress) or the broker
            # went away: whoever reads the batch again replays it and finds it done
            self.log(f"enlarge: offsets not committed ({e}); the batch is durable and a replay skips it")
            return
        self.committed.update(offsets)

    def _measure_lag(self) -> None:
        """End offsets minus committed offsets over the partitions this consumer holds."""
        assert self.consumer is not None
        parts = list(self.consumer.assignment())
        if not parts:
            return
        try:
            ends = self.consumer.end_offsets(parts)
            lag = 0
            for tp in parts:
                if tp not in ends:  # a partition the broker does not know (yet): nothing to lag behind
                    continue
                if tp not in self.committed or ends[tp] < self.committed[tp]:  # new, or a broker that lost its log
                    committed = self.consumer.committed(tp)
                    self.committed[tp] = committed if committed is not None else self.consumer.beginning_offsets([tp]).get(tp, 0)
                lag += max(0, ends[tp] - self.committed[tp])
        except (KafkaError, KeyError) as e:  # kafka-python raises KeyError for a partition a restarted broker lost
            self.log(f"enlarge: lag not measured ({e!r})")
            return
        self.lag = lag
        if self.metrics:
            self.metrics.lag.set(lag)

    def _progress(self, seconds: float, recent_rate: float | None) -> None:
        o = self.outcomes
        kept = KEPT
        review = sum(v for k, v in o.items() if k not in (*kept, "duplicate", "already_processed", "feedback", "reading_tried"))
        rate = f"{recent_rate:,.0f}/s now, " if recent_rate is not None else ""
        self.log(
            f"enlarge: {self.records:,} records in {seconds:.1f} s ({rate}{self.records / max(seconds, 1e-9):,.0f}/s overall) "
            f"kept {o['kept']:,} confirmed {o['confirmed']:,} corrected {o['corrected']:,} clarifications {o['kept_ambiguous'] + o['kept_not_found']:,} review {review:,} duplicate {o['duplicate']:,} replayed {o['already_processed']:,} "
            f"feedback {o['feedback']:,} lag {self.lag if self.lag is not None else '?'}"
        )

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close(autocommit=False)
            self.consumer = None
        if self.acks is not None:
            self.acks.close(timeout=5)
            self.acks = None
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.metrics is not None:
            self.metrics.close()
        self.state.close()


def run_enlargement(
    settings: Settings, dataset: Path | None = None, until_idle: float | None = None, max_records: int | None = None,
    group: str | None = None, stop: threading.Event | None = None, log: Callable[[str], None] = print,
) -> EnlargeReport:
    """Run the enlargement job until stopped, idle or done (see Enlarger.run)."""
    enlarger = Enlarger(settings, dataset, group, log)
    try:
        return enlarger.run(until_idle, max_records, stop)
    finally:
        enlarger.close()


def _canonical(solution: str) -> str:
    try:
        return " -> ".join(parse_solution(solution))
    except ValueError:
        return solution


def _coordinates(m: Any) -> dict[str, Any]:
    return {"topic": m.topic, "partition": m.partition, "offset": m.offset}
