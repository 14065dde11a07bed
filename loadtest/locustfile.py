"""Locust users of the question-answering service (`soay serve`).

Each simulated user mixes what real clients do: mostly `POST /v1/ask` with a held-out question
(1/2/3 hops, English and Chinese drawn evenly), some OpenAI chat completions (plain and streaming),
a verdict on some answered requests (`POST /v1/feedback`), and now and then a bad request that must
get a 4xx. The API key comes from the environment like every setting (`SOAY_SERVE__API_KEY`).

    locust -f loadtest/locustfile.py --host http://127.0.0.1:8400        # web UI
    soay loadtest --url http://127.0.0.1:8400 --users 8 --duration 60s   # headless, CSV + HTML

Extra options (also LOCUST_<NAME> variables): --questions FILE, --dataset DIR, --think-time S,
--feedback-share P, --mix ask=6,chat=2,stream=1,bad=1 (requests of each kind per round). Besides locust's CSVs, `<csv prefix>_status_codes.csv` counts the HTTP status
codes per request name, so a report can show that bad requests got 4xx and which ones.
"""

from __future__ import annotations

import csv
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from locust import HttpUser, events, task
from locust.env import Environment
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from loadtest.bad_requests import BadRequest, bad_requests
from loadtest.questions import QuestionPool, load_questions
from soay.settings import Settings

SETTINGS = Settings()
"""The client side's view of the service: API key, model name, query limit (env / config file)."""
KINDS = ("ask", "chat", "stream", "bad")
DEFAULT_MIX = "ask=6,chat=2,stream=1,bad=1"


def parse_mix(text: str) -> dict[str, int]:
    """`ask=6,chat=2,stream=1,bad=1` -> counts per kind of request."""
    mix = {kind.strip(): int(count) for kind, _, count in (part.partition("=") for part in text.split(","))}
    unknown = set(mix) - set(KINDS)
    if unknown or not sum(mix.values()) or min(mix.values()) < 0:
        raise ValueError(f"--mix {text!r}: give counts >= 0 of {', '.join(KINDS)}")
    return mix


class Scenario:
    """What the users of this run share, filled in from the command line when locust starts."""

    pool: QuestionPool
    bad: tuple[BadRequest, ...] = bad_requests(SETTINGS.serve.model_name, SETTINGS.serve.max_query_chars)
    mix: dict[str, int] = parse_mix(DEFAULT_MIX)
    think_time: float = 1.0
    feedback_share: float = 0.3
    statuses: Counter[tuple[str, str, int]] = Counter()


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--questions", default="", help="File of questions (lines or JSONL); default: the dataset's test split.")
    parser.add_argument("--dataset", default=str(SETTINGS.data.dataset_path()), help="Dataset whose test split gives the questions.")
    parser.add_argument("--think-time", type=float, default=1.0, help="Seconds a user waits between requests, drawn from [0, this].")
    parser.add_argument("--feedback-share", type=float, default=0.3, help="Share of answered requests that get a verdict.")
    parser.add_argument("--mix", default=DEFAULT_MIX, help="Requests of each kind in every round of a user's requests.")


@events.init.add_listener
def _load(environment: Environment, **_: Any) -> None:
    options = environment.parsed_options
    questions = Path(options.questions) if options and options.questions else None
    dataset = Path(options.dataset) if options else SETTINGS.data.dataset_path()
    Scenario.pool = QuestionPool(load_questions(questions, dataset))
    if options:
        Scenario.think_time, Scenario.feedback_share = options.think_time, options.feedback_share
        Scenario.mix = parse_mix(options.mix)


@events.request.add_listener
def _count_status(request_type: str, name: str, response: Any = None, **_: Any) -> None:
    Scenario.statuses[(request_type, name, getattr(response, "status_code", 0) or 0)] += 1


