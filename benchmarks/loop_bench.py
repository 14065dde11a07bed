"""The learning loop, measured round by round: simulated users ask, judge and pick; the stack
enlarges its dataset from their log and retrains.

    .venv/bin/python benchmarks/loop_bench.py --model data/aminer/runs/d/model [--rounds 3] [--questions 500]

Users ask in a wording distribution the model was not trained on: the open-world validation
questions (benchmarks/open_world/validation.jsonl), split by question into two disjoint halves.
The first half's wordings are the traffic: each is filled again with a scholar (or paper) of the
corpus's training split, in the question's language, and its gold answer is the code builder's
program of the gold intent with those values, run on the corpus. The second half is held out: after
each round the promoted model answers it as benchmarks/open_world_bench.py does (its scholars
inserted in the corpus copy).

Each round:
1. the promoted model plans each question as the service does (soay/heads.py: the planner's
   reading, its probability, its next-best readings with their programs, serving/app.py), and the
   sandbox runs the program;
2. a share of the users (`--feedback`) judge their answer from the gold: "good" when it is right;
   otherwise "bad", and, when one of the offered readings (run, as the page runs them) answers
   right, they pick it (`choice`);
3. the request and feedback records go to the real broker (Tansu on loopback) and `soay enlarge`
   (training/enlarge.py) turns them into triplets: label precision is the share of the round's new
   triplets whose reading is the question's gold intent and whose program passes the gold
   arguments;
4. `soay retrain` (training/retrain.py, forced): the heads refitted on the enlarged dataset, the
   gate on the synthetic test split and on the held-out slice of person-labelled questions;
5. the held-out half is answered by whichever model is promoted now.

Writes benchmarks/results/loop.json: {"start": {...}, "rounds": [{"questions", "label_precision",
"heldout_solution", "test_score", ...}]} and prints a table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from kafka import KafkaProducer  # noqa: E402

from benchmarks.open_world_bench import (  # noqa: E402
    SET_DIR, Gold, Question, _is_group, evaluate_model, gold_program, judge_gold, library_literals, literal_arguments,
    load_questions, prepare_corpus, run_programs,
)
from cluster.broker import ensure_topics, start_broker  # noqa: E402
from soay.agent import finish_code  # noqa: E402
from soay.answers import answers_match  # noqa: E402
from soay.dataset import iter_triplets, load_manifest  # noqa: E402
from soay.domains import Domain, get_domain  # noqa: E402
from soay.environment.insert_entities import load_entities  # noqa: E402
from soay.heads import OUT_OF_SCOPE, Heads  # noqa: E402
from soay.log_triplets import LOG_SOURCE, log_triplet_id  # noqa: E402
from soay.logs import Alternative, Feedback, RequestLog  # noqa: E402
from soay.outcomes import analyse, fuzzy_apis  # noqa: E402
from soay.prompts import question_text  # noqa: E402
from soay.settings import Settings  # noqa: E402
from soay.splits import TRAIN, entity_split  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "loop.json"
FILLABLE = {"name", "organization", "interest", "publication_info"}
ALTERNATIVES = 3
REQUESTS, FEEDBACK = "loop.requests", "loop.feedback"


def progress(message: str) -> None:
    print(f"[loop] {message}", flush=True)


# ------------------------------------------------------------------------------ traffic


@dataclass
class Wording:
    """A traffic question's wording: the open-world question with its values as slots."""

    question: Question
    text: str


@dataclass
class Asked:
    """One simulated user's question and its gold."""

    request_id: str
    question: Question
    gold: Gold
    entity: str


def wording(q: Question, domain: Domain) -> Wording | None:
    """The question's wording with `{name}`-style slots, or None when it cannot be filled again
    (no answer expected, a value the corpus has no counterpart for, a value not written verbatim)."""
    if q.expected_kind != "answer" or q.intent not in domain.combinations.by_id or not q.arguments or set(q.arguments) - FILLABLE:
        return None
    text = q.question.replace("{", "{{").replace("}", "}}")
    for key, value in sorted(q.arguments.items(), key=lambda kv: -len(kv[1])):
        if value not in text:
            return None
        text = text.replace(value, "{" + key + "}")
    return Wording(q, text)


def split_questions(questions: list[Question], heldout_share: float) -> tuple[list[Question], list[Question]]:
    """(traffic, held out), disjoint by question, the same on every run."""
    def bucket(q: Question) -> float:
        return int.from_bytes(hashlib.blake2b(q.id.encode(), digest_size=4).digest(), "big") / 2**32

    return [q for q in questions if bucket(q) >= heldout_share], [q for q in questions if bucket(q) < heldout_share]


