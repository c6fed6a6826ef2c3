"""A run that gets every test sample right says why its reliability chart has no curve, and a sweep
over a log-scale learning rate draws that axis in log scale."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .journey import make_journey
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api

pytestmark = pytest.mark.e2e


def test_reliability_says_why_it_is_empty_and_the_sweep_lr_axis_is_log(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "judging-frictions")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    journey = make_journey(api)
    run = journey.runs[1]
    assert api.get(f"/api/runs/{run}/evaluation/")["accuracy"] == 1.0

    page.goto(f"{netloom_server.url}/app/runs/{run}")
    chart = page.locator(tid("curve-reliability"))
    chart.scroll_into_view_if_needed()
    expect(chart).to_be_visible()
    explain = page.locator(tid("curve-reliability-explain"))
    expect(explain).to_contain_text("test samples fall in one confidence bin")
    expect(explain).to_contain_text("right 100% of the time")
    expect(chart.locator("circle")).to_have_count(1)  # the one bin, drawn as a dot
    steps.shot("reliability-explained")

    page.goto(f"{netloom_server.url}/app/sweeps/{journey.sweep}")
    scatter = page.locator(tid("scatter-optimizer.lr"))
    expect(scatter).to_contain_text("optimizer.lr (log)")
    ticks = [t.text_content() for t in scatter.locator("text.tick").all()]
    assert {"0.001", "0.01"} <= set(ticks), ticks  # powers of ten: a log axis
    scatter.scroll_into_view_if_needed()
    steps.shot("sweep-lr-log-axis")
