"""The health view of the stages (serving/health.py `StatusView`, read by the app's /healthz and by
the `soay serve` health port) when the controller cannot be asked: the last view stands for a
while, then the failure is reported. The controller call is the part that fails under a burst on a
loaded node (a test once saw one probe of many answer 503 while every stage ran), so this is what a
liveness probe meets."""

from __future__ import annotations

import time

import pytest

from serving.health import STALE_S, StatusView, health_body

ALL_OK = {stage: "ok" for stage in ("retrieve", "plan", "code", "execute", "answer")}


def view_with(checked: float, stages: dict[str, str], fetch) -> StatusView:
    view = StatusView(fetch)
    view.checked, view.stages = checked, stages
    return view


def controller_down() -> dict[str, str]:
    raise TimeoutError("GetServeStatus timed out")


def test_a_failed_refresh_keeps_the_last_good_view_while_it_is_recent() -> None:
    checked = time.monotonic() - 1.5
    view = view_with(checked, ALL_OK, controller_down)
    assert view.refresh() == ALL_OK
    assert (view.checked, view.stages) == (checked, ALL_OK)  # its age is kept: it runs out


@pytest.mark.parametrize("checked, stages", [
    (time.monotonic() - STALE_S - 1.0, ALL_OK),  # too old to stand
    (0.0, {}),  # no view yet: the first probe
    (time.monotonic(), {"controller": "TimeoutError: earlier"}),  # the last view was itself a failure
])
def test_without_a_recent_good_view_the_failure_is_the_answer(checked, stages) -> None:
    view = view_with(checked, stages, controller_down)
    assert view.refresh() == {"controller": "TimeoutError: GetServeStatus timed out"}
    assert view.stages == {"controller": "TimeoutError: GetServeStatus timed out"}
    assert health_body(view.stages, "soay")[0] == 503


def test_a_stage_without_replicas_is_reported_at_once() -> None:
    down = {**ALL_OK, "execute": "UNHEALTHY: no running replica"}
    view = view_with(time.monotonic() - 1.5, ALL_OK, lambda: down)
    assert view.refresh() == down and view.stages == down
    assert health_body(down, "soay") == (503, {"status": "unavailable", "model": "soay", "stages": down})
    assert health_body(ALL_OK, "soay")[0] == 200