class Fillers:
    """Scholars and papers of the corpus's training split, as the values a question gives."""

    def __init__(self, corpus: Path, settings: Settings, seed: int) -> None:
        self.db = sqlite3.connect(f"{corpus.resolve().as_uri()}?mode=ro", uri=True)
        self.rng = random.Random(seed)
        d = settings.data
        rows = self.db.execute(
            "SELECT p.id, p.pid, p.name, p.name_zh, o.name, o.name_zh, p.interests FROM person p JOIN organization o ON o.id = p.org_id "
            "WHERE p.num_pubs >= 2 AND p.interests != '[]'").fetchall()
        self.people = [r for r in rows if entity_split(r[1], d.test_fraction, d.validation_fraction) == TRAIN]
        self.fields_zh = dict(self.db.execute("SELECT name, name_zh FROM field WHERE name_zh != ''").fetchall())

    def values(self, keys: set[str], language: str) -> tuple[dict[str, str], str]:
        """Values for the slots, and the entity they are about (the scholar's or the paper's id)."""
        pk, pid, name, name_zh, org, org_zh, interests = self.rng.choice(self.people)
        zh = language == "zh"
        interest = self.rng.choice(json.loads(interests))
        values = {"name": (name_zh or name) if zh else name, "organization": (org_zh or org) if zh else org,
                  "interest": self.fields_zh.get(interest, interest) if zh else interest}
        entity = pid
        if "publication_info" in keys:
            title, pub = self.rng.choice(self.db.execute(
                "SELECT p.title, p.pid FROM publication p JOIN authorship a ON a.pub_id = p.id WHERE a.person_id = ?", (pk,)).fetchall())
            values["publication_info"], entity = title, pub
        return {k: values[k] for k in keys}, entity


def traffic(wordings: list[Wording], n: int, fillers: Fillers, round_no: int, domain: Domain, sandbox: Any) -> list[Asked]:
    """`n` questions with a well-defined gold answer: filled wordings, in turn, whose gold program
    answers about the entity the values were drawn from."""
    fuzzy = frozenset(fuzzy_apis(domain.spec))
    asked: list[Asked] = []
    attempt = 0
    while len(asked) < n:
        batch: list[tuple[Question, str, str]] = []
        for _ in range(2 * (n - len(asked))):
            w = wordings[attempt % len(wordings)]
            attempt += 1
            values, entity = fillers.values(set(w.question.arguments), w.question.language)
            q = w.question.model_copy(update={"id": f"r{round_no}-{attempt}", "question": w.text.format_map(values),
                                              "arguments": values, "scholar": None, "publication": None})
            program, problem = gold_program(q, domain)
            if program and not problem:
                batch.append((q, program, entity))
        runs = sandbox.run_batch([p for _, p, _ in batch])
        for (q, program, entity), run in zip(batch, runs):
            gold = Gold(program, ok=run.ok, result=run.result, outcome=analyse(run.trace, run.ok, run.result, fuzzy).kind)
            first = next((c for c in run.trace if c.get("api") in fuzzy), None)
            items = (first or {}).get("items") or []
            top = items[0] if items and isinstance(items[0], dict) else {}
            about = top.get("pub_id") or top.get("person_id")
            group = _is_group(domain, q.intent)
            if gold.ok and gold.outcome == "answer" and gold.result not in (None, [], "") and (group or about == entity):
                asked.append(Asked(f"{q.id}", q, gold, entity))
            if len(asked) == n:
                break
    return asked


# ------------------------------------------------------------------------------ the served path


class Planner:
    """The heads model as the ingress plans with it: features, reading, probability, alternatives.
    Each call starts the base's pooling engine and stops it (vLLM keeps one offline engine per
    process at a time: the retraining's and SoAyEval's start in between)."""

    def plan(self, model: Path, queries: list[str], domain: Domain) -> list[dict[str, Any]]:
        heads = Heads.load(model)
        features = features_of(model, heads, queries)
        masked = [question_text(q, heads.vocabulary) for q in queries]
        plans = heads.plan(features, masked)
        ranked = heads.ranked(features, ALTERNATIVES + 1, masked)
        out = []
        for i, (q, (combination, p)) in enumerate(zip(queries, plans)):
            alternatives = [(c, pr) for c, pr in ranked[i] if c != combination][:ALTERNATIVES]
            chosen = [combination] if combination != OUT_OF_SCOPE else []
            programs = heads.programs(features[i : i + 1].repeat(len(chosen) + len(alternatives), axis=0), chosen + [c for c, _ in alternatives])
            code = finish_code(programs[0][0], q, domain.spec, heads.vocabulary) if chosen and programs[0] else ""
            alts = [Alternative(combination=c, solution=solution_of(domain, c), code=finish_code(found[0], q, domain.spec, heads.vocabulary),
                                probability=round(pr, 4))
                    for (c, pr), found in zip(alternatives, programs[len(chosen):]) if found]
            out.append({"combination": combination, "confidence": round(p, 4), "code": code, "alternatives": alts,
                        "needed": heads.trust_threshold})
        return out

    def predict(self, model: Path, queries: list[str], domain: Domain) -> tuple[list[tuple[str, str, str]], frozenset[str]]:
        """The open-world bench's predictor (training/evaluate.py predict_with_heads)."""
        from training.evaluate import predict_with_heads

        return predict_with_heads(model, queries, domain)


