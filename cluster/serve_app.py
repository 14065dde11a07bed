"""Ray Serve config entrypoint of the question-answering application.

A Serve config file (KubeRay's RayService `serveConfigV2`, `serve deploy`, `serve run`) names an
application by import path; this builder makes it from the settings, as `soay serve` does:

    applications:
      - name: soay
        route_prefix: /
        import_path: cluster.serve_app:build
        args: {serve: {accelerator: gpu, model_dir: /models/soay}}

`args` are settings overrides by section, laid over the environment (`SOAY_*`) and the settings
file, so one image serves any model on any hardware by configuration alone.
"""

from __future__ import annotations

from typing import Any

from ray.serve.deployment import Application

from serving.app import build_app
from soay.settings import Settings


def build(args: dict[str, Any]) -> Application:
    return build_app(Settings(**args))
