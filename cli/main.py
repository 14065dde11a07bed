"""The `soay` command: one entry point for every job of the stack.

Each subcommand reads the one settings object (file + environment + flags), then calls a thin
job function in training/, serving/ or cluster/. Errors a person can cause (a missing file, a
bad value, a port in use) end with a one-line message and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import ValidationError

from cli.common import print_generation, stop_on_signal
from soay.settings import CONFIG_ENV, Settings
from soay.heads import HEADS_FILE, is_model_dir
from training.base_model import BaseModelError

if TYPE_CHECKING:
    from serving.health import HealthServer

app = typer.Typer(
    name="soay",
    help="SoAy stack: API environment, verified triplets, training and serving of solution-based API agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
corpus_app = typer.Typer(help="Build and inspect API-environment corpora.", no_args_is_help=True)
api_app = typer.Typer(help="The HTTP clone of a domain's APIs.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
app.add_typer(api_app, name="api")
spec_app = typer.Typer(help="Bring your own API: import OpenAPI or GraphQL, generate triplets through it.", no_args_is_help=True)
app.add_typer(spec_app, name="spec")
keys_app = typer.Typer(help="API keys of the service (stored as digests; needed once any exists).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "configs" / "heads.yaml"
"""The CPU default: heads on the pretrained base. configs/sft/cpu_full.yaml is the from-scratch
recipe kept for comparison; configs/sft/lora.yaml and gpu_zero3.yaml fine-tune a base on Ray Train."""
USER_ERRORS = (ValueError, KeyError, FileNotFoundError, FileExistsError, ValidationError, OSError, BaseModelError)


def fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the errors a person can cause into a clear message and exit status 2."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except ValidationError as e:
            fail("invalid settings: " + "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors()))
        except KeyError as e:
            fail(str(e.args[0]) if e.args else "unknown key")
        except USER_ERRORS as e:
            fail(str(e))

    return wrapper


def load_settings(**overrides: Any) -> Settings:
    """Settings from file/env with the command-line flags that were given laid on top."""
    settings = Settings()
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, key = dotted.split(".")
        current = getattr(settings, section)
        sub = type(current).model_validate({**current.model_dump(), key: value})
        settings = settings.model_copy(update={section: sub})
    return settings


@app.callback()
def main(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML settings file (also SOAY_CONFIG)."),
) -> None:
    if config is not None:
        if not config.is_file():
            fail(f"settings file {config} does not exist")
        os.environ[CONFIG_ENV] = str(config)


@app.command("config")
@user_errors
def show_config() -> None:
    """Print the effective settings (defaults < file < environment) as JSON."""
    typer.echo(Settings().model_dump_json(indent=2))


@corpus_app.command("build")
@user_errors
def corpus_build(
    domain: str | None = typer.Option(None, help="Domain (aminer, movies)."),
    size: int | None = typer.Option(None, min=100, help="Persons (aminer) or movies (movies)."),
    seed: int | None = typer.Option(None, help="Random seed; the same seed gives the same corpus."),
    out: Path | None = typer.Option(None, help="SQLite file to write (default <data.root>/<domain>/corpus.sqlite)."),
) -> None:
    """Generate a seeded corpus into SQLite (replacing any existing one)."""
    from training.corpus import build_corpus

    s = load_settings(**{"data.domain": domain, "data.corpus_size": size, "data.seed": seed})
    path = out or s.data.corpus_path()
    start = time.perf_counter()
    counts = build_corpus(s.data.domain, path, s.data.corpus_size, s.data.seed)
    typer.echo(json.dumps({"path": str(path), "seconds": round(time.perf_counter() - start, 2), **counts}))


@app.command("solutions")
@user_errors
def solutions(
    domain: str | None = typer.Option(None, help="Domain (aminer, movies)."),
    as_json: bool = typer.Option(False, "--json", help="Print the graph, library and combinations as JSON."),
) -> None:
    """Show the API graph, the solution library and the combinations of a domain."""
    from soay.domains import domain_for

    d = domain_for(load_settings(**{"data.domain": domain}))
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "graph": d.library.graph.to_dict(),
                    "heads": d.library.graph.heads,
                    "solutions": d.library.to_dict(),
                    "combinations": [c.model_dump(mode="json") | {"kind": c.kind} for c in d.combinations],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    typer.echo(f"{d.name}: {len(d.spec.apis)} APIs, heads {', '.join(d.library.graph.heads)}")
    for s in d.library:
        n = sum(c.solution == str(s) for c in d.combinations)
        typer.echo(f"  {s.hops}-hop  {s}  ({n} combinations)")
    typer.echo(f"{len(d.library)} solutions, {len(d.combinations)} combinations")


@api_app.command("serve")
@user_errors
def api_serve(
    domain: str | None = typer.Option(None, help="Domain (aminer, movies)."),
    db: Path | None = typer.Option(None, help="Corpus SQLite file (default <data.root>/<domain>/corpus.sqlite)."),
    host: str | None = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int | None = typer.Option(None, min=1, max=65535, help="Port (default 8300)."),
) -> None:
    """Serve the domain's APIs over HTTP (POST /api/<name>), building the corpus if missing."""
    import uvicorn

    from serving.api_clone import create_app
    from soay.domains import get_domain
    from training.corpus import ensure_corpus

    s = load_settings(**{"data.domain": domain, "api_server.host": host, "api_server.port": port})
    d = get_domain(s.data.domain)
    path = db or ensure_corpus(d.name, s.data.corpus_path(), s.data.corpus_size, s.data.seed)
    if not Path(path).is_file():
        fail(f"corpus {path} does not exist")
    asgi = create_app(d.spec, lambda: d.open_environment(path), s.api_server.max_body_bytes)
    uvicorn.run(asgi, host=s.api_server.host, port=s.api_server.port, log_level="warning")


