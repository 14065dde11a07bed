"""The figures of a locust run, read back from the CSV files locust wrote.

Everything is derived from `<prefix>_stats.csv` and `<prefix>_status_codes.csv`, so the printed
summary and the files a person opens later cannot disagree.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ANSWERING = ("/v1/ask", "/v1/chat/completions", "/v1/chat/completions (stream)")
"""Request names that answer a question: what answers/s counts."""
BAD_PREFIX = "bad: "


@dataclass
class Endpoint:
    name: str
    requests: int
    failures: int
    p50_ms: float
    p95_ms: float
    p99_ms: float


@dataclass
class Summary:
    seconds: float
    requests: int
    failures: int
    requests_per_s: float
    answered: int
    answers_per_s: float
    bad_requests: int
    bad_requests_4xx: int
    endpoints: list[Endpoint] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def failure_rate(self) -> float:
        return self.failures / self.requests if self.requests else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "failure_rate": round(self.failure_rate, 4)}

    def text(self) -> str:
        lines = [
            f"{self.requests} requests in {self.seconds:.0f} s ({self.requests_per_s:.2f}/s), "
            f"{self.failures} failed ({100 * self.failure_rate:.1f} %)",
            f"answered {self.answered} questions: {self.answers_per_s:.2f} answers/s",
            f"bad requests: {self.bad_requests}, refused with a 4xx: {self.bad_requests_4xx}",
            f"{'endpoint':<32} {'requests':>8} {'failed':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}",
        ]
        lines += [f"{e.name:<32} {e.requests:>8} {e.failures:>6} {e.p50_ms:>8.0f} {e.p95_ms:>8.0f} {e.p99_ms:>8.0f}" for e in self.endpoints]
        lines.append("statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items())))
        return "\n".join(lines)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _number(value: str) -> float:
    return float(value) if value not in ("", "N/A") else 0.0


def summarize(prefix: Path) -> Summary:
    """The summary of the run whose CSV files start with `prefix`."""
    stats = _rows(Path(f"{prefix}_stats.csv"))
    total = next(r for r in stats if r["Name"] == "Aggregated")
    rows = [r for r in stats if r["Name"] != "Aggregated"]
    requests, rps = int(total["Request Count"]), _number(total["Requests/s"])
    seconds = requests / rps if rps else 0.0  # locust's rate is the count over the run's time
    answered = sum(int(r["Request Count"]) - int(r["Failure Count"]) for r in rows if r["Name"] in ANSWERING)
    bad = [r for r in rows if r["Name"].startswith(BAD_PREFIX)]
    statuses = _rows(Path(f"{prefix}_status_codes.csv"))
    by_status: Counter[str] = Counter()
    for r in statuses:
        by_status[r["Status"]] += int(r["Count"])
    return Summary(
        seconds=round(seconds, 1),
        requests=requests,
        failures=int(total["Failure Count"]),
        requests_per_s=round(rps, 3),
        answered=answered,
        answers_per_s=round(answered / seconds, 3) if seconds else 0.0,
        bad_requests=sum(int(r["Request Count"]) for r in bad),
        bad_requests_4xx=sum(int(r["Count"]) for r in statuses if r["Name"].startswith(BAD_PREFIX) and 400 <= int(r["Status"]) < 500),
        endpoints=[
            Endpoint(r["Name"], int(r["Request Count"]), int(r["Failure Count"]), _number(r["50%"]), _number(r["95%"]), _number(r["99%"]))
            for r in [*(r for r in rows if not r["Name"].startswith(BAD_PREFIX)), total]
        ],
        statuses=dict(by_status),
    )
