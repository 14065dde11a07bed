"""Dataset enlargement from the request log, against the real broker on loopback, the real
sandbox and Ray: what is kept and reviewed, idempotent replays, and exactly-once effects when the
job crashes after its durable write or is SIGKILLed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from kafka import KafkaProducer

from cluster.broker import ensure_topics
from conftest import ROOT, SOAY, TEST_CORPUS_SIZE, free_port, stop, verified_triplets
from soay.answers import answers_match
from soay.clarifications import AMBIGUOUS, NOT_FOUND, clarification_matches, is_clarification
from soay.dataset import iter_triplets, load_manifest, write_version
from soay.domains import get_domain
from soay.log_triplets import dedupe_key, log_triplet_id
from soay.logs import Alternative, Feedback, RequestLog
from soay.outcomes import analyse, fuzzy_apis
from soay.settings import Settings
from soay.splits import TRAIN, group_split, logged_split
from soay.tool_weights import load_tool_weights
from soay.triplets import Triplet, TripletFactory, WorkUnit
from training.enlarge import Enlarger, run_enlargement
from training.enlarge_state import FEEDBACK_FILE, JUDGED_FILE, REVIEW_FILE, STATE_DIR, rebuild_weights
from training.generate import sandbox_for

REQUESTS, FEEDBACK = "test-enlarge.requests", "test-enlarge.feedback"
GROUP = "test-enlarge"


def enlarge_settings(data_root: Path, bootstrap: str, **enlarge) -> Settings:
    return Settings(
        data={"root": data_root, "corpus_size": TEST_CORPUS_SIZE, "seed": 7},
        kafka={"bootstrap_servers": bootstrap, "requests_topic": REQUESTS, "feedback_topic": FEEDBACK, "partitions": 3, "consumer_group": GROUP},
        enlarge={"workers": 0, "metrics_port": None, "batch_records": 500, "progress_seconds": 60.0, **enlarge},
    )


@dataclass
class World:
    settings: Settings
    dataset: Path
    existing: list[Triplet]
    fresh: list[Triplet]
    test: list[Triplet]
    producer: KafkaProducer

    def request(self, rid: str, t: Triplet, **changes) -> None:
        # a plan the planner was sure of, above the served model's trust bar, unless a test says otherwise
        record = RequestLog(request_id=rid, endpoint="/v1/ask", query=t.query, language=t.language, solution=t.solution,
                            code=t.code, result=t.answer, status="ok", confidence=0.99, confidence_needed=0.9)
        self.send(REQUESTS, rid, record.model_copy(update=changes).encode())

    def feedback(self, rid: str, verdict: str, choice: str | None = None) -> None:
        self.send(FEEDBACK, rid, Feedback(request_id=rid, verdict=verdict, choice=choice).encode())

    def send(self, topic: str, key: str, value: bytes) -> None:
        self.producer.send(topic, key=key.encode(), value=value)

    def flush(self) -> None:
        self.producer.flush(timeout=30)

    def reviews(self) -> list[dict]:
        path = self.dataset / STATE_DIR / REVIEW_FILE
        return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []

    def log_triplets(self) -> list[Triplet]:
        return [t for t in iter_triplets(self.dataset, verify=True) if t.code_source == "log"]


@pytest.fixture(scope="module")
def world(data_root, aminer_db, aminer_env, kafka_broker, tmp_path_factory):
    root = tmp_path_factory.mktemp("enlarge")
    settings = enlarge_settings(data_root, kafka_broker.bootstrap)
    train, test = verified_triplets(settings, aminer_env, aminer_db, {"train": 8, "test": 2})
    existing = train[::2]
    keys = {dedupe_key(t.query, t.solution) for t in existing + test[:2]}
    fresh = [t for t in train[1::2] if dedupe_key(t.query, t.solution) not in keys]
    assert len(fresh) >= 150
    dataset = root / "dataset"
    write_version(dataset, "aminer", existing + test[:2], {"job": "test"})
    ensure_topics(kafka_broker.bootstrap, [REQUESTS, FEEDBACK], 3)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all")
    yield World(settings, dataset, existing, fresh, test, producer)
    producer.close()


def run(world: World, **kwargs) -> tuple[dict, list[str]]:
    lines: list[str] = []
    report = run_enlargement(world.settings, world.dataset, until_idle=2.0, log=lines.append, **kwargs)
    return report.to_dict(), lines


def test_enlargement_keeps_verified_records_and_reviews_the_rest(world):
    w, fresh = world, world.fresh
    good = fresh[:30]
    for i in range(30, 33):  # a bad verdict that arrives before its request
        w.feedback(f"bad-{i}", "bad")
    w.flush()
    for i, t in enumerate(good):
        w.request(f"good-{i}", t)
    for i in range(5):
        w.feedback(f"good-{i}", "good")
    w.request("good-1", good[1])  # a producer's retry: the same request twice
    w.request("dup-0", good[0], query="  " + good[0].query.upper() + " ")  # the same question again
    for i in range(30, 33):
        w.request(f"bad-{i}", fresh[i])
    w.request("broken-0", fresh[33], code=fresh[33].code.replace("final_result = ", "final_result = undefined_name + ", 1))
    w.request("broken-1", fresh[34], code="final_result = (\n")
    w.request("wrong", fresh[35], result="not the answer")
    other = next(s for s in (str(x) for x in get_domain("aminer").library) if s != fresh[36].solution and len(s.split(" -> ")) > 1)
    w.request("path", fresh[36], solution=other)
    w.request("nocomb", fresh[37], code="unused = 0\n" + fresh[37].code)
    w.request("empty", fresh[38], code="final_result = []\n", result=[])
    w.request("logerr", fresh[39], status="execution_error", result=None, error="boom")
    w.request("nocode", fresh[40], status="failed", code="", result=None)
    w.request("unknown", fresh[41], solution="searchPerson -> getPublication")
    for i, t in enumerate(w.test[2:5]):  # about test-split entities
        w.request(f"test-{i}", t)
    for i, t in enumerate(w.existing[:3]):  # already in the dataset
        w.request(f"known-{i}", t)
    w.request("known-test", w.test[0])
    w.send(REQUESTS, "junk", b"{not json")
    w.send(FEEDBACK, "junk", b"[]")
    w.feedback("nobody", "good")
    w.flush()

    port = free_port()
    settings = w.settings.model_copy(update={"enlarge": w.settings.enlarge.model_copy(update={"metrics_port": port})})
    lines: list[str] = []
    enlarger = Enlarger(settings, w.dataset, log=lines.append)
    try:
        report = enlarger.run(until_idle=2.0).to_dict()
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        registry = enlarger.metrics.registry
    finally:
        enlarger.close()

    kept = w.log_triplets()
    by_id = {t.id: t for t in kept}
    assert len(by_id) == len(kept) == 30
    winner = "good-0" if log_triplet_id("good-0") in by_id else "dup-0"
    assert set(by_id) == {log_triplet_id(r) for r in [winner] + [f"good-{i}" for i in range(1, 30)]}
    for i, t in enumerate(good):
        made = by_id[log_triplet_id(winner if i == 0 else f"good-{i}")]
        # the library recognised the program: same combination, inputs, entity as generated
        assert (made.solution, made.code, made.combination, made.inputs, made.entity_id, made.hops) == (
            t.solution, t.code, t.combination, t.inputs, t.entity_id, t.hops)
        assert answers_match(t.answer, made.answer) and made.language == t.language
        rid = winner if i == 0 else f"good-{i}"
        # a person's "good" may hold the question out for the promotion gate; a trusted plan is always training
        split = logged_split(rid, w.settings.enlarge.logged_holdout) if i < 5 else "train"
        assert (made.split, made.code_source, made.domain, made.template_id) == (split, "log", "aminer", f"{t.combination.id}/log")
        if made.id != log_triplet_id("dup-0"):
            assert made.query == t.query
    manifest = load_manifest(w.dataset)
    assert manifest.version == 2 and manifest.sources["2"]["job"] == "enlarge"

    reviews = w.reviews()
    got = Counter((r["request_id"], r["reason"]) for r in reviews)
    assert max(got.values()) == 1
    expected = {(f"bad-{i}", "negative_feedback") for i in range(30, 33)} | {
        ("broken-0", "exec_error"), ("broken-1", "exec_error"), ("wrong", "mismatch"), ("path", "path_mismatch"),
        ("nocomb", "no_combination"), ("empty", "empty_result"), ("logerr", "logged_error"), ("nocode", "no_code"),
        ("unknown", "unknown_solution"), ("test-0", "held_out_entity"), ("test-1", "held_out_entity"), ("test-2", "held_out_entity"),
    }
    assert {k for k in got if k[1] != "malformed"} == expected
    assert sorted(r["topic"] for r in reviews if r["reason"] == "malformed") == [FEEDBACK, REQUESTS]
    mismatch = next(r for r in reviews if r["reason"] == "mismatch")
    assert mismatch["logged_result"] == "not the answer" and answers_match(fresh[35].answer, mismatch["rerun_result"])

    outcomes = report["outcomes"]
    # the five judged good are labels by a person's word (and win the duplicate of good-0), the rest by the trust bar
    assert outcomes["confirmed"] == 5 and outcomes["kept"] == 25 and outcomes["duplicate"] == 1 + 3 + 1 and outcomes["already_processed"] == 1
    assert outcomes["feedback"] == 3 + 5 + 1 and outcomes["malformed"] == 2
    assert report["records"] == sum(outcomes.values()) == 30 + 1 + 1 + 3 + 9 + 3 + 4 + 2 + 9
    assert report["triplets_written"] == 30 and report["versions"] == [2] and report["lag"] == 0
    assert any(line.startswith("enlarge: ") and "records" in line for line in lines)
    # Prometheus: the names the dashboards use
    assert registry.get_sample_value("soay_enlarge_records_total", {"outcome": "kept"}) == 25
    assert registry.get_sample_value("soay_enlarge_triplets_written_total") == 30
    assert registry.get_sample_value("soay_enlarge_lag") == 0
    assert registry.get_sample_value("soay_enlarge_batch_seconds_count") >= 1
    for name in ("soay_enlarge_records_total{outcome=\"mismatch\"} 1.0", "soay_enlarge_lag", "soay_enlarge_batch_seconds_bucket",
                 "soay_enlarge_triplets_written_total"):
        assert name in scraped

    # tool-graph weights: the kept paths and the failed ones, stamped with what they reflect
    graph = get_domain("aminer").library.graph
    weights = load_tool_weights(w.dataset, graph)
    assert weights is not None and weights.paths == 30 + 1  # kept, plus the verified no_combination path; never held-out entities'
    assert (weights.dataset_version, weights.review_lines) == (2, len(reviews))
    assert weights.to_dict() == {**rebuild_weights(graph, [t.solution for t in kept], reviews).to_dict(),
                                 "dataset_version": 2, "review_lines": len(reviews)}
    feedback_lines = (w.dataset / STATE_DIR / FEEDBACK_FILE).read_text().splitlines()
    assert len(feedback_lines) == 9


def test_late_negative_feedback_is_reviewed_and_a_replay_adds_nothing(world):
    w = world
    before = w.log_triplets()
    w.feedback("good-2", "bad")
    w.flush()
    report, _ = run(w)
    assert report["outcomes"] == {"negative_feedback_after_accept": 1} and report["versions"] == []
    late = [r for r in w.reviews() if r["reason"] == "negative_feedback_after_accept"]
    assert [(r["request_id"], r["triplet_id"]) for r in late] == [("good-2", log_triplet_id("good-2"))]
    assert log_triplet_id("good-2") in {t.id for t in w.log_triplets()}  # versions are immutable
    weights = load_tool_weights(w.dataset, get_domain("aminer").library.graph)
    assert weights is not None and weights.review_lines == len(w.reviews())

    # a new group reads the whole log again: nothing new is written, nothing is reviewed twice
    reviews, version = w.reviews(), load_manifest(w.dataset).version
    replay, _ = run(w, group=GROUP + "-replay")
    assert replay["versions"] == [] and replay["triplets_written"] == 0 and "kept" not in replay["outcomes"]
    assert replay["outcomes"]["already_processed"] >= 30 + 12
    assert w.reviews() == reviews and load_manifest(w.dataset).version == version
    assert [t.id for t in w.log_triplets()] == [t.id for t in before]


class CrashBeforeCommit(Enlarger):
    """Dies right after the durable write, before the offsets are committed."""

    def _commit_offsets(self, batch):
        raise RuntimeError("crashed between the dataset write and the offset commit")


def test_a_crash_between_write_and_commit_replays_without_duplicates(world):
    w = world
    rids = [f"crash-{i}" for i in range(10)]
    for rid, t in zip(rids, w.fresh[42:52]):
        w.request(rid, t)
    w.flush()
    version = load_manifest(w.dataset).version
    crashing = CrashBeforeCommit(w.settings, w.dataset, log=lambda _: None)
    with pytest.raises(RuntimeError, match="crashed"):
        try:
            crashing.run(until_idle=2.0)
        finally:
            crashing.close()
    assert load_manifest(w.dataset).version == version + 1  # durable, but its offsets were not committed
    report, _ = run(w)
    assert report["outcomes"] == {"already_processed": 10} and report["versions"] == []
    ids = [t.id for t in w.log_triplets()]
    assert len(ids) == len(set(ids)) and {log_triplet_id(r) for r in rids} <= set(ids)


def test_sigkill_mid_run_loses_nothing_and_duplicates_nothing(world, local_ray, kafka_broker):
    w = world
    keep = {f"kill-{i}": t for i, t in enumerate(w.fresh[52:])}
    reject = {f"killbad-{i}": t for i, t in enumerate(w.fresh[52:])}
    for (k, t), (r, u) in zip(keep.items(), reject.items()):
        w.request(k, t)
        w.request(r, u, query=u.query + " (asked again)", result=["not", "the", "answer"])  # another question: not a duplicate
    w.flush()
    env = {
        **os.environ,
        "RAY_ADDRESS": local_ray.get_runtime_context().gcs_address,
        "SOAY_DATA__ROOT": str(w.settings.data.root), "SOAY_DATA__CORPUS_SIZE": str(TEST_CORPUS_SIZE), "SOAY_DATA__SEED": "7",
        "SOAY_KAFKA__BOOTSTRAP_SERVERS": kafka_broker.bootstrap, "SOAY_KAFKA__REQUESTS_TOPIC": REQUESTS,
        "SOAY_KAFKA__FEEDBACK_TOPIC": FEEDBACK, "SOAY_KAFKA__CONSUMER_GROUP": GROUP, "SOAY_ENLARGE__PROGRESS_SECONDS": "60",
    }
    command = [*SOAY, "enlarge", "--dataset", str(w.dataset), "--workers", "2", "--batch-records", "12", "--json"]
    version = load_manifest(w.dataset).version
    proc = subprocess.Popen([*command, "--until-idle", "30", "--metrics-port", str(free_port())], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while load_manifest(w.dataset).version < version + 2:
            assert proc.poll() is None, "the job ended before it could be killed"
            assert time.monotonic() < deadline, "the job wrote nothing within 90 s"
            time.sleep(0.05)
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        stop(proc)
    assert proc.returncode == -signal.SIGKILL
    done_before = {t.id for t in w.log_triplets()} & {log_triplet_id(k) for k in keep}
    assert 0 < len(done_before) < len(keep)

    restarted = subprocess.run([*command, "--until-idle", "3", "--metrics-port", str(free_port())], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=300)
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    report = json.loads(restarted.stdout.strip().splitlines()[-1])
    assert report["outcomes"].get("kept", 0) == len(keep) - len(done_before)

    ids = [t.id for t in w.log_triplets()]
    assert len(ids) == len(set(ids))  # no triplet twice
    reviewed = Counter(r["request_id"] for r in w.reviews() if r["request_id"].startswith("kill"))
    assert max(reviewed.values()) == 1  # no review twice
    # every request exactly once: the kept ones in the dataset, the wrong ones in review
    assert {log_triplet_id(k) for k in keep} <= set(ids)
    assert set(reviewed) == set(reject)
    assert not {log_triplet_id(r) for r in reject} & set(ids)


def _clarification_questions(settings: Settings, env, run_batch) -> tuple[list[Triplet], list[Triplet], list[Triplet]]:
    """(ambiguous asked without the organisation, not found, ambiguous naming a held-out
    scholar), made by the triplet factory as `soay generate` makes them."""
    data, domain = settings.data, get_domain("aminer")
    factory = TripletFactory(env, domain.combinations, run_batch, data.test_fraction, data.validation_fraction, clarification_share=1.0)
    unqualified, missing, held = [], [], []
    for n, cid in enumerate(("coauthor_names", "person_citation_count", "most_cited_coauthor", "coauthors_in_field")):
        for split in ("train", "test"):
            for t in factory.make(WorkUnit(cid, split, 6, seed=31 + n)).triplets:
                if t.answer["kind"] == NOT_FOUND and split == "train":
                    missing.append(t)
                elif t.answer["kind"] == AMBIGUOUS and split == "train" and "organization" not in t.answer["args"]:
                    unqualified.append(t)
                elif t.answer["kind"] == AMBIGUOUS and split == "test":
                    held.append(t)
        if len(unqualified) >= 2 and len(missing) >= 2 and held:
            break
    return unqualified[:2], missing[:2], held[:1]


def test_served_ambiguous_and_not_found_requests_become_clarification_triplets(world, aminer_env, aminer_db):
    """The service met these questions with a clarification; the job re-runs their programs and
    stores them with the clarification the re-run gives, when its outcome is the logged kind."""
    w = world
    searches = set(fuzzy_apis(get_domain("aminer").spec))
    with sandbox_for("aminer", aminer_db, w.settings.sandbox) as sandbox:
        unqualified, missing, held = _clarification_questions(w.settings, aminer_env, sandbox.run_batch)
        assert len(unqualified) == 2 and len(missing) == 2 and len(held) == 1
        served = {f"amb-{i}": t for i, t in enumerate(unqualified)} | {f"nf-{i}": t for i, t in enumerate(missing)}
        served |= {"amb-held": held[0], "nf-as-amb": missing[1], "answer-as-nf": w.fresh[60]}
        runs = dict(zip(served, sandbox.run_batch([t.code for t in served.values()])))
        for rid, t in served.items():  # as serving logs them: the run's result or error, and what the answer stage saw
            served_run = runs[rid]
            kind = {"nf-as-amb": AMBIGUOUS, "answer-as-nf": NOT_FOUND}.get(rid, t.answer["kind"] if is_clarification(t.answer) else "answer")
            query = t.query + " (again)" if rid in ("nf-as-amb", "answer-as-nf") else t.query  # not a duplicate of another record
            w.request(rid, t, query=query, status="ok" if served_run.ok else "execution_error", result=served_run.result,
                      error=served_run.error, kind=kind)
        w.flush()
        for t in unqualified:  # what serving ran: the name alone (unmask_code left the organisation out)
            assert "organization=" not in t.code and "organization" in t.combination.inputs
        assert not runs["nf-0"].ok or runs["nf-0"].result in (None, [], "")

        report, lines = run(w)
        kept = {t.id: t for t in w.log_triplets()}
        for rid in [f"amb-{i}" for i in range(2)] + [f"nf-{i}" for i in range(2)]:
            t, made = served[rid], kept[log_triplet_id(rid)]
            assert is_clarification(made.answer) and made.answer["kind"] == t.answer["kind"]
            # the stored answer is the factory's ground truth: same search, same namesakes
            assert {k: made.answer[k] for k in ("kind", "api", "searched", "candidates") if k in t.answer} == {
                k: t.answer[k] for k in ("kind", "api", "searched", "candidates") if k in t.answer}
            assert (made.code, made.query, made.combination, made.inputs, made.split, made.code_source) == (
                t.code, t.query, t.combination, t.inputs, "train", "log")
            if made.answer["kind"] == AMBIGUOUS:
                assert made.entity_id == t.entity_id and group_split(made.answer["candidates"], w.settings.data.test_fraction,
                                                                      w.settings.data.validation_fraction) == TRAIN
        fresh_runs = sandbox.run_batch([kept[log_triplet_id(r)].code for r in ("amb-0", "amb-1", "nf-0", "nf-1")])
        for rid, fresh in zip(("amb-0", "amb-1", "nf-0", "nf-1"), fresh_runs):  # a fresh run gives the stored clarification
            assert clarification_matches(kept[log_triplet_id(rid)].answer, analyse(fresh.trace, fresh.ok, fresh.result, searches)), rid

    assert not {log_triplet_id(r) for r in ("amb-held", "nf-as-amb", "answer-as-nf")} & set(kept)
    reasons = {r["request_id"]: r["reason"] for r in w.reviews() if r["request_id"] in ("amb-held", "nf-as-amb", "answer-as-nf")}
    assert reasons == {"amb-held": "held_out_candidates", "nf-as-amb": "outcome_mismatch", "answer-as-nf": "outcome_mismatch"}
    assert report["outcomes"] == {"kept_ambiguous": 2, "kept_not_found": 2, "held_out_candidates": 1, "outcome_mismatch": 2}
    assert report["triplets_written"] == 4
    assert any("clarifications 4" in line for line in lines)


def _wrong_reading(world: World, t: Triplet) -> Triplet:
    """A triplet of another solution: what the planner took instead of `t`'s."""
    return next(u for u in world.existing if u.solution != t.solution and u.combination.id != t.combination.id)