@events.quitting.add_listener
def _write_final_files(environment: Environment, **_: Any) -> None:
    """Locust refreshes `<prefix>_stats.csv` once a second and exits without a last refresh, so the
    file can miss the final second; it is written here once more from the final stats (the users
    have stopped), together with the status codes, so that both describe the same requests."""
    prefix = getattr(environment.parsed_options, "csv_prefix", None)
    if not prefix:
        return
    with open(f"{prefix}_stats.csv", "w", newline="", encoding="utf-8") as f:
        StatsCSV(environment, PERCENTILES_TO_REPORT).requests_csv(csv.writer(f))
    with open(f"{prefix}_status_codes.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["Type", "Name", "Status", "Count"])
        writer.writerows([*key, count] for key, count in sorted(Scenario.statuses.items()))


class ServiceUser(HttpUser):
    """One person (or program) using the service. Its requests come in rounds, each a shuffled
    deck holding every kind as often as the mix says, so even a short run has the intended shares
    (random picks by weight might send no bad request at all in a ten-second test)."""

    def on_start(self) -> None:
        self.rng = random.Random()
        self.deck: list[str] = []
        key = SETTINGS.serve.api_key
        self.client.headers.update({"Authorization": f"Bearer {key}"} if key else {})

    def wait_time(self) -> float:
        return self.rng.uniform(0.0, Scenario.think_time)

    @task
    def next_request(self) -> None:
        if not self.deck:
            self.deck = [kind for kind, count in Scenario.mix.items() for _ in range(count)]
            self.rng.shuffle(self.deck)
        getattr(self, self.deck.pop())()

    def ask(self) -> None:
        question = Scenario.pool.draw(self.rng)
        with self.client.post("/v1/ask", json={"query": question.query}, name="/v1/ask", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {response.text[:200]}")
                return
            record = response.json()
            if not record.get("answer"):
                response.failure("answered without an answer")
                return
        if record.get("request_id") and self.rng.random() < Scenario.feedback_share:
            self.feedback(record)

    def feedback(self, record: dict[str, Any]) -> None:
        """The user's verdict: the sandbox result stands in for whether the answer satisfied them."""
        verdict = "good" if record.get("ok") else "bad"
        with self.client.post("/v1/feedback", json={"request_id": record["request_id"], "verdict": verdict},
                              name="/v1/feedback", catch_response=True) as response:
            if not 200 <= response.status_code < 300:
                response.failure(f"{response.status_code}: {response.text[:200]}")

    def chat(self) -> None:
        body = {"model": SETTINGS.serve.model_name, "messages": [{"role": "user", "content": Scenario.pool.draw(self.rng).query}]}
        with self.client.post("/v1/chat/completions", json=body, name="/v1/chat/completions", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {response.text[:200]}")
            elif not response.json()["choices"][0]["message"]["content"]:
                response.failure("empty completion")

    def stream(self) -> None:
        """Streaming chat, timed to the last event (`[DONE]`), not to the first byte."""
        body = {
            "model": SETTINGS.serve.model_name, "stream": True,
            "messages": [{"role": "user", "content": Scenario.pool.draw(self.rng).query}],
        }
        started = time.perf_counter()
        with self.client.post("/v1/chat/completions", json=body, name="/v1/chat/completions (stream)",
                              stream=True, catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {response.text[:200]}")
                return
            events = [line.removeprefix("data: ") for line in response.iter_lines(decode_unicode=True) if line.startswith("data: ")]
            response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
            errors = [e for e in events[:-1] if "error" in json.loads(e)]
            if errors:
                response.failure(f"stream error: {errors[0][:200]}")
            elif not events or events[-1] != "[DONE]":
                response.failure("stream ended without [DONE]")

    def bad(self) -> None:
        bad = self.rng.choice(Scenario.bad)
        with self.client.post(bad.path, data=bad.body, headers=bad.headers, name=f"bad: {bad.name}", catch_response=True) as response:
            if 400 <= response.status_code < 500:
                response.success()
            else:
                response.failure(f"a bad request got {response.status_code}, not a 4xx")
