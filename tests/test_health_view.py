"""/healthz's view of the stages (serving/app.py `Ingress.readiness`) when the controller cannot be
asked: the last view stands for a while, then the failure is reported. The controller call is the
part that fails under a burst on a loaded node (a test once saw one probe of many answer 503 while
every stage ran), so this is what a liveness probe meets."""

from __future__ import annotations

import asyncio
import time

import pytest

from serving.app import HEALTH_CACHE_S, HEALTH_STALE_S, Ingress

ALL_OK = {stage: "ok" for stage in ("retrieve", "plan", "code", "execute", "answer")}


def ingress_with(view: tuple[float, dict[str, str]], fetch) -> object:
    """An ingress object with only what readiness reads: its last view and the controller call."""
    ingress = object.__new__(Ingress.func_or_class)
    ingress._status, ingress._refreshing = view, None
    ingress._stage_states = fetch
    return ingress


def controller_down() -> dict[str, str]:
    raise TimeoutError("GetServeStatus timed out")


def test_a_failed_refresh_keeps_the_last_good_view_while_it_is_recent() -> None:
    checked = time.monotonic() - HEALTH_CACHE_S - 0.5
    ingress = ingress_with((checked, ALL_OK), controller_down)
    assert asyncio.run(ingress._refresh_status()) == ALL_OK
    assert ingress._status == (checked, ALL_OK) and ingress._refreshing is None  # its age is kept: it runs out


@pytest.mark.parametrize("view", [
    (time.monotonic() - HEALTH_STALE_S - 1.0, ALL_OK),  # too old to stand
    (0.0, {}),  # no view yet: the first probe
    (time.monotonic(), {"controller": "TimeoutError: earlier"}),  # the last view was itself a failure
])
def test_without_a_recent_good_view_the_failure_is_the_answer(view) -> None:
    ingress = ingress_with(view, controller_down)
    stages = asyncio.run(ingress._refresh_status())
    assert stages == {"controller": "TimeoutError: GetServeStatus timed out"}
    assert ingress._status[1] == stages


def test_a_stage_without_replicas_is_reported_at_once() -> None:
    down = {**ALL_OK, "execute": "UNHEALTHY: no running replica"}
    ingress = ingress_with((time.monotonic() - HEALTH_CACHE_S - 0.5, ALL_OK), lambda: down)
    assert asyncio.run(ingress._refresh_status()) == down and ingress._status[1] == down
