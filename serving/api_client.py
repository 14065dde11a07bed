"""The APIs of a running HTTP clone (or the live service it imitates) as plain callables.

The sandbox builds this inside its own process when `sandbox.api_backend` is `http`, so
generated code calls `searchPerson(...)` the same way whichever backend answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from soay.environment.base import ApiCallError, positional_functions
from soay.spec import ApiSpec, load_spec


class RemoteApis:
    def __init__(self, base_url: str, spec: ApiSpec, timeout: float = 10.0) -> None:
        self.spec = spec
        self.base_url = base_url.rstrip("/")
        self.client = httpx.Client(base_url=self.base_url, timeout=timeout)

    def call(self, api: str, **kwargs: Any) -> Any:
        if api not in self.spec.by_name:
            raise ApiCallError(f"no API named {api!r}")
        try:
            response = self.client.post(f"/api/{api}", json=kwargs)
        except httpx.HTTPError as e:
            raise ApiCallError(f"{api}: API server at {self.base_url} unreachable ({e})") from e
        if response.status_code != 200:
            try:
                message = response.json().get("error", response.text)
            except ValueError:
                message = response.text
            raise ApiCallError(f"{api}: {message} (HTTP {response.status_code})")
        return response.json()

    def api_functions(self) -> dict[str, Callable[..., Any]]:
        return positional_functions(self.spec, self.call)

    def close(self) -> None:
        self.client.close()


def open_remote_environment(base_url: str, domain: str) -> RemoteApis:
    return RemoteApis(base_url, load_spec(domain))