def features_of(model: Path, heads: Heads, queries: list[str]) -> Any:
    from soay.question_encoder import BASE_LINK
    from training.offline import encode, encoder, sentence_encoder

    with encoder(model / BASE_LINK) as llm:
        return encode(llm, queries, 64, desc="features", vocabulary=heads.vocabulary, sentences=sentence_encoder(heads.sentence_encoder))


def solution_of(domain: Domain, combination: str) -> str:
    return "" if combination == OUT_OF_SCOPE else str(domain.combinations.solution(domain.combinations.by_id[combination]))


def right(asked: Asked, combination: str, code: str, run: Any, domain: Domain, fixed: frozenset[str]) -> bool:
    """Whether an answer is what the user asked: the gold reading, the gold values, the gold result."""
    return bool(code) and run.ok and label_right(asked, combination, code, domain, fixed) and answers_match(asked.gold.result, run.result)


def label_right(asked: Asked, combination: str, code: str, domain: Domain, fixed: frozenset[str]) -> bool:
    """Whether a training triplet made from this question teaches the right thing: its reading is
    the gold intent and its program passes the gold values."""
    literals = literal_arguments(code, domain.spec.api_names, fixed - set(asked.question.arguments.values()))
    return combination == asked.question.intent and literals == {v.strip() for v in asked.question.arguments.values()}


# ------------------------------------------------------------------------------ the bench


