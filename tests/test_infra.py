"""The deployment files of infra/ checked offline with the tools that would reject them for real:
the KubeRay CRD schemas (vendored, infra/schemas/), Ray's cluster-config validator, Ray Serve's
config schema, the Compose Specification schema, and the soay CLI parsing each RayJob entrypoint.
Dashboards and alerts must name only metrics that the stack's code or Ray defines, so a renamed
metric breaks this module rather than an empty panel in production."""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import json
import re
import shlex
from pathlib import Path
from typing import Any

import httpx
import pytest
import ray
import yaml
from jsonschema import Draft7Validator, Draft202012Validator

from conftest import ROOT, free_port
from soay.settings import Settings

INFRA = ROOT / "infra"
SCHEMAS = INFRA / "schemas"
KUBERAY = sorted((INFRA / "kuberay").glob("*.yaml"))
DASHBOARDS = sorted((INFRA / "grafana" / "dashboards").glob("*.json"))
STACK_CODE = ("soay", "serving", "training", "cluster", "retriever")
RAY_DIR = Path(ray.__file__).parent
PROMETHEUS_BUILTINS = {"up"}
METRIC = re.compile(r"\b((?:soay|api_clone|ray)_[A-Za-z0-9_]+|up)\b")
SUFFIXES = {
    "Counter": ("_total", "_created"),
    "Gauge": ("",),
    "Histogram": ("_bucket", "_sum", "_count", "_created"),
    "Summary": ("", "_sum", "_count", "_created"),
    "Info": ("_info",),
}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@functools.cache
def kuberay_validator(kind: str) -> Draft202012Validator:
    core = json.loads((SCHEMAS / "k8s-v1.28-core.json").read_text())
    kuberay = load_yaml(SCHEMAS / "kuberay-v1-reduced.yaml")
    schema = {"$schema": kuberay["$schema"], "$defs": {**core["$defs"], **kuberay["$defs"]}, "$ref": f"#/$defs/{kind}"}
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def errors(validator: Any, document: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(document)]


def pods(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    cluster = manifest["spec"].get("rayClusterConfig") or manifest["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"], *cluster.get("workerGroupSpecs", [])]


# --- KubeRay ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", KUBERAY, ids=[p.name for p in KUBERAY])
def test_kuberay_manifest_matches_the_crd_schema(path):
    manifest = load_yaml(path)
    validator = kuberay_validator(manifest["kind"])
    assert errors(validator, manifest) == []
    broken = copy.deepcopy(manifest)
    container = pods(broken)[0]["template"]["spec"]["containers"][0]
    container["resource"] = container.pop("resources", {})  # a misspelt field
    pods(broken)[-1]["minReplicas"] = "two"  # a wrong type
    assert len(errors(validator, broken)) >= 2


def test_kuberay_set_is_complete_and_pinned_to_this_ray():
    kinds = {(m := load_yaml(p))["kind"]: m for p in KUBERAY}
    assert set(kinds) == {"RayService", "RayJob"}
    assert {p.stem for p in KUBERAY} == {"rayservice", "rayjob-generate", "rayjob-train", "rayjob-enlarge"}
    from_line = next(line for line in (INFRA / "Dockerfile").read_text().splitlines() if line.startswith("FROM "))
    assert f"ray:{ray.__version__}-" in from_line
    for path in KUBERAY:
        manifest = load_yaml(path)
        cluster = manifest["spec"].get("rayClusterConfig") or manifest["spec"]["rayClusterSpec"]
        assert cluster["rayVersion"] == ray.__version__, path.name


