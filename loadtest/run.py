"""A headless locust run of `loadtest/locustfile.py`: CSV files, an HTML report with the latency,
throughput and user charts, and the summary.

Locust runs as its own process (`python -m locust`): it monkey-patches the standard library with
gevent when imported, which must not happen inside the `soay` process or a test runner.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loadtest.summary import Summary, summarize

LOCUSTFILE = Path(__file__).resolve().with_name("locustfile.py")
CSV_NAME = "loadtest"
HTML_NAME = "report.html"


def locust_command(
    url: str, users: int, spawn_rate: float, duration: str, out: Path, questions: Path | None, dataset: Path | None, think_time: float,
    mix: str | None,
) -> list[str]:
    command = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
        "--host", url, "--users", str(users), "--spawn-rate", str(spawn_rate), "--run-time", duration,
        "--csv", str(out / CSV_NAME), "--html", str(out / HTML_NAME), "--think-time", str(think_time),
    ]  # fmt: skip
    if questions:
        command += ["--questions", str(questions)]
    if dataset:
        command += ["--dataset", str(dataset)]
    if mix:
        command += ["--mix", mix]
    return command


def run_loadtest(
    url: str,
    users: int,
    spawn_rate: float,
    duration: str,
    out: Path,
    questions: Path | None = None,
    dataset: Path | None = None,
    think_time: float = 1.0,
    mix: str | None = None,
) -> Summary:
    """Run locust headless against `url` and return the summary (also in `out/summary.json`).

    Failed requests are part of the result, not an error; a locust that could not run at all (a
    bad option, no questions) raises RuntimeError with its own message."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(f"{CSV_NAME}_*.csv"):
        stale.unlink()
    command = locust_command(url.rstrip("/"), users, spawn_rate, duration, out, questions, dataset, think_time, mix)
    # locust exits 1 when some requests failed, which is a result; a run that ended normally has
    # the status-code file, written when locust quits (loadtest/locustfile.py)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1) or not (out / f"{CSV_NAME}_status_codes.csv").is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"locust exited with {done.returncode}: {last}")
    summary = summarize(out / CSV_NAME)
    (out / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2))
    return summary