def calibrate_start(model: Path, dataset: Path) -> dict[str, Any]:
    """Give a model fitted before trust bars existed its bar, from the dataset's validation split
    (as `soay train` now does when it fits)."""
    from training.fit_heads import calibrate

    heads = Heads.load(model)
    validation = list(iter_triplets(dataset, split="validation"))
    x = features_of(model, heads, [t.query for t in validation])
    trust = calibrate(heads, x, [t.combination.id for t in validation], 0.99)
    heads.save(model)
    return trust


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    from training.enlarge import run_enlargement
    from training.generate import sandbox_for
    from training.retrain import current_model, retrain, score

    domain = get_domain("aminer")
    defaults = Settings()
    work = Path(args.work).resolve()
    if work.exists():
        shutil.rmtree(work)
    data = work / "data"
    (data / "aminer" / "runs").mkdir(parents=True)
    shutil.copytree(defaults.data.dataset_path(), data / "aminer" / "dataset")
    start = data / "aminer" / "runs" / "start" / "model"
    shutil.copytree(Path(args.model).resolve(), start, symlinks=True)
    corpus = data / "aminer" / "corpus.sqlite"
    inserted, check = prepare_corpus(defaults.data.corpus_path(), load_entities(SET_DIR / "entities.yaml"), corpus)
    progress(f"work dir {work}: dataset copied, corpus with {check['scholars']} open-world scholars inserted")
    broker = start_broker(port=args.port)
    try:
        settings = Settings(
            data={"root": data},
            base_model={"cache_dir": defaults.base_model.cache_path(defaults.data)},  # the converted base, not a second conversion
            serve={"model_dir": start},
            kafka={"bootstrap_servers": broker.bootstrap, "requests_topic": REQUESTS, "feedback_topic": FEEDBACK, "partitions": 1},
            enlarge={"workers": 0, "metrics_port": None, "batch_records": 50_000, "progress_seconds": 30.0},
            retrain={"min_new_triplets": 1, "swap": False, "eval_limit": args.eval_limit,
                     "overrides": [f"user_weight={args.user_weight}"]},
        )
        ensure_topics(broker.bootstrap, [REQUESTS, FEEDBACK], 1)
        questions = load_questions(SET_DIR / "validation.jsonl")
        traffic_questions, heldout = split_questions(questions, args.heldout_share)
        wordings = [w for q in traffic_questions if (w := wording(q, domain)) is not None]
        progress(f"{len(questions)} validation questions: {len(wordings)} traffic wordings (of {len(traffic_questions)}), "
                 f"{len(heldout)} held out")
        fixed = library_literals(domain)
        fuzzy = frozenset(fuzzy_apis(domain.spec))
        fillers = Fillers(corpus, settings, args.seed)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        result: dict[str, Any] = {"rounds": []}
        with sandbox_for(domain, corpus, settings.sandbox.model_copy(update={"api_backend": "inprocess"})) as sandbox:
            planner = Planner()
            if Heads.load(start).trust_threshold is None:
                trust = calibrate_start(start, data / "aminer" / "dataset")
                progress(f"start model calibrated on validation: trust bar {trust['threshold']} keeps {trust['trusted_share']} "
                         f"at precision {trust['trusted_precision']}")
            built = [gold_program(q, domain) for q in heldout]
            gold_runs = run_programs(sandbox, [p for p, _ in built], "held-out gold")
            golds = [judge_gold(q, Gold(p, problem=problem), r, inserted, fuzzy, _is_group(domain, q.intent)) if p else Gold(p, problem=problem)
                     for q, (p, problem), r in zip(heldout, built, gold_runs)]

            def heldout_entry(model: Path, name: str) -> dict[str, Any]:
                entry, _ = evaluate_model(name, model, heldout, golds, sandbox, domain, planner.predict)
                both = [entry[lang] for lang in ("en", "zh")]
                n = sum(e["n"] for e in both)
                return {"solution": round(sum(e["solution"] * e["n"] for e in both) / n, 2),
                        "answer": round(sum(e["answer"] * e["n"] for e in both) / n, 2), "n": n,
                        **{lang: entry[lang] for lang in ("en", "zh")}}

            start_score, _ = score(start, data / "aminer" / "dataset", load_manifest(data / "aminer" / "dataset").version, settings, progress)
            result["start"] = {"model": str(args.model), "heldout": heldout_entry(start, "start"), "test_score": start_score}
            progress(f"start: held-out solution {result['start']['heldout']['solution']} %, test Score {start_score}")
            for round_no in range(1, args.rounds + 1):
                result["rounds"].append(one_round(round_no, args, settings, domain, wordings, fillers, planner, sandbox, producer,
                                                  fixed, fuzzy, heldout_entry, run_enlargement, retrain, current_model))
                write(result, args)
        producer.close()
    finally:
        broker.stop()
    return result