@keys_app.command("add")
@user_errors
def keys_add(
    name: str = typer.Argument(..., help="Whose key (a client, a team); adding a name again replaces its key."),
    rate: float | None = typer.Option(None, min=0.001, help="Requests a second it may make (default serve.rate_per_key)."),
    burst: int | None = typer.Option(None, min=1, help="Requests it may make at once (default serve.burst_per_key)."),
) -> None:
    """Make a key and store its digest; prints the key, which is never shown again."""
    from serving.keys import add_key

    s = load_settings()
    path = s.serve.keys_path(s.data)
    key = add_key(path, name, rate, burst)
    typer.echo(key)
    typer.echo(f"stored the digest of {name!r}'s key in {path}; `soay serve` on it now requires a key "
               "(clients send `Authorization: Bearer <key>`; `soay ask` sends SOAY_SERVE__API_KEY)", err=True)


@keys_app.command("list")
@user_errors
def keys_list() -> None:
    """The names of the keys the service accepts, with their limits."""
    from serving.keys import read_keys

    s = load_settings()
    path = s.serve.keys_path(s.data)
    keys = read_keys(path)
    for k in keys:
        typer.echo(f"{k.name}  {k.rate_per_s or s.serve.rate_per_key:g} requests/s, burst {k.burst or s.serve.burst_per_key}")
    typer.echo(f"{len(keys)} keys in {path}" if keys else f"no keys in {path}: the service is open", err=True)


