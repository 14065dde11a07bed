"""Reading a training recipe (configs/heads.yaml, configs/sft/*.yaml): its YAML with `key=value`
overrides laid on top, before the recipe's own model (training/fit_heads.py HeadsConfig,
training/sft.py SFTConfig) validates it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_recipe(path: str | Path | None = None, overrides: list[str] | None = None) -> dict[str, Any]:
    """A recipe's YAML as a dict with `key=value` / `a.b=value` overrides laid on top (any recipe kind)."""
    raw: dict[str, Any] = yaml.safe_load(Path(path).read_text()) if path else {}
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r} is not key=value")
        node = raw
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value)
    return raw
