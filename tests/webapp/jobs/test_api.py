"""GET /api/jobs/<id>/ and GET /api/jobs/: a team's jobs, to its members only; filters by kind,
state and team. (tests/webapp/test_isolation.py checks both routes for every outsider too.)"""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs.models import Job, JobState

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(team_a: Any, team_b: Any, user_a: Any) -> dict[str, Job]:
    def make(team: Any, kind: str = "datasets.process", **fields: Any) -> Job:
        return Job.objects.create(kind=kind, team=team, owner=user_a if team == team_a else None, **fields)

    return {
        "done": make(team_a, subject_id=11, state=JobState.DONE, progress=1.0, attempts=1,
                     result={"dataset": 11, "status": "ready"}),
        "failed": make(team_a, subject_id=12, state=JobState.FAILED, attempts=1,
                       error={"message": "row 8, column sepal_width: not a number", "code": "invalid_dataset",
                              "row": 8, "column": "sepal_width"}),
        "other_kind": make(team_a, kind="tests.other", state=JobState.QUEUED),
        "team_b": make(team_b, state=JobState.QUEUED),
    }  # fmt: skip


def test_a_member_reads_a_job(api_a: Any, api_viewer_a: Any, jobs: dict[str, Job], user_a: Any) -> None:
    answer = api_viewer_a.get(f"/api/jobs/{jobs['failed'].pk}/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert set(body) == {
        "id", "kind", "team", "owner", "subject_id", "state", "progress", "attempts", "max_attempts",
        "result", "error", "created_at", "started_at", "finished_at", "expires_at",
    }  # fmt: skip
    assert body["state"] == "failed" and body["kind"] == "datasets.process" and body["subject_id"] == 12
    assert body["error"]["row"] == 8 and body["error"]["code"] == "invalid_dataset"
    assert body["owner"] == {"id": user_a.id, "username": user_a.username}
    done = api_a.get(f"/api/jobs/{jobs['done'].pk}/").json()
    assert done["result"] == {"dataset": 11, "status": "ready"} and done["progress"] == 1.0


def test_another_teams_job_is_a_404_and_never_listed(api_a: Any, api_b: Any, jobs: dict[str, Job]) -> None:
    assert api_a.get(f"/api/jobs/{jobs['team_b'].pk}/").status_code == 404
    assert api_b.get(f"/api/jobs/{jobs['done'].pk}/").status_code == 404
    assert [j["id"] for j in api_b.get("/api/jobs/").json()["results"]] == [jobs["team_b"].pk]


def test_the_list_filters_by_kind_state_and_team(api_a: Any, jobs: dict[str, Job], team_a: Any, team_b: Any) -> None:
    def ids(query: str) -> list[int]:
        answer = api_a.get(f"/api/jobs/{query}")
        assert answer.status_code == 200, answer.content
        return sorted(j["id"] for j in answer.json()["results"])

    mine = sorted(jobs[k].pk for k in ("done", "failed", "other_kind"))
    assert ids("") == mine
    assert ids(f"?team={team_a.id}") == mine and ids(f"?team={team_b.id}") == []
    assert ids("?kind=datasets.process") == sorted([jobs["done"].pk, jobs["failed"].pk])
    assert ids("?state=done,failed") == sorted([jobs["done"].pk, jobs["failed"].pk])
    assert ids("?kind=tests.other&state=queued") == [jobs["other_kind"].pk]
    bad = api_a.get("/api/jobs/?state=finished")
    assert bad.status_code == 400 and "state" in bad.json()["error"]["fields"]


def test_anonymous_callers_are_refused(anon: Any, jobs: dict[str, Job]) -> None:
    assert anon.get("/api/jobs/").status_code == 401
    assert anon.get(f"/api/jobs/{jobs['done'].pk}/").status_code == 401