@spec_app.command("import")
@user_errors
def spec_import(
    document: str = typer.Argument(..., help="OpenAPI 3.0/3.1 or Swagger 2.0 (JSON or YAML) or GraphQL SDL file, or an http(s) URL serving either."),
    out: Path | None = typer.Option(None, help="Spec YAML to write (default specs/<domain>.yaml); binding and intents go beside it."),
    domain: str | None = typer.Option(None, help="Domain name (default: from the document's title)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Import an API document as a spec to review and commit, with its binding and generated intents."""
    from soay.importers import import_document, write_import

    result = import_document(document, domain=domain)
    paths = write_import(result, out or Path("specs") / f"{result.spec.domain}.yaml")
    summary = result.summary() | {"files": {k: str(v) for k, v in paths.items()}}
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(
        f"{summary['domain']}: {summary['imported']} of {summary['operations']} operations imported as APIs, "
        f"{len(summary['entities'])} entities, heads {', '.join(summary['heads'])}, "
        f"{summary['solutions']} solutions, {summary['combinations']} combinations"
    )
    for problem in summary["not_imported"]:
        typer.echo(f"  not imported: {problem}")
    if summary["warnings"]:
        typer.echo(f"  {len(summary['warnings'])} schema defects read past (listed at the top of the spec)")
    typer.echo(f"wrote {paths['spec']} (review the `# inferred:` lines), {paths['binding']}, {paths['intents']}")


@spec_app.command("generate")
@user_errors
def spec_generate(
    spec: Path | None = typer.Argument(None, help="A spec written by `soay spec import`, its binding and intents beside it (default live_api.spec)."),
    base_url: str | None = typer.Option(None, help="The live API's base URL (default live_api.base_url)."),
    out: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    train: int | None = typer.Option(None, "--train-per-combination", min=1, help="Training triplets per combination."),
    test: int | None = typer.Option(None, "--test-per-combination", min=1, help="Test triplets per combination."),
    overwrite: bool = typer.Option(False, help="Replace an existing dataset."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Generate verified triplets through a live API: questions from the imported intents, heads sampled from the API."""
    from soay.environment.live_api import LiveApiOptions
    from soay.spec import load_spec
    from training.live_generate import generate_live

    s = load_settings(**{"data.train_per_combination": train, "data.test_per_combination": test, "live_api.base_url": base_url})
    if not s.live_api.base_url:
        fail("give the API's address with --base-url (or live_api.base_url)")
    spec = spec or s.live_api.spec
    if spec is None:
        fail("name the spec to generate from (or set live_api.spec)")
    target = Path(out or s.data.dataset_path(load_spec(spec).domain))
    options = LiveApiOptions.from_settings(s.live_api, spec, target.resolve().parent / "api-cache.sqlite")
    report = generate_live(spec, options, s, Path(target), overwrite=overwrite, show_progress=sys.stderr.isatty() or not as_json)
    if as_json:
        typer.echo(json.dumps({"kept": report.kept, "counts": report.manifest.counts(), "seconds": round(report.seconds, 2),
                               "stats": report.stats, "api": report.api, "dataset_path": str(report.dataset_path)}))
        return
    typer.echo(f"{report.kept} verified triplets ({', '.join(f'{k} {v}' for k, v in sorted(report.manifest.counts().items()))}) in {report.seconds:.1f} s")
    typer.echo(f"API: {json.dumps(report.api)}; unavailable calls: {report.stats.get('api_unavailable', 0)}")
    typer.echo(f"dataset version {report.manifest.version} at {report.dataset_path}")


@app.command("generate")
@user_errors
def generate_cmd(
    domain: str | None = typer.Option(None, help="Domain (aminer, movies)."),
    train: int | None = typer.Option(None, "--train-per-combination", min=1, help="Training triplets per combination."),
    test: int | None = typer.Option(None, "--test-per-combination", min=1, help="Test triplets per combination."),
    workers: int | None = typer.Option(None, min=1, help="Ray workers (actors) generating in parallel."),
    out: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    fmt: str | None = typer.Option(None, "--format", help="Shard format: jsonl or parquet."),
    overwrite: bool = typer.Option(False, help="Replace an existing dataset."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Generate verified (query, solution, code) triplets on Ray (local, or RAY_ADDRESS)."""
    from training.generate import generate, report_dict

    s = load_settings(
        **{
            "data.domain": domain,
            "data.train_per_combination": train,
            "data.test_per_combination": test,
            "data.shard_format": fmt,
            "ray.workers": workers,
        }
    )
    report = generate(s, out=out, overwrite=overwrite, show_progress=sys.stderr.isatty() or not as_json)
    if as_json:
        typer.echo(json.dumps(report_dict(report)))
    else:
        print_generation(report)


@app.command("index")
@user_errors
def index_cmd(
    domain: str | None = typer.Option(None, help="Domain (aminer, movies)."),
    dataset: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    traces: Path | None = typer.Option(None, help="JSONL of past successful traces (default <data.root>/<domain>/traces.jsonl; may be absent)."),
    out: Path | None = typer.Option(None, help="Index directory (default retriever.index_dir or <data.root>/<domain>/index)."),
    model: str | None = typer.Option(None, help="Embedding model: all-MiniLM-L6-v2 (packaged) or a sentence-transformers path/name."),
    index_type: str | None = typer.Option(None, help="flat (exact), ivf or hnsw (approximate, for millions of vectors)."),
    workers: int | None = typer.Option(None, min=1, help="Ray actors embedding in parallel."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Build the retriever's FAISS index over API docs, training exemplars and past traces, on Ray."""
    from retriever.build import build_index

    s = load_settings(
        **{"data.domain": domain, "retriever.model": model, "retriever.index_type": index_type, "ray.workers": workers}
    )
    report = build_index(s, dataset=dataset, out=out, traces=traces, show_progress=sys.stderr.isatty() or not as_json)
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
        return
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    typer.echo(f"indexed {sum(report.counts.values())} documents ({counts}) with {report.model} in {report.seconds:.1f} s")
    typer.echo(f"dataset version {report.dataset_version}; index at {report.path}")


@app.command("train")
@user_errors
def train_cmd(
    recipe: Path = typer.Option(DEFAULT_RECIPE, "--config-file", "-f", help="Recipe YAML: configs/heads.yaml (default) or an SFT recipe of configs/sft/."),
    overrides: list[str] | None = typer.Argument(None, help="Recipe overrides as key=value (e.g. C=0.5, or max_steps=100 lora.r=16)."),
    domain: str | None = typer.Option(None, help="Domain whose dataset to train on."),
    dataset: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    out: Path | None = typer.Option(None, help="Run directory (default <data.root>/<domain>/runs/<recipe>)."),
) -> None:
    """Train the planner and coder: heads on the pretrained base (default), or full/LoRA SFT on Ray Train."""
    from cluster.library_logs import route_library_output
    from training.fit_heads import fit_heads, is_heads_recipe, load_heads_config
    from training.sft import load_config
    from training.train_job import run_sft

    if not recipe.is_file():
        fail(f"recipe {recipe} does not exist")
    s = load_settings(**{"data.domain": domain})
    route_library_output(s)
    runs = s.data.root / s.data.domain / "runs"
    if is_heads_recipe(recipe):
        record = fit_heads(load_heads_config(recipe, overrides or []), s, dataset or s.data.dataset_path(), out or runs / "heads")
    else:
        from cluster.ray_runtime import init_ray

        config = load_config(recipe, overrides or [])
        init_ray(s.ray, worker_output=True)  # the training workers print their progress
        record = run_sft(config, dataset or s.data.dataset_path(), out or runs / config.mode, s.data)
    typer.echo(json.dumps({k: record[k] for k in ("checkpoint", "wall_seconds", "examples", "metrics", "dataset")}, default=str))


@app.command("eval")
@user_errors
def eval_cmd(
    model: Path = typer.Argument(..., help="A `soay train` run's model/ directory."),
    split: str = typer.Option("test", help="validation (for tuning) or test (for reports)."),
    domain: str | None = typer.Option(None, help="Domain of the dataset."),
    dataset: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    out: Path | None = typer.Option(None, help="Where eval.json and eval.md go (default: beside the model)."),
    limit: int | None = typer.Option(None, min=1, help="Evaluate only N cases spread evenly over the split."),
    paraphrases: Path | None = typer.Option(None, help="Also score hand-written phrasings (e.g. benchmarks/paraphrases.yaml)."),
    out_of_scope: Path | None = typer.Option(None, "--out-of-scope", help="Also measure refusals of these out-of-scope questions (e.g. benchmarks/out_of_scope.yaml)."),
) -> None:
    """SoAyEval on a held-out split: planner + coder via vLLM, code in the sandbox."""
    from cluster.library_logs import route_library_output
    from soay.domains import domain_for
    from soay.splits import HELD_OUT_SPLITS
    from training.evaluate import run_eval

    if split not in HELD_OUT_SPLITS:
        fail(f"--split must be one of {', '.join(HELD_OUT_SPLITS)}, not {split!r}")
    if not is_model_dir(model):
        fail(f"{model} is not a trained model directory (no {HEADS_FILE} or config.json); run `soay train` first")
    for given in (paraphrases, out_of_scope):
        if given and not given.is_file():
            fail(f"file {given} does not exist")
    s = load_settings(**{"data.domain": domain})
    route_library_output(s)
    report = run_eval(model, dataset or s.data.dataset_path(), s.data.corpus_path(), domain_for(s), out or model.parent / f"eval-{split}",
                      limit, paraphrases, split, out_of_scope)
    typer.echo(json.dumps({"headline": report["headline"], "out_of_scope": report.get("out_of_scope"), "score": report["score"], "all": report["all"], "meta": report["meta"]}))


@app.command("serve")
@user_errors
def serve_cmd(
    model: Path | None = typer.Option(None, help="HF checkpoint both LLM deployments load (default serve.model_dir)."),
    host: str | None = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int | None = typer.Option(None, min=1, max=65535, help="Port (default 8400)."),
) -> None:
    """Serve questions (POST /v1/ask, /v1/chat/completions) on Ray Serve until Ctrl-C; RAY_ADDRESS joins a cluster."""
    import ray
    from ray import serve

    from cluster.library_logs import announce_deployments, route_library_output, starting, stopping
    from cluster.ray_runtime import init_ray, serve_logs_elsewhere
    from training.corpus import ensure_corpus

    s = load_settings(**{"serve.model_dir": model, "serve.host": host, "serve.port": port})
    if not is_model_dir(s.serve.model_path(s.data)):
        fail(f"no model at {s.serve.model_path(s.data)}: run `soay train` or pass --model")
    if not (s.retriever.index_path(s.data) / "meta.json").is_file():
        fail(f"no retriever index at {s.retriever.index_path(s.data)}: run `soay index` first")
    route_library_output(s)  # the libraries' start-up lines go to log files, one line per component here
    with starting():  # Ray Serve LLM's import makes every library log INFO lines as JSON (faiss's as it loads)
        import serving.app  # noqa: F401
    if s.sandbox.api_backend == "inprocess" and s.live_api.spec is None:
        ensure_corpus(s.data.domain, s.data.corpus_path(), s.data.corpus_size, s.data.seed)
    if not (s.ray.address or os.environ.get("RAY_ADDRESS") or s.ray.num_cpus):
        # the engines reserve one logical CPU each and the stages fractions: more than a small machine counts
        s = s.model_copy(update={"ray": s.ray.model_copy(update={"num_cpus": max(8, os.cpu_count() or 1)})})
    init_ray(s.ray)
    stop = stop_on_signal()  # after ray.init, which sets its own; Ctrl-C while the engines load stops the start-up too
    deployment = _Deployment(s)
    health = None
    try:
        with announce_deployments():
            url = deployment.wait(stop)
        if url:
            health = _health_server(s)
            typer.echo(f"serving at {url} (POST /v1/ask, /v1/chat/completions; GET /healthz, /metrics)"
                       + (f"; health probes at {health.url}/healthz" if health else "") + "; Ctrl-C stops")
            if logs := serve_logs_elsewhere(s.ray):
                typer.echo(f"replica logs: {logs} (on this console with SOAY_RAY__SERVE_LOGS_TO_CONSOLE=true)")
            stop.wait()
    finally:
        with stopping():
            if health:  # before Serve goes: its next controller call would start a new Ray
                health.stop()
            serve.shutdown()
            deployment.join(DEPLOY_STOP_S)
            ray.shutdown()


DEPLOY_STOP_S = 60.0
"""How long Ctrl-C waits for an unfinished deployment to notice that Serve is gone."""


def _health_server(s: Settings) -> HealthServer | None:
    """The health port of serving/health.py, answered by this process while it serves."""
    from serving.app import APP_NAME
    from serving.health import HealthServer

    if s.serve.health_port is None:
        return None
    try:
        return HealthServer(APP_NAME, s.serve.model_name, s.serve.host, s.serve.health_port).start()
    except OSError as exc:
        fail(f"cannot answer health probes on {s.serve.host}:{s.serve.health_port} ({exc.strerror}); "
             "set serve.health_port to a free port, or to null for none")


class _Deployment:
    """The application's deployment, in a thread of its own: it waits minutes for the engines and
    takes no signal, so the command waits beside it for the deployment or for Ctrl-C. After a
    Ctrl-C it must end before Ray is shut down: Serve's next call from it would start a new Ray."""

    def __init__(self, s: Settings) -> None:
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._deploy, args=(s,), daemon=True)
        self._thread.start()

    def _deploy(self, s: Settings) -> None:
        from serving.app import deploy

        try:
            self._outcome["url"] = deploy(s)
        except Exception as exc:  # noqa: BLE001 - re-raised by wait, in the command's own thread
            self._outcome["error"] = exc

    def wait(self, stop: threading.Event) -> str | None:
        """The application's URL, or None once `stop` is set first."""
        while self._thread.is_alive() and not stop.wait(0.5):
            pass
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome.get("url")

    def join(self, timeout_s: float) -> None:
        """Wait for the deployment to end (Serve shut down under it, it fails at its next call)."""
        self._thread.join(timeout_s)


@app.command("broker")
@user_errors
def broker_cmd(
    port: int | None = typer.Option(None, min=1, max=65535, help="Port (default: the port of kafka.bootstrap_servers)."),
) -> None:
    """Run the embedded Kafka-compatible broker (Tansu, in-memory) on loopback until Ctrl-C, with the stack's topics."""
    from cluster.broker import ensure_topics, start_broker

    s = load_settings()
    port = port or int(s.kafka.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])
    broker = start_broker("127.0.0.1", port)
    ensure_topics(broker.bootstrap, [s.kafka.requests_topic, s.kafka.feedback_topic], s.kafka.partitions)
    typer.echo(f"broker at {broker.bootstrap} (pid {broker.pid}), topics {s.kafka.requests_topic}, {s.kafka.feedback_topic}; Ctrl-C stops")
    stop = stop_on_signal()
    while not stop.wait(1.0):
        if broker.process.poll() is not None:
            fail(f"the broker exited with {broker.process.returncode}", 1)
    broker.stop()


@app.command("retrain")
@user_errors
def retrain_cmd(
    overrides: list[str] | None = typer.Argument(None, help="Recipe overrides as key=value, after retrain.overrides."),
    force: bool = typer.Option(False, help="Train even if fewer than retrain.min_new_triplets new triplets arrived."),
    min_new_triplets: int | None = typer.Option(None, min=1, help="New training triplets that trigger a retraining."),
    tolerance: float | None = typer.Option(None, help="Score points the candidate may lose and still be promoted."),
    eval_limit: int | None = typer.Option(None, min=1, help="Score both models on the first N test cases."),
    swap: bool | None = typer.Option(None, "--swap/--no-swap", help="Swap the running service to a promoted model."),
    dataset: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    as_json: bool = typer.Option(False, "--json", help="Print the attempt record as JSON (progress goes to stderr)."),
) -> None:
    """Retrain on new triplets: the heads refitted on the frozen base (retrain.recipe, default
    configs/heads.yaml; an SFT recipe trains from the promoted model instead), SoAyEval, promote
    unless the Score regresses, swap the running service (RAY_ADDRESS: the cluster it runs on) to it."""
    from serving.rollout import swap as swap_service  # training does not import serving: the CLI joins them
    from training.retrain import retrain

    s = load_settings(
        **{"retrain.min_new_triplets": min_new_triplets, "retrain.tolerance": tolerance, "retrain.eval_limit": eval_limit,
           "retrain.swap": swap}
    )
    if overrides:
        s = s.model_copy(update={"retrain": s.retrain.model_copy(update={"overrides": [*s.retrain.overrides, *overrides]})})
    record = retrain(s, dataset, force=force, log=lambda line: typer.echo(line, err=as_json), swap=swap_service)
    if as_json:
        typer.echo(json.dumps(record))
    elif record["decision"] in ("promoted", "rejected"):
        typer.echo(f"{record['decision']}: candidate Score {record['candidate']['score']} vs "
                   f"{record['promoted_before']['score']} ({record['run']}/attempt.json)")


@app.command("loadtest")
@user_errors
def loadtest_cmd(
    url: str | None = typer.Option(None, help="Service URL (default http://<serve.host>:<serve.port>)."),
    users: int = typer.Option(4, min=1, help="Concurrent simulated users."),
    spawn_rate: float = typer.Option(2.0, min=0.01, help="Users started per second."),
    duration: str = typer.Option("60s", help="Run time, e.g. 60s, 5m."),
    out: Path = typer.Option(Path("loadtest-report"), help="Directory for the CSV files, report.html and summary.json."),
    questions: Path | None = typer.Option(None, help="Questions file (lines or JSONL); default: the dataset's test split."),
    dataset: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    think_time: float = typer.Option(1.0, min=0.0, help="Seconds a user waits between requests, drawn from [0, this]; 0 is closed-loop."),
    mix: str | None = typer.Option(None, help="Requests of each kind per round of a user (default ask=6,chat=2,stream=1,bad=1)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Load-test the running service with locust, headless: mixed questions, chat, feedback, bad
    requests. Exits 1 when any request failed (a bad request failing means it did not get its 4xx)."""
    from loadtest.run import run_loadtest

    s = load_settings()
    if questions and not questions.is_file():
        fail(f"questions file {questions} does not exist")
    try:
        summary = run_loadtest(
            url or f"http://{s.serve.host}:{s.serve.port}", users, spawn_rate, duration, out,
            questions.resolve() if questions else None, (dataset or s.data.dataset_path()).resolve(), think_time, mix,
        )
    except RuntimeError as e:
        fail(str(e), 1)
    typer.echo(json.dumps(summary.to_dict()) if as_json else f"{summary.text()}\nreport: {out / 'report.html'}")
    if summary.failures:  # as locust itself does: a script or CI can tell a run with failures
        raise typer.Exit(1)


@app.command("enlarge")
@user_errors
def enlarge_cmd(
    until_idle: float | None = typer.Option(None, "--until-idle", min=0, help="Stop once caught up and nothing arrived for this many seconds (a batch run)."),
    max_records: int | None = typer.Option(None, "--max-records", min=1, help="Stop after this many records."),
    workers: int | None = typer.Option(None, min=0, help="Ray actors re-running logged programs (0: this process, no Ray)."),
    batch_records: int | None = typer.Option(None, min=1, help="Records per batch (one dataset version and one offset commit)."),
    group: str | None = typer.Option(None, help="Consumer group (default kafka.consumer_group); a new group reads the log from the start."),
    metrics_port: int | None = typer.Option(None, min=1, max=65535, help="Port of the job's Prometheus metrics (default enlarge.metrics_port)."),
    dataset: Path | None = typer.Option(None, help="Dataset directory (default <data.root>/<domain>/dataset)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (progress goes to stderr)."),
) -> None:
    """Enlarge the dataset from the request log: re-verify logged programs in the sandbox (on Ray),
    de-duplicate, append the kept ones as a new dataset version, commit offsets after the write."""
    from training.enlarge import Enlarger

    s = load_settings(**{"enlarge.workers": workers, "enlarge.batch_records": batch_records, "enlarge.metrics_port": metrics_port})
    enlarger = Enlarger(s, dataset, group, log=lambda line: typer.echo(line, err=as_json))
    try:
        stop = stop_on_signal()  # finish the batch in hand, then stop (set after ray.init, which sets its own)
        report = enlarger.run(until_idle, max_records, stop)
    finally:
        enlarger.close()
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
    else:
        typer.echo(f"{report.triplets_written} triplets written (versions {report.versions or 'none'}) from {report.records} records "
                   f"in {report.seconds:.1f} s; outcomes {json.dumps(report.outcomes)}")


@app.command("ask")
@user_errors
def ask_cmd(
    question: str = typer.Argument(..., help="The question, in English or Chinese."),
    url: str | None = typer.Option(None, help="Service URL (default http://<serve.host>:<serve.port>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole record (solution, code, result, timings)."),
) -> None:
    """Ask the running service (`soay serve`) a question and print its answer."""
    import httpx

    s = load_settings()
    headers = {"Authorization": f"Bearer {s.serve.api_key}"} if s.serve.api_key else {}
    try:
        response = httpx.post(
            f"{url or f'http://{s.serve.host}:{s.serve.port}'}/v1/ask", json={"query": question},
            headers=headers, timeout=s.serve.request_timeout_s + 10,
        )
    except httpx.HTTPError as e:
        fail(f"cannot reach the service: {e}; is `soay serve` running?")
    if response.status_code != 200:
        fail(f"{response.status_code}: {response.json().get('error', response.text) if response.headers.get('content-type', '').startswith('application/json') else response.text}", 1)
    record = response.json()
    typer.echo(json.dumps(record, ensure_ascii=False, indent=2) if as_json else record["answer"])


@app.command("demo")
@user_errors
def demo(
    out: Path | None = typer.Option(None, help="Data root for the demo (default data.root)."),
    recipe: Path = typer.Option(DEFAULT_RECIPE, "--recipe", help="Recipe of the model: configs/heads.yaml, or configs/sft/cpu_full.yaml (from scratch)."),
    keep_serving: bool = typer.Option(False, "--serve", help="Keep the service and its web page running after the demo, until Ctrl-C."),
) -> None:
    """Run the main job on the embedded defaults: corpus -> solutions -> verified triplets (on Ray) ->
    planner and coder heads fitted on the frozen pretrained base (Gemma 3 270M, configs/heads.yaml) ->
    SoAyEval -> index -> serve -> sample questions; ends with the web page's address (and, with
    --serve, keeps serving it)."""
    from cli.demo import run_demo

    run_demo(load_settings(**{"data.root": out}), recipe, keep_serving, root_given=out is not None)


def run() -> None:
    app()


if __name__ == "__main__":
    run()