def test_an_unjudged_unsure_plan_waits_and_a_pick_makes_the_label(world):
    """A wrong plan below the trust bar is not kept, though its program verifies; a person's pick
    among the logged alternatives becomes the triplet of the picked reading, in the same batch or
    when the pick comes after the plan went to review."""
    w = world
    right = w.fresh[61:64]
    for i, t in enumerate(right):
        wrong = _wrong_reading(w, t)
        w.request(f"unsure-{i}", t, query=t.query + " (unsure)", solution=wrong.solution, code=wrong.code, result=wrong.answer, confidence=0.41,
                  alternatives=[Alternative(combination=wrong.combination.id, solution=wrong.solution, code=wrong.code, probability=0.2),
                                Alternative(combination=t.combination.id, solution=t.solution, code=t.code, probability=0.3)])
    w.feedback("unsure-0", "bad", choice=right[0].combination.id)  # picked with the answer
    w.flush()
    report, _ = run(w)
    assert report["outcomes"] == {"corrected": 1, "low_confidence": 2, "feedback": 1}
    held = {r["request_id"]: r for r in w.reviews() if r["reason"] == "low_confidence"}
    assert set(held) >= {"unsure-1", "unsure-2"} and held["unsure-1"]["confidence"] == 0.41 and held["unsure-1"]["bar"] == 0.9
    kept = {t.id: t for t in w.log_triplets()}
    made = kept[log_triplet_id("unsure-0")]
    assert (made.query, made.solution, made.code, made.combination.id) == (right[0].query + " (unsure)", right[0].solution, right[0].code,
                                                                           right[0].combination.id)
    assert log_triplet_id("unsure-1") not in kept and log_triplet_id("unsure-2") not in kept

    w.feedback("unsure-1", "bad", choice=right[1].combination.id)  # a pick after the plan went to review
    w.feedback("unsure-2", "bad", choice="no_such_reading")
    w.flush()
    report, _ = run(w)
    assert report["outcomes"] == {"corrected": 1, "unknown_choice": 1, "feedback": 2}
    made = {t.id: t for t in w.log_triplets()}[log_triplet_id("unsure-1")]
    assert (made.solution, made.combination.id) == (right[1].solution, right[1].combination.id)
    judged = [json.loads(line) for line in (w.dataset / STATE_DIR / JUDGED_FILE).read_text().splitlines()]
    assert {"unsure-0", "unsure-1", "unsure-2"} <= {j["request_id"] for j in judged if not j["right"]}


def test_judged_traffic_raises_the_trust_bar(world):
    """Enough judged plans that were wrong even at high confidence make the traffic's bar refuse
    an unjudged plan the model's own bar would have trusted."""
    w = world
    pool = w.fresh[64:]
    assert len(pool) >= 60
    for i, t in enumerate(pool[:55]):  # 55 judged, at 0.95; one in five wrong
        w.request(f"judged-{i}", t, query=t.query + " (judged)", confidence=0.95)
        w.feedback(f"judged-{i}", "bad" if i % 5 == 0 else "good")
    w.request("trusting", pool[55], query=pool[55].query + " (unjudged)", confidence=0.97)
    w.flush()
    report, _ = run(w)
    reasons = {r["request_id"]: r for r in w.reviews() if r["request_id"] == "trusting"}
    assert reasons["trusting"]["reason"] == "low_confidence" and reasons["trusting"].get("bar") is None  # no bar: nothing is trusted
    assert log_triplet_id("trusting") not in {t.id for t in w.log_triplets()}
    assert report["outcomes"]["negative_feedback"] == 11
