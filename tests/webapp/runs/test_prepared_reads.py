"""webapp/prepared.py on PostgreSQL: the run detail's hot read prepares its statement once per
connection, answers what the uncached path answers, and recovers when the server drops it.

The read goes through the route (Django's test client keeps the test's one connection), so
`pg_prepared_statements`, which PostgreSQL keeps per connection, shows what this connection holds.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from webapp import prepared
from webapp.runs import detail
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def held() -> list[str]:
    """The statements this connection has prepared under prepared.py's names."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'netloom_%%'")
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def finished(user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any) -> Run:
    if connection.vendor != "postgresql":
        pytest.skip("PREPARE is PostgreSQL's (the PostgreSQL pass runs this)")
    detail._documents.clear()
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    return run


def test_the_hot_read_is_prepared_once_and_answers_as_the_uncached_path(api_a, api_b, finished):
    url = f"/api/runs/{finished.pk}/"
    prepared._prepared.clear()
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    first = api_a.get(url)  # the uncached path keeps the document
    kept = [api_a.get(url) for _ in range(3)]
    fresh = api_a.get(f"{url}?team={finished.team_id}")
    assert first.status_code == fresh.status_code == 200
    assert all(answer.status_code == 200 and answer.json() == fresh.json() for answer in kept)
    statements = held()
    assert any("token_hash" in statement and "$2" in statement for statement in statements), statements
    assert len(statements) == len(set(statements)), "each statement prepared once on the connection"
    assert api_b.get(url).status_code == 404, "another team's member, through the same prepared statement"

    # The server dropped them (a DISCARD ALL): prepared again on the next read, same answer. (The
    # token's read of the run is kept: the next read asks only the run's version, detail.py.)
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    again = api_a.get(url)
    assert again.status_code == 200 and again.json() == fresh.json()
    assert any("xmin" in statement for statement in held())
    detail._token_reads.clear()
    assert api_a.get(url).json() == fresh.json()
    assert any("token_hash" in statement for statement in held())

    # The server holds them but this process does not know it (a pooler's server connection that
    # another client prepared them on): used as they are.
    prepared._prepared.clear()
    assert api_a.get(url).json() == fresh.json()


def test_prepared_reads_off_prepare_nothing(api_a, finished, settings):
    settings.NETLOOM_PREPARED_READS = False
    prepared._prepared.clear()
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    url = f"/api/runs/{finished.pk}/"
    answers = [api_a.get(url) for _ in range(3)]
    assert all(answer.status_code == 200 for answer in answers)
    assert answers[1].json() == answers[0].json()
    assert held() == []


def test_inside_a_transaction_the_statement_is_run_as_it_is(api_a, finished):
    from django.db import transaction

    prepared._prepared.clear()
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    with transaction.atomic():
        assert api_a.get(f"/api/runs/{finished.pk}/").status_code == 200
        assert held() == []
