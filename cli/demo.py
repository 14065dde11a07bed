"""`soay demo`: the main job end to end on the embedded defaults, for a person's first run.

corpus -> solution library -> verified triplets (on Ray) -> the model (heads on the pretrained
base, or the from-scratch recipe on Ray Train) -> SoAyEval -> retriever index -> the Serve
application -> sample questions -> the web page's address. Each stage is a job of training/,
retriever/ or serving/; this module only orders them and prints what a person reads. The
libraries' own start-up output goes to log files (cluster/library_logs.py), one line per
component on the console.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import typer

from cli.common import print_generation, stop_on_signal
from soay.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DEMO_EVAL_CASES = 240
"""Cases of the demo's evaluation: enough for every hop and language, short enough for the demo's budget."""
PARAPHRASES = ROOT / "benchmarks" / "paraphrases.yaml"
OUT_OF_SCOPE_BENCH = ROOT / "benchmarks" / "out_of_scope.yaml"


def run_demo(s: Settings, recipe: Path, keep_serving: bool, root_given: bool = False) -> None:
    """The whole demo on settings `s`; `root_given`: the data root is not the configured one, so
    the closing `soay serve` line names it."""
    from cluster.library_logs import route_library_output

    route_library_output(s)  # first: the imports below read some of its switches
    import ray

    from soay.domains import get_domain
    from training.evaluate import run_eval
    from training.fit_heads import fit_heads, is_heads_recipe, load_heads_config
    from training.generate import generate
    from training.sft import load_config
    from training.train_job import run_sft

    started = time.perf_counter()
    d = get_domain(s.data.domain)
    typer.echo(f"== {d.name}: {len(d.library)} solutions, {len(d.combinations)} combinations")
    report = generate(s, overwrite=True)
    print_generation(report)
    print_samples(report.dataset_path)

    run_dir = s.data.root / s.data.domain / "runs" / "demo"
    ray.shutdown()  # the cores go to the base model's engine, vLLM and the sandbox
    if is_heads_recipe(recipe):
        typer.echo(f"== training the planner and coder heads on the pretrained base ({s.base_model.source}, {recipe.name})")
        record = fit_heads(load_heads_config(recipe), s, report.dataset_path, run_dir)
        metrics = record["metrics"]
        typer.echo(f"trained in {record['wall_seconds']} s ({record['examples']['questions']} questions, {record['examples']['out_of_scope']} out of scope, "
                   f"{metrics['questions_per_s']} questions/s; training accuracy {metrics['train_accuracy']:.3f}) -> {record['checkpoint']}")
    else:
        from cluster.ray_runtime import init_ray

        typer.echo(f"== training the from-scratch model ({recipe}) on Ray Train")
        init_ray(s.ray, worker_output=True)  # the training workers print their progress
        record = run_sft(load_config(recipe, ["resume=false"]), report.dataset_path, run_dir)
        typer.echo(f"trained in {record['wall_seconds']} s: loss {record['metrics']['loss']:.3f} -> {record['checkpoint']}")
        ray.shutdown()

    typer.echo(f"== SoAyEval on {DEMO_EVAL_CASES} cases spread over the held-out test split and the hand-written paraphrases "
               "(the whole split: benchmarks/model_bench.py)")
    evaluation = run_eval(Path(record["checkpoint"]), report.dataset_path, s.data.corpus_path(), s.data.domain, run_dir / "eval",
                          limit=DEMO_EVAL_CASES, paraphrases=PARAPHRASES, out_of_scope=OUT_OF_SCOPE_BENCH)
    typer.echo((run_dir / "eval" / "eval.md").read_text())

    s = s.model_copy(update={"serve": s.serve.model_copy(update={"model_dir": Path(record["checkpoint"])})})
    serve_line = f"{f'SOAY_DATA__ROOT={s.data.root} ' if root_given else ''}soay serve --model {record['checkpoint']}"
    serve_samples(s, report.dataset_path, keep_serving, serve_line,
                  lambda: f"== demo finished in {time.perf_counter() - started:.0f} s (Score on held-out phrasings "
                          f"{evaluation['headline']['held_out_phrasings']['all']}, on hand-written paraphrases "
                          f"{(evaluation['headline']['paraphrases'] or {}).get('all')}, on all cases {evaluation['score']})")


def serve_samples(s: Settings, dataset: Path, keep_serving: bool, serve_line: str, finished: Callable[[], str]) -> None:
    """Index the exemplars, start the Serve application, answer sample questions, say where the
    page is, then shut it down (with `keep_serving`, on Ctrl-C or SIGTERM): a person's next step
    after the demo is to open the page and ask."""
    import httpx
    import ray
    from ray import serve

    from cluster.library_logs import announce_deployments, starting, stopping
    from cluster.ray_runtime import init_ray, serve_logs_elsewhere
    from retriever.build import build_index
    from soay.dataset import iter_triplets

    with starting():  # Ray Serve LLM's import makes every library log INFO lines as JSON (faiss's as it loads)
        from serving.app import deploy

    typer.echo("== retriever index (FAISS over masked exemplars) on Ray")
    if not (s.ray.address or os.environ.get("RAY_ADDRESS")):
        # the engines and stages reserve logical CPUs: more than a small machine counts
        s = s.model_copy(update={"ray": s.ray.model_copy(update={"num_cpus": max(8, os.cpu_count() or 1)})})
    init_ray(s.ray)
    built = build_index(s, dataset=dataset, show_progress=False)
    typer.echo(f"indexed {sum(built.counts.values())} documents in {built.seconds:.1f} s")
    typer.echo("== serving: Ray Serve application (retriever, vLLM planner and coder, sandbox executor)")
    try:
        with announce_deployments():
            url = deploy(s)
        logs = serve_logs_elsewhere(s.ray)
        typer.echo(f"serving at {url}" + (f"; replica logs in {logs}" if logs else ""))
        samples: dict[tuple[int, str], str] = {}
        for t in iter_triplets(dataset, split="test"):
            samples.setdefault((t.hops, t.language), t.query)
        for (hops, language), question in sorted(samples.items()):
            response = httpx.post(f"{url}/v1/ask", json={"query": question}, timeout=s.serve.request_timeout_s + 10)
            record = response.json()
            if response.status_code != 200:
                typer.echo(f"[{hops}-hop, {language}] {question}\n  error {response.status_code}: {record.get('error')}")
                continue
            timings = ", ".join(f"{k} {v:.2f}s" for k, v in record["timings"].items())
            typer.echo(f"[{hops}-hop, {language}] {question}\n  solution: {record['solution']}\n  answer: {record['answer']}\n  ({timings})")
        typer.echo(finished())
        if keep_serving:
            typer.echo(f"== the web page: {url}/ (ask, library, live); serving until Ctrl-C")
            stop_on_signal().wait()
        else:
            typer.echo(f"== the web page was at {url}/ while the demo served; the service stops with the demo. "
                       f"Keep it running with `soay demo --serve`, or start it again with\n  {serve_line}\nand open {url}/")
    finally:
        with stopping():
            serve.shutdown()
            ray.shutdown()


def print_samples(dataset: Path) -> None:
    """One test triplet per hop count, the middle one in Chinese."""
    from soay.dataset import iter_triplets

    typer.echo("== sample test triplets")
    shown: set[int] = set()
    for t in iter_triplets(dataset, split="test"):
        if t.hops not in shown and (t.language == "zh") == (len(shown) == 1):
            shown.add(t.hops)
            typer.echo(f"[{t.hops}-hop, {t.language}] {t.query}\n  solution: {t.solution}\n  answer: {json.dumps(t.answer, ensure_ascii=False)[:200]}")
        if len(shown) == 3:
            break