def test_rayservice_serves_the_app_on_gpu_replicas():
    from ray.serve.schema import ServeDeploySchema

    manifest = load_yaml(INFRA / "kuberay" / "rayservice.yaml")
    config = ServeDeploySchema.model_validate(yaml.safe_load(manifest["spec"]["serveConfigV2"]))
    (application,) = config.applications
    module, _, function = application.import_path.partition(":")
    source = Path(importlib.util.find_spec(module).origin)
    assert function in {n.name for n in ast.parse(source.read_text()).body if isinstance(n, ast.FunctionDef)}
    settings = Settings(**application.args)  # the builder's settings overrides are valid settings
    assert settings.serve.accelerator == "gpu"
    gpu_group = next(g for g in pods(manifest)[1:] if g["groupName"] == "gpu")
    resources = gpu_group["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == "1"
    assert gpu_group["maxReplicas"] >= settings.serve.llm_max_replicas  # room for every engine replica


def soay_command(entrypoint: str) -> tuple[str, list[str]]:
    """`python -m cluster.jobs.<job> ARGS` -> (job, ARGS); the module must exist."""
    python, flag, module, *args = shlex.split(entrypoint)
    assert (python, flag) == ("python", "-m") and module.startswith("cluster.jobs.")
    assert importlib.util.find_spec(module) is not None, module
    return module.rsplit(".", 1)[1], args


@pytest.mark.parametrize("job", ["generate", "train", "enlarge"])
def test_rayjob_entrypoint_parses_as_its_soay_command(job):
    import typer

    from cli.main import app

    manifest = load_yaml(INFRA / "kuberay" / f"rayjob-{job}.yaml")
    name, args = soay_command(manifest["spec"]["entrypoint"])
    assert name == job
    group = typer.main.get_command(app)
    command = group.get_command(group.make_context("soay", [name]), name)
    params = command.make_context(name, list(args)).params  # raises on an unknown or invalid flag
    if job == "train":
        from training.sft import load_config

        config = load_config(ROOT / params["recipe"], params["overrides"])
        a100 = pods(manifest)[1]
        gpus = int(a100["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
        assert config.use_gpu and config.workers == a100["replicas"] * gpus  # one Ray Train worker per A100
        assert "A100" in a100["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]


# --- Ray cluster YAML, compose ------------------------------------------------------------


def test_ray_cluster_yaml_passes_rays_own_validator():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = load_yaml(INFRA / "ray" / "cluster.yaml")
    validate_config(prepare_config(copy.deepcopy(config)))  # what `ray up` runs before the cloud
    config["available_node_types"]["a100"]["max_worker"] = 4
    with pytest.raises(Exception, match="max_worker"):
        validate_config(prepare_config(config))


def test_compose_file_matches_the_compose_spec():
    schema = json.loads((SCHEMAS / "compose-spec.json").read_text())
    Draft7Validator.check_schema(schema)
    compose = load_yaml(INFRA / "compose.yaml")
    assert errors(Draft7Validator(schema), compose) == []
    assert set(compose["services"]) == {"kafka", "prometheus", "grafana"}
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (INFRA / source).exists(), source
    compose["services"]["grafana"]["port"] = ["3000:3000"]
    assert errors(Draft7Validator(schema), compose)


# --- Prometheus, Grafana --------------------------------------------------------------------


def test_prometheus_scrapes_every_service_where_it_listens():
    config = load_yaml(INFRA / "prometheus" / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert len(jobs) == len(config["scrape_configs"])
    assert set(jobs) == {"soay-serve", "soay-api-clone", "soay-enlarge", "soay-train", "ray"}
    settings = Settings()
    train_port = re.search(r"metrics_port=(\d+)", load_yaml(INFRA / "kuberay" / "rayjob-train.yaml")["spec"]["entrypoint"])[1]
    ports = {
        "soay-serve": settings.serve.port, "soay-api-clone": settings.api_server.port,
        "soay-enlarge": settings.enlarge.metrics_port, "soay-train": int(train_port),
    }  # fmt: skip
    for name, port in ports.items():
        assert jobs[name]["static_configs"][0]["targets"] == [f"127.0.0.1:{port}"], name
        assert jobs[name].get("metrics_path", "/metrics") == "/metrics"
    assert jobs["ray"]["file_sd_configs"][0]["files"] == ["/tmp/ray/prom_metrics_service_discovery.json"]
    assert [Path(f).name for f in config["rule_files"]] == ["alerts.yml"]
    assert (INFRA / "prometheus" / "alerts.yml").is_file()


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in load_yaml(INFRA / "prometheus" / "alerts.yml")["groups"] for rule in group["rules"]]


def test_alert_rules_are_well_formed():
    rules = alert_rules()
    assert len({r["alert"] for r in rules}) == len(rules)
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}
        assert re.fullmatch(r"\d+[smh]", rule["for"]) and rule["expr"].strip() and rule["annotations"]["summary"]
        assert rule["expr"].count("(") == rule["expr"].count(")")


def test_grafana_provisioning_loads_every_dashboard_from_prometheus():
    datasource = load_yaml(INFRA / "grafana" / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    provider = load_yaml(INFRA / "grafana" / "provisioning" / "dashboards" / "soay.yml")["providers"][0]
    grafana = load_yaml(INFRA / "compose.yaml")["services"]["grafana"]
    assert f"./grafana/dashboards:{provider['options']['path']}:ro" in grafana["volumes"]
    assert datasource["url"].endswith(":9090") and datasource["type"] == "prometheus"
    assert {p.stem for p in DASHBOARDS} == {"soay-serving", "soay-pipeline"}
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        assert dashboard["uid"] == path.stem and dashboard["title"] and dashboard["panels"]
        assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
        for panel in dashboard["panels"]:
            assert set(panel["gridPos"]) == {"h", "w", "x", "y"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
            assert panel["datasource"]["uid"] == datasource["uid"]
            assert panel["targets"] and all(t["expr"].count("(") == t["expr"].count(")") for t in panel["targets"])


def dashboard_exprs() -> list[str]:
    return [t["expr"] for path in DASHBOARDS for p in json.loads(path.read_text())["panels"] for t in p["targets"]]


def defined_metrics(files: list[Path], prefix: str = "") -> set[str]:
    """Exported series names of the metrics these files define (prometheus_client or Ray's
    `ray.util.metrics`), e.g. a Counter("x") -> x_total; found in the syntax tree, so an alias
    (`Counter as PromCounter`) or a call over several lines counts too."""
    names: set[str] = set()
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not any(kind in text for kind in SUFFIXES):
            continue
        tree = ast.parse(text)
        aliases = {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                continue
            func = node.func
            kind = aliases.get(func.id, func.id) if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if kind in SUFFIXES:
                base = prefix + node.args[0].value.removesuffix("_total")
                names.update(base + suffix for suffix in SUFFIXES[kind])
    return names


def known_metrics() -> set[str]:
    stack = [p for d in STACK_CODE for p in (ROOT / d).rglob("*.py")]
    ray_panels = "".join(p.read_text() for p in (RAY_DIR / "dashboard" / "modules" / "metrics" / "dashboards").glob("*.py"))
    return (
        defined_metrics(stack)
        | defined_metrics(sorted((RAY_DIR / "serve").rglob("*.py")), prefix="ray_")
        | set(re.findall(r"\bray_[a-z0-9_]+", ray_panels))  # names Ray's own dashboards query
        | PROMETHEUS_BUILTINS
    )


def test_every_metric_in_dashboards_and_alerts_exists():
    known = known_metrics()
    exprs = dashboard_exprs() + [r["expr"] for r in alert_rules()]
    used = {m for e in exprs for m in METRIC.findall(e)}
    assert all(METRIC.search(e) for e in exprs)  # every query reads some metric
    assert sorted(used - known) == []
    for needed in ("soay_stage_latency_seconds_bucket", "soay_requests_total", "soay_stage_errors_total",
                   "ray_serve_deployment_replica_healthy", "soay_enlarge_lag", "soay_enlarge_triplets_written_total",
                   "soay_train_loss", "soay_train_tokens_per_second"):  # fmt: skip
        assert needed in used, needed
    assert "soay_stage_latency_secs_bucket" not in known  # a renamed metric would be caught


def test_training_rank0_exports_loss_and_throughput():
    from training.sft import load_config
    from training.train_metrics import TrainMetrics

    assert load_config(None, []).metrics_port is None  # off unless a recipe asks for it
    port = free_port()
    exporter = TrainMetrics(port)
    try:
        exporter.update({"step": 20, "epoch": 0, "loss": 1.25, "tokens_per_s": 900.0})
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        exporter.close()
    assert "soay_train_loss 1.25" in text and "soay_train_tokens_per_second 900.0" in text and "soay_train_step 20.0" in text
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