def one_round(round_no: int, args: argparse.Namespace, settings: Settings, domain: Domain, wordings: list[Wording], fillers: Fillers,
              planner: Planner, sandbox: Any, producer: KafkaProducer, fixed: frozenset[str], fuzzy: frozenset[str],
              heldout_entry: Any, run_enlargement: Any, retrain: Any, current_model: Any) -> dict[str, Any]:
    started = time.perf_counter()
    model = Path(current_model(settings).model)
    asked = traffic(wordings, args.questions, fillers, round_no, domain, sandbox)
    plans = planner.plan(model, [a.question.question for a in asked], domain)
    runs = run_programs(sandbox, [p["code"] for p in plans], f"round {round_no}")
    rng = random.Random(args.seed * 1000 + round_no)
    by_id = {a.request_id: a for a in asked}
    verdicts = {"good": 0, "bad": 0, "picked": 0, "none": 0}
    served_right = 0
    for a, plan, run in zip(asked, plans, runs):
        outcome = analyse(run.trace, run.ok, run.result, fuzzy).kind if plan["code"] else "answer"
        record = RequestLog(
            request_id=a.request_id, endpoint="/v1/ask", query=a.question.question, language=a.question.language,
            solution=solution_of(domain, plan["combination"]), code=plan["code"], result=run.result,
            status="out_of_scope" if plan["combination"] == OUT_OF_SCOPE else ("ok" if run.ok else "execution_error"),
            error=run.error, error_type=run.error_type, kind=outcome, confidence=plan["confidence"], confidence_needed=plan["needed"],
            alternatives=plan["alternatives"], models={"soay": str(model)},
        )
        producer.send(REQUESTS, key=a.request_id.encode(), value=record.encode())
        is_right = right(a, plan["combination"], plan["code"], run, domain, fixed)
        served_right += is_right
        if rng.random() >= args.feedback:
            verdicts["none"] += 1
            continue
        if is_right:
            producer.send(FEEDBACK, key=a.request_id.encode(), value=Feedback(request_id=a.request_id, verdict="good").encode())
            verdicts["good"] += 1
            continue
        # "bad": the page runs the offered readings; the person picks the one that answers right
        tried = sandbox.run_batch([alt.code for alt in plan["alternatives"]]) if plan["alternatives"] else []
        pick = next((alt.combination for alt, alt_run in zip(plan["alternatives"], tried)
                     if right(a, alt.combination, alt.code, alt_run, domain, fixed)), None)
        producer.send(FEEDBACK, key=a.request_id.encode(), value=Feedback(request_id=a.request_id, verdict="bad", choice=pick).encode())
        verdicts["bad"] += 1
        verdicts["picked"] += pick is not None
    producer.flush(timeout=60)
    asked_s = time.perf_counter() - started
    dataset = settings.data.dataset_path()
    before = {t.id for t in iter_triplets(dataset) if t.code_source == LOG_SOURCE}
    report = run_enlargement(settings, until_idle=3.0, log=progress)
    new = [t for t in iter_triplets(dataset) if t.code_source == LOG_SOURCE and t.id not in before]
    ids = {log_triplet_id(rid): rid for rid in by_id}
    judged = [label_right(by_id[ids[t.id]], t.combination.id, t.code, domain, fixed) for t in new]
    precision = round(100 * sum(judged) / len(judged), 2) if judged else None
    progress(f"round {round_no}: {len(asked)} asked ({100 * served_right / len(asked):.1f} % answered right), verdicts {verdicts}; "
             f"enlarge {report.outcomes}; {len(new)} new triplets, label precision {precision} %")
    attempt = retrain(settings, force=True, log=progress)
    promoted_now = Path(current_model(settings).model)
    held = heldout_entry(promoted_now, f"round-{round_no}")
    entry = {
        "round": round_no, "questions": len(asked), "served_right": round(100 * served_right / len(asked), 2), "verdicts": verdicts,
        "enlarge": report.outcomes, "labels": len(new), "label_precision": precision,
        "labels_by_outcome": {k: report.outcomes.get(k, 0) for k in ("kept", "confirmed", "corrected")},
        "wrong_labels": [{"query": by_id[ids[t.id]].question.question, "label": t.combination.id, "gold": by_id[ids[t.id]].question.intent}
                         for t, ok in zip(new, judged) if not ok][:20],
        "decision": attempt["decision"], "gate": attempt.get("gate"),
        "candidate_score": attempt["candidate"]["score"], "promoted_score": attempt["promoted_before"]["score"],
        "test_score": attempt["candidate"]["score"] if attempt["decision"] == "promoted" else attempt["promoted_before"]["score"],
        "logged_accuracy": {"candidate": attempt["candidate"].get("logged_accuracy"), "promoted": attempt["promoted_before"].get("logged_accuracy")},
        "heldout_solution": held["solution"], "heldout": held, "model": str(promoted_now),
        "seconds": {"ask": round(asked_s, 1), "round": round(time.perf_counter() - started, 1)},
    }
    progress(f"round {round_no}: {attempt['decision']}; held-out solution {held['solution']} %, test Score {entry['test_score']}")
    return entry


def write(result: dict[str, Any], args: argparse.Namespace) -> None:
    result["meta"] = {"command": " ".join(sys.argv), "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                      "platform": platform.platform()}, "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                      "feedback_share": args.feedback, "user_weight": args.user_weight, "heldout_share": args.heldout_share}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the promoted model to start from (a heads model)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--questions", type=int, default=500, help="questions asked per round")
    parser.add_argument("--feedback", type=float, default=0.5, help="share of users who judge their answer")
    parser.add_argument("--heldout-share", type=float, default=1 / 3, help="share of the validation questions held out")
    parser.add_argument("--user-weight", type=float, default=3.0, help="weight of a user's question in the planner's fit")
    parser.add_argument("--eval-limit", type=int, default=240, help="test cases of the gate's SoAyEval (the first N, as `soay demo` scores)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--port", type=int, default=19392, help="the bench's own broker port")
    parser.add_argument("--work", default="/tmp/soay-loop-bench", help="work directory (wiped first)")
    parser.add_argument("--out", default=str(OUT))
    result = run_bench(parser.parse_args(argv))
    print("round | questions | label precision | held-out solution | test Score | decision")
    print(f"start | - | - | {result['start']['heldout']['solution']} | {result['start']['test_score']} | -")
    for r in result["rounds"]:
        print(f"{r['round']} | {r['questions']} | {r['label_precision']} | {r['heldout_solution']} | {r['test_score']} | {r['decision']}")
    return result


if __name__ == "__main__":
    main()
