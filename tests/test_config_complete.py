"""configs/default.yaml is the documented list of settings: every field of Settings (every nested
section) is in it with its default and a comment, and the file loads into Settings unchanged."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter

from soay.settings import CONFIG_ENV, Settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_YAML = ROOT / "configs" / "default.yaml"


def settings_fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(dotted key, default as JSON) of every leaf field, recursing into nested settings models."""
    for name, field in model.model_fields.items():
        key = (*prefix, name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from settings_fields(annotation, key)
        else:
            default = field.get_default(call_default_factory=True)
            yield key, TypeAdapter(annotation).dump_python(default, mode="json")


def lookup(tree: Any, key: tuple[str, ...]) -> Any:
    for part in key:
        if not isinstance(tree, dict) or part not in tree:
            raise KeyError(".".join(key))
        tree = tree[part]
    return tree


@pytest.fixture(scope="module")
def documented() -> dict[str, Any]:
    return yaml.safe_load(DEFAULT_YAML.read_text(encoding="utf-8"))


def test_every_setting_is_documented_with_its_default(documented: dict[str, Any]) -> None:
    fields = list(settings_fields(Settings))
    assert len(fields) > 100  # the walk reached the nested sections
    missing, wrong = [], []
    for key, default in fields:
        try:
            value = lookup(documented, key)
        except KeyError:
            missing.append(".".join(key))
            continue
        if value != default or type(value) is not type(default):
            wrong.append(f"{'.'.join(key)}: file {value!r}, default {default!r}")
    assert not missing, f"settings missing from {DEFAULT_YAML.name}: {missing}"
    assert not wrong, f"values in {DEFAULT_YAML.name} that are not the defaults: {wrong}"


def test_no_key_beyond_the_settings(documented: dict[str, Any]) -> None:
    known = {".".join(key) for key, _ in settings_fields(Settings)}
    sections = {k.rsplit(".", i)[0] for k in known for i in range(1, k.count(".") + 1)}

    def leaves(tree: dict[str, Any], prefix: str = "") -> Iterator[str]:
        for k, v in tree.items():
            dotted = f"{prefix}{k}"
            if isinstance(v, dict) and dotted in sections:
                yield from leaves(v, dotted + ".")
            else:
                yield dotted

    assert set(leaves(documented)) - known == set()


def test_every_key_has_a_comment() -> None:
    uncommented = [line for line in DEFAULT_YAML.read_text(encoding="utf-8").splitlines()
                   if re.match(r"\s*[a-z_]+:", line) and "#" not in line]
    assert not uncommented, f"keys without a one-line comment: {uncommented}"


def test_the_file_loads_into_settings_as_the_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("SOAY_") or name == "RAY_ADDRESS":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no promoted model under ./data changes serve.model_dir
    defaults = Settings().model_dump(mode="json")
    monkeypatch.setenv(CONFIG_ENV, str(DEFAULT_YAML))
    assert Settings().model_dump(mode="json") == defaults
