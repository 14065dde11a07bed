"""README.md stays true: its request bodies are ones the service accepts, every command of its
command table has `--help` (and every command of the CLI is in the table), and its links lead to
files of the repository."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from serving.schemas import AskRequest, ChatRequest, FeedbackRequest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")

SOURCE_DIRS = ("soay", "serving", "training", "cluster", "retriever", "loadtest", "cli", "configs", "benchmarks", "infra", "tests", "docs")
"""Folders of the repository whose paths the README names (data/ and generated outputs are not checked)."""
BODY_MODELS: dict[str, type[BaseModel]] = {
    "/v1/ask": AskRequest,
    "/v1/ask/stream": AskRequest,
    "/v1/feedback": FeedbackRequest,
    "/v1/chat/completions": ChatRequest,
}


def fenced(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", TEXT, flags=re.S | re.M)


def curl_bodies() -> list[tuple[str, str]]:
    """(endpoint, body) of every `curl ... -d BODY` to a /v1/ endpoint in the README's bash blocks."""
    found = []
    for block in fenced("bash"):
        for command in block.replace("\\\n", " ").splitlines():
            if "curl" not in command:
                continue
            words = shlex.split(command, comments=True)
            endpoint = next((m.group(1) for w in words if (m := re.search(r"(/v1/[\w/.-]+)", w))), None)
            for flag, value in zip(words, words[1:]):
                if flag in ("-d", "--data", "--data-raw", "--json"):
                    assert endpoint, f"a curl body without a /v1/ endpoint: {command}"
                    found.append((endpoint, value))
    return found


def json_block_bodies() -> list[tuple[str, str]]:
    """Request bodies among the ```json blocks: feedback has a verdict, a question a query (and is
    not an answer record, which has an answer)."""
    found = []
    for block in fenced("json"):
        body = json.loads(block)
        if isinstance(body, dict) and "verdict" in body:
            found.append(("/v1/feedback", block))
        elif isinstance(body, dict) and "query" in body and "answer" not in body:
            found.append(("/v1/ask", block))
    return found


def test_request_bodies_validate_against_the_request_models() -> None:
    bodies = curl_bodies() + json_block_bodies()
    endpoints = {endpoint for endpoint, _ in bodies}
    assert {"/v1/ask", "/v1/feedback"} <= endpoints, f"the README shows no request body for {sorted({'/v1/ask', '/v1/feedback'} - endpoints)}"
    for endpoint, body in bodies:
        model = BODY_MODELS.get(endpoint)
        assert model is not None, f"a request body for {endpoint}, which takes none: {body}"
        model.model_validate_json(body)  # raises with what is wrong


def test_python_examples_compile() -> None:
    blocks = fenced("python")
    assert blocks, "the README has no Python example (the OpenAI client)"
    for block in blocks:
        compile(block, "README.md", "exec")


def table_commands() -> list[tuple[str, ...]]:
    """The subcommands the README's command table names, e.g. ("corpus", "build")."""
    section = TEXT.split("## What runs today", 1)[1].split("\n## ", 1)[0]
    commands = []
    for row in section.splitlines():
        if not row.startswith("| `soay"):
            continue
        for usage in re.findall(r"`(soay [^`]*)`", row.split(" | ", 1)[0]):
            words = []
            for word in usage.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                words.append(word)
            commands.append(tuple(words))
    return commands


HELP_SCRIPT = """
import json, sys
import typer
from typer.testing import CliRunner
from cli.main import app

def walk(command, path=()):
    if hasattr(command, "commands"):  # a group (typer vendors its own click)
        for name, sub in command.commands.items():
            yield from walk(sub, (*path, name))
    else:
        yield path

runner = CliRunner()
results = {" ".join(c): runner.invoke(app, [*c, "--help"]) for c in map(tuple, json.loads(sys.argv[1]))}
print(json.dumps({
    "help": {c: [r.exit_code, r.output[-2000:]] for c, r in results.items()},
    "commands": [" ".join(p) for p in walk(typer.main.get_command(app))],
}))
"""


@pytest.fixture(scope="module")
def cli_help() -> dict[str, Any]:
    """`--help` of every command of the table, in one process of the CLI."""
    commands = table_commands()
    done = subprocess.run([sys.executable, "-c", HELP_SCRIPT, json.dumps(commands)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_command_of_the_table_has_help(cli_help: dict[str, Any]) -> None:
    commands = table_commands()
    assert len(commands) >= 15 and ("demo",) in commands and ("corpus", "build") in commands
    failed = {c: out for c, (code, out) in cli_help["help"].items() if code != 0}
    assert not failed, f"`soay <cmd> --help` failed: {failed}"


def test_every_command_of_the_cli_is_in_the_table(cli_help: dict[str, Any]) -> None:
    listed = {" ".join(c) for c in table_commands()}
    assert set(cli_help["commands"]) - listed == set(), "commands missing from the README's command table"


def anchors() -> set[str]:
    """GitHub's anchors of the README's headings."""
    slugs = set()
    for heading in re.findall(r"^#{1,6} (.+)$", re.sub(r"^```.*?^```", "", TEXT, flags=re.S | re.M), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        slugs.add(slug)
    return slugs


def test_every_relative_link_leads_to_a_file() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", TEXT)
    assert links
    dead = []
    for target in links:
        if re.match(r"[a-z][a-z+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in anchors():
                dead.append(target)
        elif not (README.parent / path).exists():
            dead.append(target)
    assert not dead, f"README links to what is not there: {dead}"


def test_every_named_repository_file_exists() -> None:
    """Paths into the repository's folders and report names (REPORT-x.md...)."""
    missing = []
    pattern = rf"(?<![\w/.<-])((?:{'|'.join(SOURCE_DIRS)})/[\w./-]*)"
    for match in re.finditer(pattern, TEXT):
        path = match.group(1).rstrip(".,;:")
        if not (ROOT / path).exists():
            missing.append(path)
    for name in re.findall(r"(?<![\w/.-])([A-Z][A-Z0-9]*(?:-[\w-]+)?\.md)\b", TEXT):
        if not ((ROOT / name).exists() or (ROOT / "benchmarks" / name).exists()):
            missing.append(name)
    assert "seeds/" not in TEXT, "the README cites seeds/, which is not in the repository"
    assert not missing, f"README names files that are not in the repository: {missing}"


def test_no_tracked_file_cites_papers_or_notes_outside_the_repository() -> None:
    """Docstrings and configs cite the papers by name (README, References), not the paths of a
    folder a newcomer does not have."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    outside = re.compile(r"seeds/0\d\d|\b(?:DESIGN|ENVIRONMENT|STYLE)\.md\b")
    citing = [path for path in tracked if path != "tests/test_readme.py" and (ROOT / path).is_file()
              and (ROOT / path).suffix in (".py", ".md", ".yaml", ".yml", ".toml", ".json", ".html", ".js", ".txt")
              and outside.search((ROOT / path).read_text(errors="replace"))]
    assert not citing, f"files citing what is not in the repository: {citing}"
