"""The `soay` command: help, settings precedence, and a clear error for every bad input."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _restore_config_env():
    """`--config` exports SOAY_CONFIG for the process; keep it from leaking into other tests."""
    yield
    os.environ.pop("SOAY_CONFIG", None)


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env)


def test_help_lists_the_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("demo", "generate", "corpus", "api", "solutions", "config", "train", "eval", "keys"):
        assert command in result.output


def test_settings_come_from_file_then_environment(tmp_path):
    config = tmp_path / "soay.yaml"
    config.write_text("data:\n  corpus_size: 5000\n  seed: 3\nray:\n  workers: 4\n")
    result = invoke("--config", str(config), "config", env={"SOAY_DATA__SEED": "9"})
    assert result.exit_code == 0, result.output
    settings = json.loads(result.output)
    assert settings["data"]["corpus_size"] == 5000  # from the file
    assert settings["data"]["seed"] == 9  # the environment wins over the file
    assert settings["ray"]["workers"] == 4


def test_solutions_lists_the_library():
    result = invoke("solutions")
    assert result.exit_code == 0
    assert "15 solutions, 52 combinations" in result.output
    as_json = json.loads(invoke("solutions", "--json").output)
    assert len(as_json["solutions"]) == 15 and as_json["heads"] == ["searchPerson", "searchPublication"]


@pytest.mark.parametrize(
    "args, env, fragment",
    [
        (["frobnicate"], None, "No such command"),
        (["generate", "--workers", "0"], None, "Invalid value"),
        (["generate", "--domain", "astrology"], None, "unknown domain"),
        (["generate", "--format", "xml"], None, "invalid settings"),
        (["--config", "/no/such/file.yaml", "config"], None, "does not exist"),
        (["config"], {"SOAY_DATA__CORPUS_SIZE": "lots"}, "invalid settings"),
        (["config"], {"SOAY_RAY__WORKERS": "-1"}, "invalid settings"),
        (["corpus", "build", "--size", "5"], None, "Invalid value"),
        (["api", "serve", "--db", "/no/such.sqlite"], None, "does not exist"),
        (["api", "serve", "--port", "70000"], None, "Invalid value"),
        (["solutions", "--domain", "astrology"], None, "unknown domain"),
        (["train", "-f", "/no/such/recipe.yaml"], None, "does not exist"),
        (["train", "not-a-key-value"], None, "is not key=value"),
        (["train", "no_such_setting=1"], None, "Extra inputs"),
        (["eval", "/no/such/model"], None, "not a trained model directory"),
    ],
)
def test_bad_input_gets_a_message_and_non_zero_exit(args, env, fragment):
    result = invoke(*args, env=env)
    assert result.exit_code != 0
    assert fragment in result.output
    assert "Traceback" not in result.output


def test_bad_settings_file_is_reported(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("data:\n  no_such_key: 1\n")
    result = invoke("--config", str(config), "config")
    assert result.exit_code == 2 and "invalid settings" in result.output


def test_keys_add_prints_the_key_once_and_stores_only_its_digest(tmp_path):
    from serving.keys import KeyRing, digest, read_keys

    env = {"SOAY_DATA__ROOT": str(tmp_path)}
    added = invoke("keys", "add", "team-a", "--rate", "2", "--burst", "5", env=env)
    assert added.exit_code == 0, added.output
    key = added.stdout.strip().splitlines()[0]
    stored = (tmp_path / "api_keys.yaml").read_text()
    assert key.startswith("soay-") and key not in stored and digest(key) in stored
    assert (tmp_path / "api_keys.yaml").stat().st_mode & 0o077 == 0  # readable by its owner only
    ring = KeyRing(read_keys(tmp_path / "api_keys.yaml"), rate_per_s=100, burst=100)
    entry = ring.identify(key)
    assert entry is not None and entry.name == "team-a" and ring.identify(key + "x") is None
    assert [ring.wait_s(entry) for _ in range(5)] == [0.0] * 5 and ring.wait_s(entry) > 0  # its own burst, then a wait
    listed = invoke("keys", "list", env=env)
    assert "team-a  2 requests/s, burst 5" in listed.stdout
    again = invoke("keys", "add", "team-a", env=env)  # a name added again gets a new key; the old one stops working
    assert len(read_keys(tmp_path / "api_keys.yaml")) == 1 and KeyRing(read_keys(tmp_path / "api_keys.yaml"), 1, 1).identify(key) is None
    assert again.exit_code == 0
